# Every target creates .venv and installs the pinned dependencies on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_WORKERS ?= 2

.PHONY: demo test lint typecheck contracts pytest bench bench-fleet crds clean mutation envtest e2e-real
.PHONY: deploy-sync image kind-up kind-e2e kind-down upstream-aim-documents

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; sys.exit("omectl needs Python >= 3.11") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,bench]'
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
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --cov=omectl --cov-report=term --durations=40

test: lint typecheck contracts pytest

# Mutation testing of the chain resolver and the merge ([tool.mutmut] in pyproject.toml); not part of `make test`
# (about 5 minutes on 2 cores). Fails when any mutant survives or no test runs it.
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,mutation]'
	rm -rf mutants
	$(BIN)/mutmut run
	@if $(BIN)/mutmut results | grep -Ev ': (killed|timeout)$$'; then echo "mutation: the mutants above survived"; exit 1; fi
	@echo "mutation: every mutant killed (a timeout is a mutant caught looping)"

# Every e2e test against real kube-apiservers (`make test` runs most of them so: tests/envtest/test_controller_e2e.py
# says which it leaves out and why); needs `make envtest`. About 15 minutes on 2 cores.
e2e-real: $(STAMP)
	OMECTL_E2E_REAL=1 CI=true $(BIN)/pytest -p no:randomly -p no:xdist -q tests/e2e

# The real kube-apiserver and etcd for tests/envtest and `omectl dev up --real`, built once from the Go module
# proxy into ~/.cache/omectl/envtest/ (OMECTL_ENVTEST_CACHE); needs Go, not the venv (docs/real-api-server.md).
envtest:
	scripts/envtest.sh

bench: $(STAMP)
	$(BIN)/python -m benchmarks.embedded_server

# The fleet-scale benchmark (benchmarks/fleet_scale.py) on fleets of 1, 4, 10 and 20 clusters x 1,000
# InferenceServices: rewrites its README section, benchmarks/results/fleet_scale.json and the PNG plot of each
# figure against cluster count. Long: each phase runs 3 times (medians), with the same writes replayed beside the
# controller's; 1 and 4 clusters took 1,232 s where the single-round layout took 472 s (a loaded 2-CPU machine), and
# the committed single-round run of 1, 4 and 10 clusters took 442 s on a quiet one, so plan for an hour or more with
# 20 clusters. FLEET_SIZES=1,2 tries it small.
FLEET_SIZES ?= 1,4,10,20
bench-fleet: $(STAMP)
	$(BIN)/python -m benchmarks.fleet_scale --sizes $(FLEET_SIZES) $(FLEET_ARGS)

# Issue 18's count of upstream AIM Engine's AIM documents that omectl accepts (docs/aim-versions.md, "Upstream's YAML,
# measured"): reads a local clone of amd-enterprise-ai/aim-engine holding the commit of
# tests/fixtures/upstream/aim/SOURCE (`git clone https://github.com/amd-enterprise-ai/aim-engine $(UPSTREAM_AIM)`);
# the reference (upstream's CRDs on a real kube-apiserver) needs `make envtest`, else UPSTREAM_AIM_ARGS=--no-reference.
UPSTREAM_AIM ?= ../aim-engine
upstream-aim-documents: $(STAMP)
	$(BIN)/python scripts/upstream_aim_documents.py --upstream-dir $(UPSTREAM_AIM) $(UPSTREAM_AIM_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# --- install (deploy/) and the kind end-to-end fleet (docs/operations.md) ------------------------------------

# Refresh deploy/'s copies of the CRDs and the webhook configuration template (tests/deploy checks them).
deploy-sync: $(STAMP)
	$(BIN)/python scripts/sync_deploy.py

# The controller image; needs a Docker engine (the kind targets build it too).
image:
	@bash -c 'source scripts/kind/common.sh'
	docker build -t omectl:dev .

# Need a Docker engine and kind; without one they stop at once (exit 2) and nothing is faked.
kind-up:
	scripts/kind/up.sh

kind-e2e:
	@bash -c 'source scripts/kind/common.sh'
	$(MAKE) $(STAMP)
	PYTEST=$(abspath $(BIN))/pytest scripts/kind/e2e.sh

kind-down:
	scripts/kind/down.sh
