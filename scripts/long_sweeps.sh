#!/usr/bin/env bash
# Every sweep behind docs/results.md, in two streams that run side by side, one process of one
# thread each: an update on two threads takes well over half the time of one on one thread, so
# on 2 cores two such processes train more updates per hour than one process of two threads.
#   stream long:     Table 1 at T0 = 5000 and 10000 (mean pooling first, then attention), then
#                    variable lengths at 1e-3 on addition (attention, then mean pooling);
#   stream variable: the variable-length experiment to the paper's 100 epochs at 3e-3, Table 1 at
#                    T0 <= 1000 and the masking comparison, then variable lengths at 1e-3 on
#                    multiplication (attention, then mean pooling).
# Hours on 2 cores: each command resumes what it finds in its sweep directory, so the script can be
# stopped at any point (kill -TERM the process group; the runs end `interrupted`) and started
# again, on another machine too after `make restore-runs`. `make archive` then copies the finished
# and unfinished runs into runs/.
#
#     scripts/long_sweeps.sh                  # both streams; logs in outputs/long_sweeps.*.log
#     scripts/long_sweeps.sh long             # one stream in the foreground
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export OMP_NUM_THREADS=1
race() { $PY -m longterm.experiments.lr_race "$@"; }
long() { race --sweep-dir outputs/table1_long --seeds 1 "$@"; }
variable_1e3() {  # task, pool
    $PY src/train.py -m experiment=variable_length task="$1" pool="$2" lr=1e-3 seed=1 \
        trainer.max_epochs=100 trainer.enable_progress_bar=false \
        hydra.sweep.dir=outputs/variable_length_100
}

stream_long() {
    # Mean pooling, addition: the rates that won mean pooling at T0 = 1000; a run stops when solved.
    long --T0 5000 10000 --tasks addition --pools mean --lrs 3e-3 1e-2
    # Mean pooling, multiplication: the winner at T0 = 1000, to the paper's 100 epochs.
    long --T0 5000 10000 --tasks multiplication --pools mean --lrs 3e-3
    # Attention, addition: the whole grid, so the cells are best-of-grid like every other cell.
    long --T0 5000 10000 --tasks addition --pools attention
    # Attention, multiplication, at the rate of the first runs.
    long --T0 5000 10000 --tasks multiplication --pools attention --lrs 1e-3
    # Variable lengths at 1e-3 (3e-3 swings between epochs), attention first: addition here,
    # multiplication at the end of the other stream, so that both streams end at about one time.
    variable_1e3 addition attention
    variable_1e3 addition mean
}

stream_variable() {
    # Variable lengths (§2.3), 100 epochs: the four runs at 3e-3.
    $PY src/train.py -m experiment=variable_length lr=3e-3 seed=1 trainer.max_epochs=100 \
        trainer.enable_progress_bar=false hydra.sweep.dir=outputs/variable_length_100
    # Table 1 at T0 <= 1000, three seeds, the whole grid under the paper's rule; masking. Before
    # the next variable-length runs: `make collect` needs these sweeps to regenerate docs/results.
    race --sweep-dir outputs/table1 --T0 50 100 500 1000 --seeds 1 2 3
    $PY src/train.py -m task=addition,multiplication pool=attention,mean T0=100 lr=3e-3 \
        seed=1,2,3 pool.mask_padding=true trainer.max_epochs=30 trainer.enable_progress_bar=false \
        hydra.sweep.dir=outputs/masking
    variable_1e3 multiplication attention
    variable_1e3 multiplication mean
}

case "${1:-both}" in
    long) stream_long ;;
    variable) stream_variable ;;
    both)
        mkdir -p outputs
        stream_long > outputs/long_sweeps.long.log 2>&1 &
        stream_variable > outputs/long_sweeps.variable.log 2>&1 &
        wait
        ;;
    *) echo "usage: $0 [long|variable|both]" >&2; exit 2 ;;
esac
