# The two commands of the README:
#   make demo   install the daemon into .venv, start it, attach a Python tool,
#               interrupt it, print the measured latency, stop the daemon
#   make test   install everything the tests need, then run every check and test
# Also: make serve (run the daemon in the foreground), make protos (regenerate),
# make docs (regenerate docs/configuration.md from the settings and exit-code tables),
# make version-check (every manifest carries the version of sidecar/interrupt_sidecar/__init__.py),
# make identity-check (every manifest, doc and chart default names the identity of identity.toml),
# make test-cold (CI's command as a fresh machine runs it: a fresh clone, empty caches),
# make release VERSION=X.Y.Z (every artifact of that version into dist/, with SHA256SUMS).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
BUF    := tools/node_modules/.bin/buf

.PHONY: demo serve test install install-test native mcp-test-deps crewai-test-deps protos check-protos docs check-docs version-check identity-check lint typecheck clients pytest clean image e2e-kubernetes ensure-system-tools ensure-prometheus ensure-podman test-cold

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstalled when a package definition changes.
$(VENV)/.installed: $(BIN)/python pyproject.toml clients/python/pyproject.toml
	$(PIP) install -e ./clients/python -e .
	touch $@

# The test extras, plus the benchmark's (matplotlib: mypy checks bench/, and the smoke runs it)
# and the release's (tests/release runs scripts/release.py).
$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e './clients/python' -e '.[test,bench,release]'
	touch $@

$(BUF): tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed native
install-test: $(VENV)/.installed-test $(BUF) native

# The native command line beside the interpreter, where the venv's `interrupt-sidecar` finds
# it and hands it run, begin, interrupt, end and status (docs/cli.md). Rebuilt every time
# (the go command's caches make an unchanged tree a no-op); without go it is skipped, said
# plainly, and `interrupt-sidecar` runs every subcommand in Python, only slower.
native: $(VENV)/.installed
	@if command -v go >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory -C clients/go native >/dev/null && \
		install -m 0755 build/native/interrupt-sidecar $(BIN)/interrupt-sidecar-native; \
	else \
		rm -f $(BIN)/interrupt-sidecar-native; \
		echo "skipped the native command line: the go command is not installed" >&2; \
	fi
install-test: build/tools/.helm-version

# Third-party MCP software for tests/mcp: npm servers and the TypeScript SDK client, and
# mcp-shell-server in a venv of its own (it needs mcp<2; the tests' client is mcp 2.x).
MCP_DEPS := build/mcp
install-test: mcp-test-deps
mcp-test-deps: tests/mcp/servers/node_modules/.installed $(MCP_DEPS)/shell-venv/.installed
tests/mcp/servers/node_modules/.installed: tests/mcp/servers/package.json tests/mcp/servers/package-lock.json
	cd tests/mcp/servers && npm ci --no-audit --no-fund --loglevel=error
	touch $@
$(MCP_DEPS)/shell-venv/.installed: tests/mcp/servers/requirements-shell.txt
	$(PYTHON) -m venv $(MCP_DEPS)/shell-venv
	$(MCP_DEPS)/shell-venv/bin/python -m pip --disable-pip-version-check -q install -r tests/mcp/servers/requirements-shell.txt
	touch $@

# The CrewAI adapter's tests (tests/adapters/test_crewai.py) in a venv of their own: crewai
# 1.15.30 needs mcp<2, the test extra pins mcp 2.x. The client and the daemon are installed
# into it editable; tests/adapters/test_crewai_venv.py runs the tests there.
CREWAI_VENV := build/crewai-venv
install-test: crewai-test-deps
crewai-test-deps: $(CREWAI_VENV)/.installed
$(CREWAI_VENV)/.installed: tests/adapters/requirements-crewai.txt pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/python -m pip --disable-pip-version-check -q install -r tests/adapters/requirements-crewai.txt -e ./clients/python -e .
	touch $@

# Helm for the chart tests (tests/helm), built once from the Go module proxy.
build/tools/.helm-version: scripts/ensure_helm.sh
	bash scripts/ensure_helm.sh

# gcc, unshare/nsenter/mount and script for the tests that drive them (a skip is a failure in CI).
install-test: ensure-system-tools
ensure-system-tools:
	sh scripts/ensure_system_tools.sh

