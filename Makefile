# The two commands of the README:
#   make demo   install the daemon into .venv, start it, attach a Python tool,
#               interrupt it, print the measured latency, stop the daemon
#   make test   install everything the tests need, then run every check and test
# Also: make serve (run the daemon in the foreground), make protos (regenerate).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
BUF    := tools/node_modules/.bin/buf

.PHONY: demo serve test install install-test protos check-protos lint typecheck clients pytest clean ensure-system-tools ensure-prometheus

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstalled when a package definition changes.
$(VENV)/.installed: $(BIN)/python pyproject.toml clients/python/pyproject.toml
	$(PIP) install -e ./clients/python -e .
	touch $@

# The test extras, plus the benchmark's (matplotlib: mypy checks bench/, and the smoke runs it).
$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e './clients/python' -e '.[test,bench]'
	touch $@

$(BUF): tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test $(BUF)
install-test: build/tools/.helm-version

# Helm for the chart tests (tests/helm), built once from the Go module proxy.
build/tools/.helm-version: scripts/ensure_helm.sh
	bash scripts/ensure_helm.sh

# gcc, unshare/nsenter/mount and script for the tests that drive them (a skip is a failure in CI).
install-test: ensure-system-tools
ensure-system-tools:
	sh scripts/ensure_system_tools.sh

# Prometheus and promtool (Debian's package) for tests/observability; a no-op once installed.
install-test: ensure-prometheus
ensure-prometheus:
	sh scripts/ensure_prometheus.sh

demo: install
	$(BIN)/interrupt-sidecar demo

serve: install
	$(BIN)/interrupt-sidecar serve

protos: install-test
	$(BIN)/python scripts/gen_protos.py

check-protos: install-test
	$(BIN)/python scripts/gen_protos.py --check
	$(BUF) lint
	$(BUF) format --diff --exit-code

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install-test
	$(BIN)/mypy

# Go, TypeScript, Java and Rust clients and their conformance drivers, each by its own
# toolchain; a missing toolchain is reported as skipped (an error in CI).
clients: install-test
	$(BIN)/python scripts/build_clients.py --check

# Everything, slow tests included (a bare `pytest` skips those marked slow).
PYTEST_ARGS ?= -m "slow or not slow"

pytest: install-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: check-protos lint typecheck clients pytest

clean:
	rm -rf $(VENV) tools/node_modules .mypy_cache .pytest_cache .ruff_cache
