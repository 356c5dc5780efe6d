#!/usr/bin/env bash
# Every sweep behind docs/results.md, in the order they are worth running: Table 1 at T0 = 5000
# and 10000, Table 1 at T0 <= 1000 and the masking comparison, then the variable-length
# experiment to the paper's 100 epochs. Hours on 2 cores: each command resumes what it finds in its
# sweep directory, so the script can be stopped at any point and started again, on another
# machine too after `make restore-runs` (the archived sweeps back in outputs/). `make archive`
# then copies the finished and unfinished runs into runs/.
#
#     scripts/long_sweeps.sh            # from the repository root, with the environment built
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
race() { $PY -m longterm.experiments.lr_race "$@"; }
long() { race --sweep-dir outputs/table1_long --seeds 1 "$@"; }

# Mean pooling, addition: the rates that won mean pooling at T0 = 1000; a run stops when solved.
long --T0 5000 10000 --tasks addition --pools mean --lrs 3e-3 1e-2
# Attention, addition: the whole grid, so the cells are best-of-grid like every other cell.
long --T0 5000 10000 --tasks addition --pools attention
# Multiplication: attention at the rate of the first runs, mean pooling at the winner at T0 = 1000,
# to the paper's 100 epochs.
long --T0 5000 10000 --tasks multiplication --pools attention --lrs 1e-3
long --T0 5000 10000 --tasks multiplication --pools mean --lrs 3e-3
# Table 1 at T0 <= 1000, three seeds, the whole grid under the paper's rule; the masking comparison.
race --sweep-dir outputs/table1 --T0 50 100 500 1000 --seeds 1 2 3
$PY src/train.py -m task=addition,multiplication pool=attention,mean T0=100 lr=3e-3 seed=1,2,3 \
    pool.mask_padding=true trainer.max_epochs=30 trainer.enable_progress_bar=false \
    hydra.sweep.dir=outputs/masking
# Variable lengths (§2.3), 100 epochs: the four runs at 3e-3 and attention at 1e-3.
$PY src/train.py -m experiment=variable_length lr=3e-3 seed=1 trainer.max_epochs=100 \
    trainer.enable_progress_bar=false hydra.sweep.dir=outputs/variable_length_100
$PY src/train.py -m experiment=variable_length pool=attention lr=1e-3 seed=1 \
    trainer.max_epochs=100 trainer.enable_progress_bar=false hydra.sweep.dir=outputs/variable_length_100
