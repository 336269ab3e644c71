# Two commands do all setup: `make run` (app on the demo arena) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DB ?= data/arena.duckdb
PORT ?= 8501
# Local only by default: `make run HOST=0.0.0.0` exposes the dashboard on the network (README, "Serving others")
HOST ?= 127.0.0.1
PYTEST_ARGS ?=
# Test runs keep compiled bytecode (gitignored __pycache__/) even where the environment says not to write it:
# every pytest process otherwise recompiles the project and rewrites every test module's asserts (~5 s each,
# three processes per run).
unexport PYTHONDONTWRITEBYTECODE
# make test's first phase: pytest-xdist workers (CI has 2 cores).  --dist loadfile keeps a module's tests on
# one worker, so a module-scoped fixture (a store, a server) is built once, not once per worker.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile

.PHONY: run check test lint format demo bench tour mutants clean-db lock help

help:
	@echo "make run    - install, build the demo store on first start, serve http://$(HOST):$(PORT) (HOST=0.0.0.0 to share)"
	@echo "make check - the fast tier: ruff lint, then the tests not marked slow, browser or integration"
	@echo "make test   - install test requirements, lint, and run the whole suite"
	@echo "make lint   - ruff (lint + format check) and mypy"
	@echo "make format - apply ruff's formatting and safe fixes"
	@echo "make demo   - (re)build the demo store at $(DB)"
	@echo "make bench  - run the benchmarks (prints ratios against in-run baselines)"
	@echo "make mutants - apply each deliberate bug of scripts/mutants.py and check that its tests catch it"
	@echo "make tour   - the README's page tour: screenshots of every page on the demo arena (docs/tour/)"
	@echo "make lock   - resolve requirements*.txt afresh and rewrite constraints.txt (the pinned versions)"

# requirements*.txt say what the code needs (ranges); constraints.txt pins the exact versions every install gets.
$(VENV)/.runtime: requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -c constraints.txt
	touch $@

$(VENV)/.test: $(VENV)/.runtime requirements-test.txt constraints.txt
	$(PY) -m pip install -q -r requirements-test.txt -c constraints.txt
	touch $@

# New pins: the newest versions the ranges allow, resolved in a throw-away environment (the project's own is
# left alone); review the diff of constraints.txt, run `make test`, commit both.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install -q --upgrade pip
	.lock-venv/bin/python -m pip install -q -r requirements-test.txt
	{ sed -n '1,2p' constraints.txt; .lock-venv/bin/python -m pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .lock-venv

# The demo store (a few seconds); the server answers at once and computes the pages' results in the background
# (serve.py), pages computing what they need on demand meanwhile.
$(DB): | $(VENV)/.runtime
	$(PY) -m core simulate --db $(DB)

run: $(VENV)/.runtime $(DB)
	ARENA_DB=$(DB) $(PY) serve.py --server.address $(HOST) --server.port $(PORT) --server.headless true

demo: $(VENV)/.runtime
	$(PY) -m core simulate --db $(DB) --replace
	$(PY) -m core precompute --db $(DB)

lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(VENV)/.test
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The fast tier, for every change: lint only (no mypy), then the unit, known-answer and property tests on both
# cores (no slow, browser or integration tests; pytest.ini says what each marker means).  `make test` runs all.
check: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(XDIST) -m "not slow and not browser and not integration" $(PYTEST_ARGS)

# Two phases, each on both cores (pytest-xdist; each test has its own temporary store, ports and processes):
# everything but the browser tests, then the browser tests, which wait for states and assert no durations
# (speed targets live in benchmarks/), so two of them may share the machine.  They run apart from the first
# phase's CPU-bound tests so that a page's wait for a state is not starved by them.  Both phases always run;
# the target fails if either did (pytest's 5, "no test selected", is no failure: PYTEST_ARGS may name files of
# one phase only).
test: lint
	@rc=0; \
	$(PY) -m pytest $(XDIST) -m "not browser" $(PYTEST_ARGS); r=$$?; [ $$r -eq 0 -o $$r -eq 5 ] || rc=$$r; \
	$(PY) -m pytest $(XDIST) -m browser $(PYTEST_ARGS); r=$$?; [ $$r -eq 0 -o $$r -eq 5 ] || rc=$$r; \
	exit $$rc

tour: $(VENV)/.test $(DB)
	TOUR_DIR=docs/tour TOUR_DB=$(DB) $(PY) -m pytest tests/test_browser.py -k tour -p no:cacheprovider -q

bench: $(VENV)/.test
	$(PY) benchmarks/run_all.py

# Not in CI: every deliberate bug of scripts/mutants.py, each against the tests that guard it (minutes).
mutants: $(VENV)/.test
	$(PY) scripts/mutants.py $(MUTANTS_ARGS)

clean-db:
	rm -f $(DB) $(DB).wal
