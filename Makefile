# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make run` needs the broker and TLS only; `make test` adds the test tools and the Spark reports.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# Parallel pytest workers (pytest-xdist). Most of the suite waits on sockets, subprocesses and
# real clients rather than computing, so 4 workers keep this machine's 2 cores busy.
TEST_WORKERS ?= 4

.PHONY: run test lint bench clean

$(RUN_STAMP): setup.cfg setup.py pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q -e '.[tls]'
	touch $@

$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install -q -e '.[tls,test,reports]'
	touch $@

run: $(RUN_STAMP)
	$(BIN)/rmq-emu up $(ARGS)

# The tests under tests/spark share one worker and its SparkSession (tests/conftest.py); the
# ten slowest tests are listed at the end of every run.
test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=10 $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .

bench: $(TEST_STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
