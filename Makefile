# Every target creates the virtual environment when it is missing or older than pyproject.toml or
# requirements.lock, and installs the lock's versions (`make lock` refreshes it).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make` alone is `make train`; `make help` lists every target with its description.
.DEFAULT_GOAL := train

.PHONY: train test test-slow test-slurm bench gpu-check collect archive restore-runs long-sweeps progress \
	contract lint tensorboard lock clean help

# uv installs the same pins as pip from the same places, faster (it unpacks and compiles in
# parallel): it is given pip's own wheel folder and constraints on this machine (uv does not read
# pip's configuration), with PyPI beside them. Where uv cannot install, pip does.
UV := uv==0.13.9
PIP_SOURCES = $(shell scripts/pip_sources.sh $(PY))

# The environment is requirements.lock's versions, then the package itself (editable, no
# dependency resolved again). The lock holds torch's CPU build, torch==2.13.0+cpu, which only the
# CPU wheel satisfies: no CUDA torch is ever pulled.
LOCK := requirements.lock

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	($(BIN)/pip install --quiet $(UV) && $(BIN)/uv pip install --quiet --python $(BIN)/python \
		--compile-bytecode $(PIP_SOURCES) -r $(LOCK) && $(BIN)/uv pip install --quiet \
		--python $(BIN)/python --compile-bytecode --no-deps -e .) || \
		($(BIN)/pip install --quiet -r $(LOCK) && $(BIN)/pip install --quiet --no-deps -e .)
	touch $(STAMP)

# After a pin in pyproject.toml changes: every other package keeps its locked version where it
# still fits (`make lock ARGS=--upgrade` moves them all to the newest that fit), for this machine's
# Python and platform, from the same sources as the install (docs/development.md).
lock:  ## requirements.lock from pyproject.toml: the versions every target installs
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/pip install --quiet $(UV)
	$(BIN)/uv pip compile --quiet --python $(BIN)/python pyproject.toml --extra dev $(PIP_SOURCES) \
		--custom-compile-command "make lock" -o $(LOCK) $(ARGS)

train: $(STAMP)  ## the default experiment: addition, attention pooling, T0=50, lr 1e-3
	$(BIN)/python src/train.py $(ARGS)

# Test files run side by side, one per worker (most tests wait on a src/train.py process that
# keeps one core busy); a file's tests stay together, so its module fixtures are made once, and
# the files start in the order collected, the slowest first (tests/conftest.py: SLOWEST_FIRST).
# One thread per process: workers and the runs they start side by side would otherwise each
# start an OpenMP thread per core, and threads that spin waiting for a busy core slow a short
# run several times over (results do not depend on the number of threads).
TEST_WORKERS ?= 2

contract: $(STAMP)  ## a model's and a task's contract: make contract ARGS="model=lstm task=xor"
	$(BIN)/python src/contract.py $(ARGS)

# The package compiled once: the tests start a few hundred processes, and where the environment
# sets PYTHONDONTWRITEBYTECODE each would otherwise compile it again.
test: $(STAMP)  ## fast tests (a few minutes on 2 cores)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/python -m compileall -q src tests
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		--durations=10

test-slow: $(STAMP)  ## the longer end-to-end runs
	$(BIN)/python -m pytest -q -m slow

test-slurm: $(STAMP)  ## sweeps on a one-node SLURM cluster it starts here (root; apt) and stops
	$(BIN)/python -m pytest -q -m slurm $(ARGS)

bench: $(STAMP)  ## speed and memory of every implementation side by side -> docs/performance.md
	$(BIN)/python bench/throughput.py $(ARGS)

# GPU_PY: a Python that already holds torch built for CUDA and the project's other pins, for a GPU
# machine that cannot build the environment (no package index); the project's own by default.
GPU_PY ?= $(BIN)/python
gpu-check: $(if $(filter $(BIN)/python,$(GPU_PY)),$(STAMP))  ## on a CUDA machine: GPU tests, the default run, docs/performance_gpu.md
	PYTHONPATH=src$${PYTHONPATH:+:$$PYTHONPATH} $(GPU_PY) bench/gpu_check.py $(ARGS)

