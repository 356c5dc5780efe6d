"""A run's result record: result.json (store/records.py) as it stands before training, rewritten
when training ends (solved, at its epoch limit, diverged) or stops (failed, interrupted). What
else marks the end once it is written (the run's HPARAMS session in TensorBoard,
training/tensorboard.py) is the caller's, handed in as `ended`.

result.json keys: the run's parameters (`run_params`), `limit` (what its epoch limit is: conf/
train.yaml; records.end_of reads `max_epochs` by it), `status` (records.FINAL_STATUSES, or
`failed` / `interrupted`, which the same command resumes), `epoch_solved`, `diverged_step`,
`best_acc`, `final_acc`, `val_acc_history` (null when no validation ran, never a made-up zero),
`best_checkpoint` (the checkpoint holding the weights of `best_acc`, relative to the run directory),
`epochs`, `updates`, `resumed_at_update`, `earlier_wall_time_s`, `n_params`, `state_size`,
`git_commit`, `machine`, `process`, `run_dir`, `config`, `started_at`, `finished_at`,
`wall_time_s`, and `error` for a stopped run. `state_size` is the numbers the model carries per
sequence at inference after as many steps as its training batches are wide (`measured`; null for
a model with no step form). A resumed run's `wall_time_s` is its last process's, and
`earlier_wall_time_s` what the processes before it recorded in the same directory (null for a run
not resumed, or continued into a new directory by store/continue_run; a process killed outright
records none). A finished run with `eval.lengths` adds `eval_lengths` ({"<T0>": accuracy}) and
`eval_sequences` (training/eval_lengths.py), which a rerun with more lengths, or
`python -m longterm.analysis.evaluate RUN --lengths ...`, extends. A debug run (config/debug.py)
adds `debug`, the debugging keys it was made with, in a record written as it starts, and ends with
status `debug` (records.DEBUG_STATUS) and `debug_ended`, the status it would have had.
"""

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytorch_lightning as L
from omegaconf import DictConfig, OmegaConf

from longterm.config.debug import debug_keys, debug_line
from longterm.config.run_settings import run_params
from longterm.store.records import (
    DEBUG_STATUS,
    FINAL_STATUSES,
    RESULT_FILE,
    end_of,
    git_commit,
    machine,
    now,
    process,
    read_result,
    total_seconds,
    write_result,
)
from longterm.training.callbacks import StopOnDivergence, StopWhenSolved, ignore_signal
from longterm.training.checkpoints import best_checkpoint
from longterm.training.eval_lengths import lengths_line
from longterm.training.faults import Interrupted
from longterm.training.memory_estimate import longest_width
from longterm.training.module import MemoryTaskModule

log = logging.getLogger(__name__)


def measured(cfg: DictConfig, module: MemoryTaskModule) -> dict[str, int | None]:
    """The model's size beside its settings: `n_params`, and `state_size`, what the step form
    carries per sequence (models/state.py) after the width of the run's training batches, its
    longest (None when the encoder or the readout has no step form)."""
    state_size = getattr(module.net, "state_size", None)
    width = longest_width(OmegaConf.to_container(cfg.data, resolve=True))
    return {
        "n_params": sum(p.numel() for p in module.parameters()),
        "state_size": state_size(width) if callable(state_size) else None,
    }


def settle(cfg: DictConfig) -> None:
    """The run's result is final: from now on the scheduler's requeue signal (the one the
    `defer_requeue_signal` callback defers) is ignored, so it can neither requeue the finished job
    nor fail it while the process exits (callbacks.ignore_signal)."""
    ignore_signal(OmegaConf.select(cfg, "callbacks.defer_requeue_signal.signal", default="SIGUSR2"))


def earlier_seconds(run_dir: Path) -> float | None:
    """The wall time that the processes before this one recorded for the run in `run_dir`
    (their last record's own and earlier ones); None where none was recorded."""
    if not (run_dir / RESULT_FILE).exists():
        return None
    return total_seconds(read_result(run_dir))


def open_record(
    cfg: DictConfig,
    module: MemoryTaskModule,
    run_dir: Path,
    ckpt: Path | None,
    resumed_at: int | None,
) -> dict[str, Any]:
    """The run's result record as it stands before training (resuming from `ckpt`, after
    `resumed_at` updates, when it is not None). A debug run's is written at once, so that its
    directory says it holds a debug run from the start (config/debug.py)."""
    params, sizes = run_params(cfg), measured(cfg, module)
    if ckpt is not None:
        log.info(f"resuming from {ckpt} after {resumed_at} updates")
    record = {
        **params,
        "limit": OmegaConf.select(cfg, "limit", default="stop"),
        "status": "failed",
        "resumed_at_update": resumed_at,
        "earlier_wall_time_s": earlier_seconds(run_dir) if ckpt is not None else None,
        **sizes,
        "git_commit": git_commit(),
        "machine": machine(),
        "process": process(),
        "run_dir": str(run_dir),
        "config": OmegaConf.to_container(cfg, resolve=True),
        "started_at": now(),
    }
    debug = debug_keys(cfg.trainer)
    if debug:
        record["debug"] = debug
        write_result(run_dir, {**record, "status": DEBUG_STATUS})
    return record


