# rollflow: two commands on a fresh machine.
#   make demo   set up, bring the embedded stack up, run the main job
#   make test   set up, lint, type-check, run every test suite
# Set-up is idempotent and cached: a second run installs nothing.
SHELL := bash
.DEFAULT_GOAL := help
ROLLFLOW := bin/rollflow
DEMO_CONFIG ?= examples/learn-arith.yaml
# The demo is the learning run in its small form: 100 steps, validated every 20.
DEMO_SETS ?= --set max_steps=100 --set eval_steps=20
TS_SOURCES := $(shell find src -name '*.ts' 2>/dev/null)

.PHONY: help setup node python temporal-cli object-store system-packages build lint typecheck test demo down status clean python-lock cluster-up cluster-down cluster-status bench bench-learning bench-cluster-tls record-histories swe-tasks swe-images

help:
	@echo "make demo   - set up, start the embedded stack (Temporal + torch engines + worker), run a real learning run (GRPO on addition)"
	@echo "make test   - set up, lint, type-check, run vitest + pytest"
	@echo "make down   - stop the embedded stack;  make status - show it"
	@echo "make cluster-up / cluster-down / cluster-status - the local Temporal cluster on PostgreSQL (builds the server once)"
	@echo "make bench  - W1-W5, W7 and W8 on the real system beside their DES, then the long chaos schedule; tables and plots in bench/results/ (well over an hour)"
	@echo "make record-histories - record the replay tests' workflow histories from this checkout (docs/versioning.md says when)"
	@echo "make bench-cluster-tls - a run on the local PostgreSQL cluster serving mTLS, payloads encrypted (builds the server once)"
	@echo "make swe-tasks - mine SWE-bench-format tasks from pinned PyPI projects into .cache/swe-mined (docs/swe-mining.md; cached: a second run does nothing)"
	@echo "make swe-images - one podman image per mined task for source kind image (ARGS=\"--limit N\", --ids, --split; docs/swe-bench.md)"
	@echo "make bench-learning - the learning runs (sync vs async, long tail, FrozenLake, SWE-lite) on the torch engines (about two hours)"

setup: node python temporal-cli object-store system-packages

node: node_modules/.installed
# A checkout whose node_modules or .venv is a link to another's (a git worktree) never installs into it:
# npm ci would empty the other checkout's modules under it.
node_modules/.installed: package.json package-lock.json
	@if [ -L node_modules ]; then echo "node_modules is a link to another checkout's: not installing" >&2; exit 0; fi; \
	  npm ci --no-audit --no-fund --loglevel=error && touch $@

python: .venv/.installed
.venv/.installed: python-engines/requirements.txt
	@if [ -L .venv ]; then echo ".venv is a link to another checkout's: not installing" >&2; exit 0; fi; \
	  python3 -m venv .venv && .venv/bin/pip install --quiet --disable-pip-version-check -r python-engines/requirements.txt && touch $@

temporal-cli:
	@temporal/ensure-cli.sh >/dev/null

# The S3-compatible object store of the data plane (versitygw, built from the Go module proxy once).
object-store:
	@object-store/versitygw.sh path >/dev/null

# Debian packages: docker-compose validates docker-compose.yml offline in the tests, bubblewrap is the
# sandbox (libseccomp2 builds its seccomp filter), chromium is the browser the UI test drives; podman and
# mmdebstrap build the container images of the swe env's image-source tests (uidmap: podman's user namespaces).
system-packages:
	@scripts/ensure-system-packages.sh docker-compose=docker-compose bwrap=bubblewrap libseccomp.so.2=libseccomp2 chromium=chromium systemd-analyze=systemd \
		podman=podman mmdebstrap=mmdebstrap newuidmap=uidmap

build: dist/.built
dist/.built: node_modules/.installed tsconfig.json tsconfig.build.json $(TS_SOURCES)
	rm -rf dist
	node_modules/.bin/tsc -p tsconfig.build.json
	@touch $@

lint: node
	node_modules/.bin/eslint .

typecheck: node
	node_modules/.bin/tsc -p tsconfig.json --noEmit

test: setup build lint typecheck
	scripts/run-tests.sh

# The main job: a real learning run (GRPO on single-digit addition, tiny model on the torch
# engines, async ratio 1), a line per step; the batch reward rises from ~0.2 to ~0.75.
demo: setup build
	$(ROLLFLOW) dev up $(DEMO_CONFIG) $(DEMO_SETS)
	$(ROLLFLOW) smoke $(DEMO_CONFIG) $(DEMO_SETS)
	$(ROLLFLOW) run $(DEMO_CONFIG) $(DEMO_SETS) --wait
	@echo "The stack keeps running: Temporal UI at http://127.0.0.1:8233 ; stop it with 'make down'."

down: build
	$(ROLLFLOW) dev down $(DEMO_CONFIG)

status: build
	$(ROLLFLOW) dev status $(DEMO_CONFIG)

# The local Temporal cluster on PostgreSQL (temporal/cluster.sh): builds the
# server from the Go module proxy on first use, so it is not part of `make test`.
# Point a config at it with temporal.address=127.0.0.1:7333 and temporal.embedded=false.
cluster-up:
	temporal/cluster.sh start

cluster-down:
	temporal/cluster.sh stop

cluster-status:
	temporal/cluster.sh status

