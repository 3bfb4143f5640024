# Two commands do all set-up: `make demo` and `make test`. Each creates .venv if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_TEST := $(VENV)/.installed-test
STAMP_DEMO := $(VENV)/.installed-demo

.PHONY: demo test lint test-e2e bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[demo]'
	touch $@

demo: $(STAMP_DEMO)
	$(BIN)/otel-shapecheck demo

lint: $(STAMP_TEST)
	$(BIN)/ruff check otel_shapecheck tests benchmarks
	$(BIN)/ruff format --check otel_shapecheck tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

bench: $(STAMP_TEST)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