Ended = Callable[[dict[str, Any]], None]  # called with the record once written


def record_failure(
    result: dict[str, Any],
    counts: dict[str, Any],
    error: BaseException,
    seconds: float,
    ended: Ended,
) -> None:
    """Record a run that `error` stopped, then call `ended`. An exception is a failure;
    SystemExit and KeyboardInterrupt (a signal, a requeue) an interruption. Neither is final: the
    same command resumes from the last checkpoint. The caller raises `error` again."""
    run_dir = Path(result["run_dir"])
    result.update(
        counts,
        status="failed" if isinstance(error, Exception) else "interrupted",
        error=f"{type(error).__name__}: {error}",
        wall_time_s=seconds,
        finished_at=now(),
    )
    try:  # recorded wherever it can still be written: a full disk may refuse it too
        write_result(run_dir, result)
        ended(result)
    except OSError as unwritten:
        log.warning(f"the failure could not be recorded in {run_dir}: {unwritten}")
    # Lightning's exit on SIGTERM says 0, and on Ctrl-C 1 after its KeyboardInterrupt; a Ctrl-C
    # after training (scoring eval.lengths) is the KeyboardInterrupt itself
    ctrl_c = isinstance(error.__context__, KeyboardInterrupt)
    if isinstance(error, KeyboardInterrupt) or (
        isinstance(error, SystemExit) and (not error.code or ctrl_c)
    ):
        raise Interrupted(f"interrupted: {run_dir / RESULT_FILE}") from error


def close_record(
    cfg: DictConfig,
    result: dict[str, Any],
    counts: dict[str, Any],
    seconds: float,
    ended: Ended,
    say: logging.Logger | logging.LoggerAdapter = log,
) -> dict[str, Any]:
    """Write the result of a run that `fit` ended, call `ended`, and say it in one line (and its
    accuracy at eval.lengths in another); return it."""
    run_dir = Path(result["run_dir"])
    result.update(counts, wall_time_s=seconds, finished_at=now())
    ends = result["status"]
    if ends in FINAL_STATUSES:
        settle(cfg)
        if result.get("debug"):  # never final: the next run in its directory starts over
            result.update(status=DEBUG_STATUS, debug_ended=ends)
    write_result(run_dir, result)
    ended(result)
    best = "none" if result["best_acc"] is None else f"{result['best_acc']:.4f}"
    ends = end_of({**result, "status": ends})
    say.info(
        f"{debug_run_line(result)}{ends} after {result['epochs']} epochs "
        f"({result['updates']} updates), best val/acc {best}, "
        f"{result['wall_time_s']:.1f} s: {run_dir / RESULT_FILE}"
    )
    if "eval_lengths" in result:
        say.info(lengths_line(result))
    return result


def debug_run_line(result: dict[str, Any]) -> str:
    """What begins the closing line of a debug run: `debug run (trainer.fast_dev_run=True), `."""
    return f"debug run ({debug_line(result['debug'])}), " if result.get("debug") else ""


def outcome(
    callbacks: list[L.Callback], epochs: int, updates: int, interrupted: bool
) -> dict[str, Any]:
    """Status, accuracies and counts of a run whose training has ended after `epochs` epochs and
    `updates` updates (`interrupted`: by a signal or an error)."""
    solved = next(c for c in callbacks if isinstance(c, StopWhenSolved))
    diverged = next(c for c in callbacks if isinstance(c, StopOnDivergence))
    if diverged.diverged_step is not None:
        status = "diverged"
    elif solved.solved_epoch is not None:
        status = "solved"
    elif interrupted:
        status = "interrupted"
    else:
        status = "max_epochs"
    history = solved.history
    return {
        "best_checkpoint": best_checkpoint(callbacks),
        "status": status,
        "epoch_solved": solved.solved_epoch,
        "diverged_step": diverged.diverged_step,
        "best_acc": max(history, default=None),
        "final_acc": history[-1] if history else None,
        "val_acc_history": history,
        "epochs": epochs,
        "updates": updates,
    }
