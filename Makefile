# Two commands matter: `make demo` and `make test`. Both set up .venv/ first when needed.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

.PHONY: setup lock test-latest demo test test-slow test-faults test-ops test-browser conformance bench soak docs clean

setup: $(STAMP)

# The venv holds exactly requirements.lock (hash-checked, nothing resolved), then the checkout itself, editable,
# built by the locked setuptools. `make lock` rewrites the lock (deploy/lock.sh); nothing else resolves versions.
$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "mfscore needs $(PYTHON) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check >/dev/null || { $(BIN)/python -m pip check; echo "requirements.lock does not hold what pyproject.toml asks: run 'make lock'"; exit 1; }
	touch $(STAMP)

# Rewrites requirements.lock and deploy/image.lock from pyproject.toml with uv (locked itself, the 'lock' extra);
# releases after deploy/lock.sh's EXCLUDE_NEWER are not considered, so upgrading is a deliberate date change.
lock:
	test -x $(BIN)/uv || { test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  $(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.lock; }
	sh deploy/lock.sh

# Not in CI: the suite in a venv of the newest releases pyproject.toml allows (no lock), to see what upgrading
# would change before doing it with `make lock`.
LATEST := .venv-latest
test-latest: $(NODE_STAMP)
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	PIP_CONFIG_FILE=/dev/null $(LATEST)/bin/python -m pip install --quiet --no-cache-dir -e '.[test,cluster,local,docs]'
	$(LATEST)/bin/python -m pip freeze --exclude-editable > $(LATEST)/freeze.txt
	$(LATEST)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope

# The tests' tools from npm (package-lock.json): buf, which lints the wire contract (tests/unit/test_proto_lint.py),
# and @grpc/grpc-js with @grpc/proto-loader, for the Node.js client of tests/integration/test_node_client.py.
$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { echo "mfscore's tests need Node.js and npm on PATH (buf lints proto/; a Node.js client drives a cluster)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

demo: setup
	$(BIN)/python -m mfscore.cli.demo --out demo-output

# Two pytest-xdist workers (TEST_WORKERS=0: none, pytest's own process), each given whole modules (--dist loadscope)
# so a module's fixtures (a cluster, a generated dataset) are made once; servers are started on free ports.
TEST_WORKERS ?= 2
test: setup $(NODE_STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope

# Tests slow by nature (a large run, NATS bringing streams from R1 to R3, clusters of their own killed and restarted);
# 'make test' runs a short one of each kind.
test-slow: setup
	$(BIN)/python -m pytest -q -m slow

# The slow fault injections (outages of tens of seconds); 'make test' runs a short one of each kind.
test-faults: setup
	$(BIN)/python -m pytest -q -m faults tests/integration

# The alert rules and the dashboard (deploy/k8s/monitoring/) checked and tested with promtool (apt-get install prometheus).
test-ops: setup
	$(BIN)/python -m pytest -q -m promtool tests/unit/test_monitoring.py

# The HTML reports opened in Debian's chromium (apt-get install chromium), driven by playwright-core from npm.
test-browser: setup $(NODE_STAMP)
	$(BIN)/python -m pytest -q -m browser tests/browser

# An hour of the program under faults, watched by a real Prometheus (Debian's prometheus): bench/soak.py, its figures
# in docs/reliability.md "An hour under faults". Not in CI; 'make test-slow' runs three minutes of it.
soak: setup
	$(BIN)/python bench/soak.py --out soak-output

conformance: setup
	$(BIN)/python -m pytest -q tests/conformance -s

# Benchmarks time commands as a user runs them, with Python's bytecode cache on (an empty value turns it on).
bench: export PYTHONDONTWRITEBYTECODE =
bench: setup
	$(BIN)/python bench/commands.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/detection.py
	$(BIN)/python bench/masks.py
	$(BIN)/python bench/validate.py
	$(BIN)/python bench/provenance.py
	$(BIN)/python bench/video.py
	$(BIN)/python bench/cluster.py
	$(BIN)/python bench/capacity.py

# The API reference: mfscore.api from its docstrings (sources docs/api/), HTML in build/apidocs. Offline (Sphinx,
# its builtin theme, no intersphinx); every warning fails it, and -E rereads every docstring each time.
DOCS_OUT := build/apidocs
docs: setup
	$(BIN)/python -m sphinx -W --keep-going -E -q -b html docs/api $(DOCS_OUT)
	@echo "API reference: $(abspath $(DOCS_OUT))/index.html"

clean:
	rm -rf $(VENV) $(LATEST) node_modules demo-output .pytest_cache $(DOCS_OUT)
