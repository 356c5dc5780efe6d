"""One run: validate the config, claim the run directory, build the parts, fit, write
`result.json` beside the TensorBoard events (docs in ../shared DESIGN.md, "The flow of one run").

    train(cfg) -> validate -> claim run_dir -> finished already? (scored at the eval.lengths
               it lacks: eval_lengths.py) -> assemble (training/parts.py; the checkpoint to
               resume from: checkpoints.py) -> Trainer.fit (from last.ckpt when there is one)
               -> the accuracy at eval.lengths (eval_lengths.py) -> result.json (result.py) and
               the HPARAMS session's end (tensorboard.py)

What the run needs of Hydra, the conf files on its search path that HPARAMS lists, its entry point
hands it (`groups`: src/train.py, the packed launcher); nothing here reads Hydra's global state.
"""

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from longterm.config.debug import debug_conflict
from longterm.config.run_settings import other_settings
from longterm.config.validate import validate
from longterm.store.records import FINAL_STATUSES, RESULT_FILE
from longterm.store.run_dir import RunDirError, claim, finished
from longterm.training.checkpoints import saved_checkpoint
from longterm.training.eval_lengths import add_lengths, length_accuracies, lengths_line
from longterm.training.faults import RunError, explain
from longterm.training.parts import assemble, instantiate_named, run_trainer
from longterm.training.quiet import quiet_libraries
from longterm.training.result import close_record, open_record, outcome, record_failure, settle
from longterm.training.result import log as record_log
from longterm.training.tensorboard import ConfGroups, end_session, start_session
from longterm.training.terminal import JobLog, progress_callbacks

log = logging.getLogger(__name__)


def train(cfg: DictConfig, groups: ConfGroups | None = None) -> dict[str, Any]:
    """Fit one run in `cfg.run_dir`; return (and write) its result record. `groups`: the conf
    files on the run's search path that HPARAMS lists (tensorboard.on_search_path; none: the
    run's own only).

    The same command in the same directory continues the run: a finished run (see
    `records.FINAL_STATUSES`) is returned as it is, an unfinished one resumes from its last
    checkpoint. One process at a time holds the directory.
    """
    validate(cfg)
    quiet_libraries()
    run_dir = Path(cfg.run_dir)
    with claimed(run_dir):
        done = already_finished(cfg, run_dir)
        return fit(cfg, run_dir, groups or ConfGroups()) if done is None else done


@contextmanager
def claimed(run_dir: Path) -> Iterator[Path]:
    """Hold `run_dir` (store/run_dir.py: claim) while the block runs; an error the user's
    situation caused, there or in the block, is raised as RunError with its one line
    (training/faults.py)."""
    try:
        with claim(run_dir) as lock:
            yield lock
    except Exception as e:
        line = explain(e, run_dir, saved_checkpoint(run_dir))
        if line is None:
            raise
        raise RunError(line) from e


def already_finished(cfg: DictConfig, run_dir: Path) -> dict[str, Any] | None:
    """The result of the finished run in `run_dir` (None when there is none to return): not
    trained again, but scored at those of the command's eval.lengths it was not scored at
    (eval_lengths.add_lengths). RunDirError when the directory holds a run, finished or not, of
    other settings (config/run_settings.py; the command line was checked so before Hydra wrote
    anything)."""
    conflict = other_settings(cfg, run_dir) or debug_conflict(cfg, run_dir)  # config/debug.py
    if conflict is not None:
        raise RunDirError(conflict)
    done = finished(run_dir)
    if done is None:
        return None
    log.info(f"already {done['status']}, not trained again: {run_dir / RESULT_FILE}")
    settle(cfg)
    lengths = OmegaConf.select(cfg, "eval.lengths", default=None)
    if not lengths:
        return done
    done = add_lengths(cfg, run_dir, done, lengths, cfg.eval.sequences)  # those it lacks
    log.info(lengths_line(done))
    return done


def fit(cfg: DictConfig, run_dir: Path, groups: ConfGroups) -> dict[str, Any]:
    """Build the parts, fit (from the last checkpoint when there is one), write result.json."""
    parts = assemble(cfg)
    datamodule = instantiate_named(cfg.data)
    # a run side by side with others (launcher=parallel) names itself in its lines
    side_by_side = run_dir if parts.jobs > 1 else None
    say = record_log if side_by_side is None else JobLog(record_log, run_dir)
    enabled = cfg.trainer.get("enable_progress_bar", True)
    shows, bar = progress_callbacks(enabled, side_by_side)
    trainer = run_trainer(cfg, [*parts.callbacks, *shows], parts.logger, enable_progress_bar=bar)
    result = open_record(cfg, parts.module, run_dir, parts.ckpt, parts.resumed_at)
    start_session(parts.logger, cfg, result, groups)
    ended = partial(end_session, parts.logger)
    start = time.perf_counter()

    def count() -> dict[str, Any]:
        return outcome(
            parts.callbacks, trainer.current_epoch, trainer.global_step, trainer.interrupted
        )

    try:
        trainer.fit(parts.module, datamodule=datamodule, ckpt_path=parts.ckpt, weights_only=True)
        counts = count()
        if counts["status"] in FINAL_STATUSES:  # eval.lengths: the accuracy at other lengths
            counts |= length_accuracies(cfg, parts.module, parts.jobs)
    except BaseException as e:  # in training or in scoring eval.lengths: resumed by a rerun
        record_failure(result, count(), e, time.perf_counter() - start, ended)
        raise
    return close_record(cfg, result, counts, time.perf_counter() - start, ended, say)
