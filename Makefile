# Two commands do all set-up: `make demo` and `make test`. Each creates .venv if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_TEST := $(VENV)/.installed-test
STAMP_DEMO := $(VENV)/.installed-demo

.PHONY: demo test lint js-deps test-e2e bench clean

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

# The JavaScript rows of the framework matrix (tests/frameworks/test_js_matrix.py) run real Node agents
# with the packages pinned in tests/js/package-lock.json, installed there by npm ci (Node 20+ and npm).
JS_DIR := tests/js
STAMP_JS := $(JS_DIR)/node_modules/.installed

$(STAMP_JS): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	npm ci --prefix $(JS_DIR) --no-audit --no-fund --loglevel=error
	touch $@

js-deps: $(STAMP_JS)

test: lint $(STAMP_JS)
	$(BIN)/pytest -q -m "not e2e"

# End-to-end tests against a real trace backend (Arize Phoenix, started on 127.0.0.1 by the tests). Phoenix
# lives in its own venv: its dependencies would move pins of the test venv (it requires openai 3).
E2E_VENV := .venv-e2e
PHOENIX_REQUIREMENT := arize-phoenix==20.26.1
STAMP_E2E := $(E2E_VENV)/.installed-phoenix

$(STAMP_E2E): Makefile
	$(PYTHON) -m venv $(E2E_VENV)
	$(E2E_VENV)/bin/pip install --quiet --upgrade pip
	$(E2E_VENV)/bin/pip install --quiet '$(PHOENIX_REQUIREMENT)'
	touch $@

test-e2e: $(STAMP_TEST) $(STAMP_E2E)
	SHAPECHECK_PHOENIX=$(abspath $(E2E_VENV))/bin/phoenix $(BIN)/pytest -q -m e2e

# The tool-choice benchmarks join the shared BFCL cases to BFCL's own data (tool schemas, reference
# arguments), which the bfcl-eval package ships; only its data is read, so its dependencies are skipped.
BFCL_EVAL_REQUIREMENT := bfcl-eval==2026.3.23
STAMP_BFCL := $(VENV)/.installed-bfcl-eval

$(STAMP_BFCL): Makefile | $(STAMP_TEST)
	$(BIN)/pip install --quiet --no-deps '$(BFCL_EVAL_REQUIREMENT)'
	touch $@

bench: $(STAMP_TEST) $(STAMP_BFCL)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(E2E_VENV) $(JS_DIR)/node_modules build *.egg-info
