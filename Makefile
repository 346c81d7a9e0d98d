# aitj: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install lint unit test e2e demo bench build-cluster cluster-up cluster-down clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check aitj tests hack
	$(BIN)/ruff format --check aitj tests hack
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest tests/unit

# Builds the control plane from source into ~/.cache/aitj (once; later runs reuse it).
build-cluster: $(STAMP)
	$(BIN)/aitj cluster build

# The whole suite: lint, unit tests, and end-to-end tests on the local control plane.
test: lint build-cluster
	$(BIN)/pytest

e2e: build-cluster
	$(BIN)/pytest -m e2e

cluster-up: build-cluster
	$(BIN)/aitj cluster up

cluster-down: $(STAMP)
	$(BIN)/aitj cluster down

demo: build-cluster
	$(BIN)/aitj demo

# Recovery, scaling, API cost, CPU and RSS against the floor and the Job controller; writes
# bench/ (results.json, table.md, PNG plots). QUICK=1: 200 pods, about 5 minutes.
bench: build-cluster
	$(BIN)/aitj bench $(if $(QUICK),--quick)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
