# Two commands do all set-up: `make demo` and `make test`. Each creates .venv if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_TEST := $(VENV)/.installed-test
STAMP_DEMO := $(VENV)/.installed-demo

.PHONY: demo test lint js-deps test-e2e test-compat test-compat-oldest test-compat-newest ci-venvs bench clean

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

# The tool-choice benchmarks and the multi-turn corpus's test join the shared BFCL cases to BFCL's own
# data (tool schemas, reference arguments, class APIs), which the bfcl-eval package ships; only its data
# is read, so its dependencies are skipped. Defined before `test`, whose prerequisites expand at once.
BFCL_EVAL_REQUIREMENT := bfcl-eval==2026.3.23
STAMP_BFCL := $(VENV)/.installed-bfcl-eval

test: lint $(STAMP_JS) $(STAMP_BFCL)
	$(BIN)/pytest -q -m "not e2e"

# End-to-end tests against real backends started on 127.0.0.1 by the tests: Arize Phoenix (traces) and
# Prometheus (the dashboard's metrics). Phoenix lives in its own venv: its dependencies would move pins of
# the test venv (it requires openai 3).
E2E_VENV := .venv-e2e
PHOENIX_REQUIREMENT := arize-phoenix==20.26.1
STAMP_E2E := $(E2E_VENV)/.installed-phoenix

$(STAMP_E2E): Makefile
	$(PYTHON) -m venv $(E2E_VENV)
	$(E2E_VENV)/bin/pip install --quiet --upgrade pip
	$(E2E_VENV)/bin/pip install --quiet '$(PHOENIX_REQUIREMENT)'
	touch $@

# The Grafana dashboard's queries run against a real Prometheus: Debian's package, started by the test on
# 127.0.0.1 with its own configuration and data directory (the package's own service is not used).
PROMETHEUS := /usr/bin/prometheus

$(PROMETHEUS):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus

test-e2e: $(STAMP_TEST) $(STAMP_E2E) $(PROMETHEUS)
	SHAPECHECK_PHOENIX=$(abspath $(E2E_VENV))/bin/phoenix SHAPECHECK_PROMETHEUS=$(PROMETHEUS) \
		$(BIN)/pytest -q -m e2e

# The ends of the supported range (README, "Supported versions"), each in a venv of its own: the oldest
# OpenTelemetry release (compat/oldest.txt) on Python 3.10, the newest on Python 3.13. Each runs the
# processor, readers, export, every check (figures, tool choice, conformance) and gateway tests; the
# framework matrix stays in `make test`.
COMPAT_TESTS := tests/pipeline tests/otlp tests/readers tests/checks tests/analyst \
	tests/cli/test_check_field_shapes.py tests/cli/test_ci_reports.py \
	tests/gateway/test_forwarding.py tests/gateway/test_passthrough.py tests/gateway/test_fidelity.py \
	tests/gateway/test_validation.py
COMPAT_OLDEST := .venv-compat-oldest
COMPAT_NEWEST := .venv-compat-newest

$(COMPAT_OLDEST)/.installed: pyproject.toml compat/oldest.txt compat/test-tools.txt compat/span-producers.txt
	rm -rf $(COMPAT_OLDEST)
	"$$(compat/python 3.10)" -m venv $(COMPAT_OLDEST)
	$(COMPAT_OLDEST)/bin/pip install --quiet --upgrade pip
	$(COMPAT_OLDEST)/bin/pip install --quiet -c compat/oldest.txt -e . -r compat/test-tools.txt
	$(COMPAT_OLDEST)/bin/pip install --quiet --no-deps -r compat/span-producers.txt
	$(COMPAT_OLDEST)/bin/python -c "import opentelemetry.sdk.version as v; assert v.__version__ == '$$(sed -n 's/^opentelemetry-sdk==//p' compat/oldest.txt)', v.__version__"
	touch $@

$(COMPAT_NEWEST)/.installed: pyproject.toml
	rm -rf $(COMPAT_NEWEST)
	"$$(compat/python 3.13)" -m venv $(COMPAT_NEWEST)
	$(COMPAT_NEWEST)/bin/pip install --quiet --upgrade pip
	$(COMPAT_NEWEST)/bin/pip install --quiet --upgrade -e '.[test]'
	touch $@

# The two ends are independent: `make -j2 test-compat` runs them side by side (what .ci/run does).
test-compat: test-compat-oldest test-compat-newest

# Every environment CI needs beside the test venv, so it can build them while `make test` runs.
ci-venvs: $(COMPAT_OLDEST)/.installed $(COMPAT_NEWEST)/.installed $(STAMP_E2E)

test-compat-oldest: $(COMPAT_OLDEST)/.installed
	$(COMPAT_OLDEST)/bin/python -c "import sys, opentelemetry.sdk.version as v; print('oldest end: Python', sys.version.split()[0], 'OpenTelemetry', v.__version__)"
	$(COMPAT_OLDEST)/bin/pytest -q -m "not e2e" $(COMPAT_TESTS)

test-compat-newest: $(COMPAT_NEWEST)/.installed
	$(COMPAT_NEWEST)/bin/python -c "import sys, opentelemetry.sdk.version as v; print('newest end: Python', sys.version.split()[0], 'OpenTelemetry', v.__version__)"
	$(COMPAT_NEWEST)/bin/pytest -q -m "not e2e" $(COMPAT_TESTS)


$(STAMP_BFCL): Makefile | $(STAMP_TEST)
	$(BIN)/pip install --quiet --no-deps '$(BFCL_EVAL_REQUIREMENT)'
	touch $@

bench: $(STAMP_TEST) $(STAMP_BFCL)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(E2E_VENV) $(COMPAT_OLDEST) $(COMPAT_NEWEST) $(JS_DIR)/node_modules build *.egg-info
