# Every target creates .venv and installs the pinned dependencies on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_WORKERS ?= 2

.PHONY: demo test lint typecheck contracts pytest bench crds clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; sys.exit("omectl needs Python >= 3.11") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m omectl.demo

lint: $(STAMP)
	$(BIN)/ruff check omectl tests benchmarks
	$(BIN)/ruff format --check omectl tests benchmarks
	$(BIN)/python -m omectl.api.crdgen --check

crds: $(STAMP)
	$(BIN)/python -m omectl.api.crdgen --out deploy/crds

typecheck: $(STAMP)
	$(BIN)/mypy omectl

contracts: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: lint typecheck contracts pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks.embedded_server

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