# The sweeps behind docs/results, read from the committed archive runs/ (longterm.store.archive), so
# that a fresh clone regenerates them; docs/results.md gives the command that fills each one.
SWEEPS ?= runs/table1 runs/table1_long runs/masking runs/variable_length_100

# Sweeps that test one hypothesis on a cell, each collected on its own into docs/results/<name>.
HYPOTHESES ?= init_torch init_torch_mean

# The recall sweep's races (longterm.experiments.recall.runs): docs/recall.md and its figure, when
# they are archived.
RECALL ?= runs/recall
# The sweeps behind the claims page (docs/claims.md): the claims sweep and the Mamba paper's
# synthetic tasks (conf/experiment/selection.yaml), those of them archived.
CLAIMS ?= runs/claims runs/selection
# Every memory on the paper's problems (longterm.experiments.every_memory.runs): a sweep per
# memory under one folder, read beside runs/table1 and runs/table1_long into docs/every_memory.md.
EVERY_MEMORY ?= runs/every_memory
# zoology's Figure 2 in its recipe (longterm.experiments.recall.figure2): docs/zoology_figure2.md,
# the recall page of its grid, with the grid's cells not run yet.
FIGURE2 ?= runs/zoology_figure2

collect: $(STAMP)  ## tables and plots from the archived sweeps' result.json files -> docs/results
	$(BIN)/python -m longterm.analysis.collect $(SWEEPS) --out docs/results
	for h in $(HYPOTHESES); do \
		$(BIN)/python -m longterm.analysis.collect runs/$$h --out docs/results/$$h || exit 1; done
	$(BIN)/python -m longterm.experiments.claims.page $(wildcard $(CLAIMS)) --out docs/claims.md
	$(if $(wildcard $(RECALL)),$(BIN)/python -m longterm.experiments.recall.page $(RECALL) --out docs/recall.md)
	$(if $(wildcard $(FIGURE2)),$(BIN)/python -m longterm.experiments.recall.page $(FIGURE2) \
		--grid figure2 --out docs/zoology_figure2.md)
	$(if $(wildcard $(EVERY_MEMORY)),$(BIN)/python -m longterm.experiments.every_memory.page \
		$(EVERY_MEMORY) runs/table1 runs/table1_long --out docs/every_memory.md)

# The experiments run at a fixed budget: archived without the checkpoints of finished runs
# (longterm.store.archive, --final). The claims sweep stops at 2000 updates; every_memory's CPU
# plan at 5 epochs, a twentieth of the paper's limit, which a GPU or SLURM grid runs from the start.
FINAL_SWEEPS ?= recall selection claims $(EVERY_MEMORY:runs/%=%)
ARCHIVED = $(wildcard $(SWEEPS:runs/%=outputs/%) $(HYPOTHESES:%=outputs/%))

archive: $(STAMP)  ## copy the sweeps from outputs/ into the committed archive runs/
	$(if $(ARCHIVED),$(BIN)/python -m longterm.store.archive put $(ARCHIVED))
	$(if $(wildcard $(FINAL_SWEEPS:%=outputs/%)),$(BIN)/python -m longterm.store.archive put --final \
		$(wildcard $(FINAL_SWEEPS:%=outputs/%)))

restore-runs: $(STAMP)  ## copy the archived sweeps back to outputs/, where their commands resume
	$(BIN)/python -m longterm.store.archive get $(wildcard runs/*/)

progress: $(STAMP)  ## where each run of the sweeps in outputs/ stands: epochs, accuracy, time left
	$(BIN)/python -m longterm.analysis.progress $(or $(wildcard outputs/*/),$(error no sweeps in outputs/))

long-sweeps: $(STAMP)  ## the hours-long sweeps behind docs/results (resumable; see the script)
	scripts/long_sweeps.sh

lint: $(STAMP)  ## ruff's lint and format checks, changing nothing
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

tensorboard: $(STAMP)  ## TensorBoard over every run under outputs/
	$(BIN)/tensorboard --logdir outputs

clean:  ## delete outputs/ (runs not archived in runs/ are lost) and the test and lint caches
	rm -rf outputs .pytest_cache .ruff_cache

help:  ## every target with its description
	@grep -E '^[a-z][a-z-]*:.*## ' $(firstword $(MAKEFILE_LIST)) | \
		awk -F ':.*## ' '{ printf "  %-13s %s\n", $$1, $$2 }'
