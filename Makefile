# aitj: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
IMAGE  ?= aitj:dev

# The lock files: every package pinned, with hashes. requirements.lock is what the operator
# image runs; requirements-test.lock adds the test and lint tools (same versions for the rest).
LOCK      := requirements.lock
TEST_LOCK := requirements-test.lock
UV        := uv==0.13.8
COMPILE    = $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
             --custom-compile-command 'make lock' --quiet

.PHONY: install lock image lint unit test e2e demo bench chaos build-cluster build-helm cluster-up cluster-down \
        clean dashboards dashboards-pictures real-nodes demo-real bench-real steady-real chaos-real release chart \
        test-matrix

# Installs exactly the locked versions (hash-checked, no resolution), then aitj itself.
$(STAMP): pyproject.toml $(TEST_LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r $(TEST_LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

install: $(STAMP)

# Re-resolves the lock files from pyproject.toml (after adding or bumping a dependency), with uv.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet '$(UV)'
	$(COMPILE) -o $(LOCK)
	$(COMPILE) --extra test --extra bench --extra dashboards --constraint $(LOCK) -o $(TEST_LOCK)

# The operator image (needs Docker, or any builder that reads a Dockerfile). For a release, pin
# the base by digest: DOCKER_BUILD_ARGS=--build-arg=PYTHON_IMAGE=python@sha256:... (Dockerfile).
image:
	docker build $(DOCKER_BUILD_ARGS) -t $(IMAGE) .

lint: $(STAMP)
	$(BIN)/ruff check aitj tests hack
	$(BIN)/ruff format --check aitj tests hack
	$(BIN)/mypy
	$(BIN)/lint-imports

# The chart's unit tests run Helm (tests/unit/test_chart.py): built first, alone if need be.
unit: build-helm
	$(BIN)/pytest tests/unit -n auto --cov=aitj.core --cov-report=term-missing:skip-covered --cov-fail-under=95

# Builds the control plane from source into ~/.cache/aitj (once; later runs reuse it).
build-cluster: $(STAMP)
	$(BIN)/aitj dev cluster build

# Helm only, from the Go module proxy into ~/.cache/aitj (about 90 s once; build-cluster builds it too).
build-helm: $(STAMP)
	$(BIN)/aitj dev cluster build --only helm

# charts/aitj's copies of the CRD and of manifests/ (after changing either; a unit test checks them).
chart: $(STAMP)
	$(BIN)/python hack/gen_chart.py

# The install artifacts of a release into dist/VERSION/ (git-ignored): manifests.yaml, the
# cluster-wide install with the image pinned by tag (IMAGE_REPO:VERSION), and the chart package
# aitj-VERSION.tgz (version and appVersion VERSION, the same image). The image is built apart
# (make image IMAGE=$(IMAGE_REPO):VERSION). VERSION is x.y.z; a missing or other one is refused.
IMAGE_REPO ?= registry.aitj.local/aitj
ifneq ($(filter release,$(MAKECMDGOALS)),)
ifeq ($(strip $(VERSION)),)
$(error make release: VERSION is missing: make release VERSION=x.y.z (for example VERSION=0.2.0))
endif
endif
release: build-cluster
	$(BIN)/python hack/release.py --version "$(VERSION)" --image-repo "$(IMAGE_REPO)" --out dist

# The whole suite but the long scenarios: lint, unit tests, and end-to-end tests on the local
# control plane, the real-node ones included when run as root (docs/real-nodes.md).
# The unit tests run on every core (pytest-xdist), report the pure core's line coverage (the
# files below 100 %) and fail under 95 %; the end-to-end tests run untraced, since tracing slows the operator they time, and
# list their 15 slowest steps: CI's time budget is kept by moving the slowest to `long`.
test: lint build-cluster
	$(BIN)/pytest tests/unit -n auto --cov=aitj.core --cov-report=term-missing:skip-covered --cov-fail-under=95
	$(BIN)/pytest -m "not long" --ignore=tests/unit --durations=15

# The end-to-end suite's core (the local control plane, lifecycle, fault tolerance, scaling, gang
# scheduling) on each Kubernetes release the local control plane runs, oldest first: the
# release is chosen by $AITJ_KUBERNETES (docs/devcluster.md, "Kubernetes versions"), so `make
# test`, which runs all of it, runs the newest only. A release's first run builds it (about
# 10 minutes of 2 cores; cached after). MATRIX="1.36 1.37" runs some. On 1.35 the gang tests
# are skipped: its Workload API is not one the operator uses (docs/gang.md), and in-place restart
# rules are refused there, so the operator's fallback is what test_inplace_fallback sees.
MATRIX ?= 1.35 1.36 1.37
MATRIX_TESTS := tests/e2e/test_devcluster.py tests/e2e/test_lifecycle.py tests/e2e/test_fault_tolerance.py \
                tests/e2e/test_scaling.py tests/e2e/test_gang.py tests/e2e/test_inplace_fallback.py
test-matrix: $(STAMP)
	set -e; for release in $(MATRIX); do \
	  echo "== Kubernetes $$release =="; \
	  AITJ_KUBERNETES=$$release $(BIN)/aitj dev cluster build --only etcd --only kwok --only kubernetes; \
	  AITJ_KUBERNETES=$$release $(BIN)/pytest -m "e2e and not long" $(MATRIX_TESTS) -p no:cacheprovider; \
	done

# Every test on real nodes (tests/e2e/real), the long ones too: a stopped kubelet, a drain, the
# host list's latency through scale-out, scale-in and a replacement; issue 28's measurements (a
# drain with and without the checkpoint hook, goodput against the training's own through a chaos
# run, the chaos command's hang and kill faults). Prints what it measures. Needs root. About 40
# minutes warm (not timed whole). make steady-real's hours are its own.
real-nodes: build-cluster
	$(BIN)/pytest -m e2e tests/e2e/real -s -p no:cacheprovider --ignore=tests/e2e/real/test_steady.py

e2e: build-cluster
	$(BIN)/pytest -m e2e

cluster-up: build-cluster
	$(BIN)/aitj dev cluster up

cluster-down: $(STAMP)
	$(BIN)/aitj dev cluster down

demo: build-cluster
	$(BIN)/aitj dev demo

# The same story on two real nodes (root): images pulled, Horovod training to the end.
demo-real: build-cluster
	$(BIN)/aitj dev demo --real-nodes

# Recovery, scaling, API cost, CPU and RSS against the floor and the Job controller, and one job
# of 4,096 trainers (F12, F13); writes bench/ (results.json, table.md, PNG plots): about 20
# minutes on 2 cores. QUICK=1: 200 pods and one job of 512, about 4 minutes.
bench: build-cluster
	$(BIN)/aitj dev bench $(if $(QUICK),--quick)

# The recovery users feel (root): the seed's Horovod elastic training on two real nodes, made to
# lose a worker (force and graceful deletes, two force deletes at once, a SIGKILL matched by an
# exit-code rule, the training's Python killed inside its Running pod), scaled 3 -> 5 -> 3 and hit by node faults (kubelet stopped, containerd down,
# drain), then the MPI and torchrun examples through the same faults, ROUNDS times each, timed from
# their own output: until training runs again, until it is back at full width, the steps redone.
# Writes bench-real/ (Horovod) and bench-real/mpi/, bench-real/torchrun/ (table.md,
# results.json). About 4 minutes a round for each training with its node faults (not timed since
# the examples got them), after 2 minutes of set-up each. GLOO_TIMEOUT=30 runs it with
# HOROVOD_GLOO_TIMEOUT_SECONDS=30 instead of the seed's 300 (into bench-real/gloo-30/). ONLY="at once,kubelet" makes only the faults
# whose name contains one of its words; OUT=dir writes there instead.
bench-real: build-cluster
	AITJ_BENCH_REAL_ROUNDS=$(or $(ROUNDS),5) \
	  AITJ_BENCH_REAL_OUT=$(or $(OUT),$(CURDIR)/bench-real$(if $(GLOO_TIMEOUT),/gloo-$(GLOO_TIMEOUT))) \
	  $(if $(GLOO_TIMEOUT),AITJ_BENCH_REAL_GLOO_TIMEOUT=$(GLOO_TIMEOUT)) \
	  $(if $(ONLY),AITJ_BENCH_REAL_ONLY="$(ONLY)") \
	  $(BIN)/pytest -m e2e tests/e2e/real/test_training_recovery.py -s -p no:cacheprovider

# Training under a steady fault rate (root; issue 46): each training the project ships (the seed's
# Horovod elastic, the MPI and torchrun examples) on two real nodes, QUIET seconds without faults
# (default 3600: the watchdog and the rules must restart nothing, a slow step every few minutes
# included), then one worker fault every INTERVAL seconds (180) for CHAOS seconds (1800): force and
# graceful deletes, a SIGKILL, the training's Python killed inside its pod. Prints and writes into
# steady-real/<training>/ each fault's time to full width and the goodput against the quiet part.
# About 90 minutes a training at the defaults; ONLY=horovod (a pytest -k expression) picks trainings.
steady-real: build-cluster
	AITJ_STEADY_OUT=$(CURDIR)/steady-real $(if $(QUIET),AITJ_STEADY_QUIET_SECONDS=$(QUIET)) \
	  $(if $(CHAOS),AITJ_STEADY_CHAOS_SECONDS=$(CHAOS)) $(if $(INTERVAL),AITJ_STEADY_INTERVAL=$(INTERVAL)) \
	  $(BIN)/pytest -m e2e tests/e2e/real/test_steady.py -s -p no:cacheprovider $(if $(ONLY),-k "$(ONLY)")

# The Grafana dashboards, the alert rules and the monitoring manifests, from aitj/tools/dashboards,
# and the chart's copies of the manifests (hack/gen_chart.py).
dashboards: $(STAMP)
	$(BIN)/aitj dev dashboards generate
	$(BIN)/python hack/gen_chart.py

# The scenario of tests/e2e/test_prometheus.py (force delete, exit code, node NotReady, drain,
# scale-out, scale-in) scraped by a real Prometheus, then every dashboard drawn into
# dashboards/pictures/ (the README shows the fleet overview).
dashboards-pictures: build-cluster
	AITJ_DASHBOARDS_PICTURES=$(CURDIR)/dashboards/pictures $(BIN)/pytest -m e2e tests/e2e/test_prometheus.py -q -p no:cacheprovider

# Ten minutes of seeded faults (every kind the local control plane allows, drains included)
# against 6 elastic jobs on the local cluster "chaos", invariants checked from the command's own
# watch; the jobs are deleted at the end (nothing may be left) and the cluster stopped. Writes
# $(CHAOS_OUT)/chaos.json and timeline.png; exits 1 on any violation. Two operators under leader
# election, as the manifests/ha component runs them (the kill fault SIGKILLs the leader); OPERATORS=1
# LEADER_ELECT= runs a single one without it.
CHAOS_OUT    ?= chaos-report
OPERATORS    ?= 2
LEADER_ELECT ?= 1
chaos: build-cluster
	mkdir -p $(CHAOS_OUT)
	$(BIN)/aitj chaos --bed chaos --bed-jobs 6 --down --operators $(OPERATORS) $(if $(LEADER_ELECT),--leader-elect) \
	  -n chaos -l chaos.aitj.dev/bed=true --seed 14 --duration 600 --interval 10 --allow-drain --delete-jobs \
	  --report $(CHAOS_OUT)/chaos.json --timeline $(CHAOS_OUT)/timeline.png

# Training through chaos (root): the seed's Horovod elastic training on two real nodes, and
# `aitj chaos --progress` against it for ten minutes (force and graceful deletes, evictions,
# replicas edits, one every 20 s): the operator's invariants from the command's watch, and the
# training's from its launcher's log (it steps past where it was within 60 s of every fault
# and never starts again from step 0). Writes chaos-real/ (chaos.json, timeline.png: samples
# per second with each fault marked; launcher, operator, job and events *.log, git-ignored).
# A 45-second version (three faults, 15 s apart) runs in make test.
chaos-real: build-cluster
	AITJ_CHAOS_REAL_DURATION=$(or $(DURATION),600) AITJ_CHAOS_REAL_INTERVAL=20 AITJ_CHAOS_REAL_SCALE_IN_GRACE=60 \
	  AITJ_CHAOS_REAL_OUT=$(CURDIR)/chaos-real \
	  $(BIN)/pytest -m e2e tests/e2e/real/test_chaos_real.py -s -p no:cacheprovider

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