# podman, runc and debootstrap (Debian's packages) for tests/image and the bench's image part:
# installed here, not by the first test that needs them, so that no test is skipped for their
# absence on a fresh machine and no per-test limit pays for apt.
install-test: ensure-podman
ensure-podman:
	bash scripts/ensure_podman.sh

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

# docs/configuration.md is rendered from interrupt_sidecar.settings and .exits, never edited
# (tests/test_settings.py runs the check in `make test`).
docs: install
	$(BIN)/python scripts/gen_docs.py

check-docs: install
	$(BIN)/python scripts/gen_docs.py --check

# One version: every manifest agrees with sidecar/interrupt_sidecar/__init__.py
# (tests/test_version.py runs it in `make test`). To release another:
# python3 scripts/check_version.py --set X.Y.Z
version-check:
	$(PYTHON) scripts/check_version.py

# One public identity (the repository's home, npm scope, Maven groupId, image name): every
# copy agrees with identity.toml (tests/test_identity.py runs it in `make test`).
identity-check:
	$(PYTHON) scripts/check_identity.py

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The CrewAI adapter and its tests are checked in build/crewai-venv, where crewai is (the
# root config leaves them out: crewai cannot be installed beside the test extra).
CREWAI_TYPED := clients/python/src/interrupt_sidecar_client/adapters/crewai.py tests/adapters/test_crewai.py tests/adapters/crewai_mcp_server.py tests/docs/test_adapters_crewai.py bench/frameworks/crewai.py
typecheck: install-test
	$(BIN)/mypy
	$(CREWAI_VENV)/bin/python -m mypy --strict --python-version 3.11 --explicit-package-bases --follow-imports silent $(CREWAI_TYPED)

# Go, TypeScript, Java and Rust clients and their conformance drivers, each by its own
# toolchain; a missing toolchain is reported as skipped (an error in CI).
clients: install-test
	$(BIN)/python scripts/build_clients.py --check

# Everything, slow tests included (a bare `pytest` skips those marked slow).
PYTEST_ARGS ?= -m "slow or not slow"

pytest: install-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: check-protos lint typecheck clients pytest

# CI's command on a fresh clone with an empty HOME and an empty podman store, as a new
# machine would run it (scripts/test_cold.sh says what it cannot make cold).
test-cold:
	bash scripts/test_cold.sh

# Every publishable artifact of VERSION (the one the repository says) into dist/, with
# SHA256SUMS and SBOMs; the Maven artifacts signed with $RELEASE_GPG_KEY (scripts/release.py,
# CONTRIBUTING.md "Releasing"). Stops with one line on a dirty tree, a version that disagrees,
# a missing toolchain or key; a failure leaves dist/ as it was.
$(VENV)/.installed-release: $(VENV)/.installed pyproject.toml
	$(PIP) install -e './clients/python' -e '.[release]'
	touch $@

release: $(VENV)/.installed-release
	@[ -n "$(VERSION)" ] || { echo "make release: say which version, VERSION=X.Y.Z (scripts/check_version.py reports the repository's)" >&2; exit 2; }
	@if command -v go >/dev/null 2>&1; then bash scripts/ensure_helm.sh; fi
	$(BIN)/python scripts/release.py $(VERSION)

# The daemon's image, built with podman from the Dockerfile (scripts/build_image.sh:
# the pinned base when podman has it, else a stand-in made from Debian's packages).
image:
	bash scripts/build_image.sh

# The chart on a real one-node cluster (tests/kubernetes, docs/kubernetes.md): builds
# etcd, the control plane and the kubelet from the Go module proxy (cached under
# build/kubernetes; tens of minutes cold), installs containerd/runc/CNI from Debian,
# builds the image, runs the tests and stops everything it started. Needs root.
# Not part of `make test` (it needs root and a bridge); .ci/run runs it after `make test`.
e2e-kubernetes: install-test
	@start=$$(date +%s); \
	nice -n 10 bash scripts/ensure_kubernetes.sh && bash scripts/ensure_node.sh && \
	INTERRUPT_SIDECAR_E2E_KUBERNETES=1 $(BIN)/python -m pytest tests/kubernetes -m "slow or not slow" -v; \
	rc=$$?; echo "e2e-kubernetes: exit $$rc after $$(( $$(date +%s) - start )) s"; exit $$rc

clean:
	rm -rf $(VENV) tools/node_modules tests/mcp/servers/node_modules $(MCP_DEPS) .mypy_cache .pytest_cache .ruff_cache