# Benchmarks on the real system (embedded Temporal on its own ports and state
# dir, sim engines), each beside its discrete-event simulation: W1-W5 and W7 of
# bench/README.md. The default sets take well over an hour on 2 cores (W2's alone took 20 minutes);
# BENCH_W1/BENCH_W2/BENCH_W3/BENCH_W4/BENCH_W5/BENCH_W7/BENCH_W8 take more --set options (full sweeps: see bench/results/*.md).
BENCH_OUT ?= bench/results
BENCH_W1 ?=
BENCH_W2 ?=
BENCH_W3 ?=
BENCH_W4 ?=
BENCH_W5 ?=
BENCH_W7 ?=
# Then chaos v2 (bench/chaos/v2.sh): three seeds of a 150-step sim run and one multi-turn torch run, each fault-free
# and then with a fault about every 60 s (SIGKILL or SIGSTOP of each kind of process, a damaged trainer state and,
# as root, a full disk), recovered by the stack's supervisor alone (bench/results/chaos-v2-*.md).
bench: setup build swe-tasks
	$(ROLLFLOW) bench w1 $(BENCH_W1) --out $(BENCH_OUT)/w1.json
	$(ROLLFLOW) bench w1 --set 'batches=[64]' --set 'latencies=[[10,1]]' --set 'modes=["env_async"]' --set 'durability=["on","off"]' --out $(BENCH_OUT)/durability.json
	$(ROLLFLOW) bench w2 $(BENCH_W2) --out $(BENCH_OUT)/w2.json
	$(ROLLFLOW) bench w3 $(BENCH_W3) --out $(BENCH_OUT)/w3.json
	$(ROLLFLOW) bench w4 $(BENCH_W4) --out $(BENCH_OUT)/w4.json
	$(ROLLFLOW) bench w5 $(BENCH_W5) --out $(BENCH_OUT)/w5.json
	$(ROLLFLOW) bench w7 $(BENCH_W7) --out $(BENCH_OUT)/w7.json
	$(ROLLFLOW) bench w8 $(BENCH_W8) --out $(BENCH_OUT)/w8.json
	for w in w1 w2 w3 w4 w5 w7 w8; do .venv/bin/python bench/report.py $$w $(BENCH_OUT)/$$w*.json; done
	.venv/bin/python bench/sandbox/bench_sandbox.py --out $(BENCH_OUT)/sandbox.json
	# one weight sync through the object store against a local directory, 1 MB to 1 GB (bench/results/weights-sync.md)
	OUT=$(BENCH_OUT)/weights-sync.md bench/weights-sync/run.sh
	# W1 (B = 64) with the sample store in a bucket against the run directory (w1-b64-store.json, its table in w1.md)
	OUT=$(BENCH_OUT)/w1-b64-store.json bench/store/w1.sh
	# Temporal's cost of a turn, a trajectory and a train step on the PostgreSQL cluster, projected (capacity.md)
	OUT_DIR=$(BENCH_OUT) bench/capacity/run.sh
	# per trajectory-turn, four kinds of turn on the cluster and the dev server: events, tasks, writes, CPU (turn-cost.md)
	OUT_DIR=$(BENCH_OUT) bench/turn-cost/run.sh
	bench/chaos/v2.sh
	# exactly-once at α = 0: 3 seeds, a fault every 20-40 s, every export bit-identical (docs/exactly-once.md)
	OUT=$(BENCH_OUT)/exactly-once.md node bench/exactly-once/run.cjs

# SWE-bench-format tasks mined from real PyPI projects (docs/swe-mining.md): sdists pinned by sha256, a venv per project,
# AST mutations kept by real test runs, each validated by the swe env's grader. Network (PyPI) on first run; then cached
# in .cache/swe-mined under a key of the pinned list, the seed, the limits and the miner's version. Not part of `make test`.
swe-tasks: python
	cd python-engines && ../.venv/bin/python -m rollflow_engines.envs.swe.mining --out ../.cache/swe-mined

# One podman image per mined task, for source kind image (docs/swe-bench.md); e.g. make swe-images ARGS="--limit 20".
swe-images: system-packages swe-tasks
	cd python-engines && ../.venv/bin/python -m rollflow_engines.envs.swe.image_build --mined ../.cache/swe-mined $(ARGS)

# The learning runs of bench/results/learning.md (torch engines, about two hours on 2 cores):
# appends to bench/results/learning-runs.jsonl, then redraws learning.png and learning.md.
# rollflow on the Temporal server's own mTLS: the local PostgreSQL cluster with TLS (builds the server once).
bench-cluster-tls: setup build
	bench/tls/cluster-tls.sh

bench-learning: setup build
	bench/learning/run.sh
	.venv/bin/python bench/learning/report.py

# Workflow histories for the replay tests, recorded from this checkout's code (docs/versioning.md says when).
record-histories: setup build
	tests/replay/record.sh

clean:
	rm -rf dist node_modules .venv

# Re-pin every Python package after editing python-engines/requirements.in.
python-lock:
	rm -rf .cache/lock-venv && python3 -m venv .cache/lock-venv
	.cache/lock-venv/bin/pip install --quiet -r python-engines/requirements.in
	(echo "# Generated from requirements.in by 'make python-lock': every package pinned."; .cache/lock-venv/bin/pip freeze) > python-engines/requirements.txt
