# Every target creates the virtual environment when it is missing or older than pyproject.toml.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: train test test-slow bench gpu-check collect lint tensorboard clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

train: $(STAMP)  ## the default experiment: addition, attention pooling, T0=50, lr 1e-3
	$(BIN)/python src/train.py $(ARGS)

test: $(STAMP)  ## fast tests (a few minutes on 2 cores)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)  ## the longer end-to-end runs
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)  ## speed and memory of every implementation side by side -> docs/performance.md
	$(BIN)/python bench/throughput.py $(ARGS)

gpu-check: $(STAMP)  ## on a CUDA machine: GPU tests, the default run, docs/performance_gpu.md
	$(BIN)/python bench/gpu_check.py $(ARGS)

# The sweeps behind docs/results (docs/results.md gives the command that fills each one).
SWEEPS ?= outputs/table1 outputs/table1_long outputs/masking outputs/variable_length \
	outputs/variable_length_20 outputs/variable_length_30 outputs/variable_length_40

collect: $(STAMP)  ## tables and plots from the sweeps' result.json files -> docs/results
	$(BIN)/python -m longterm.analysis.collect $(SWEEPS) --out docs/results

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

tensorboard: $(STAMP)
	$(BIN)/tensorboard --logdir outputs

clean:
	rm -rf outputs .pytest_cache .ruff_cache
