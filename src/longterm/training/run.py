"""One run: validate the config, build the parts, fit, write `result.json` beside the TensorBoard
events. With `preflight.py`, the only modules of the package that know Hydra."""

import logging
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytorch_lightning as L
import torch
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.loggers import TensorBoardLogger
from tensorboard.compat.proto.summary_pb2 import Summary

from longterm.config.validate import validate
from longterm.models.build import sequence_model
from longterm.store.records import (
    FINAL_STATUSES,
    RESULT_FILE,
    git_commit,
    machine,
    now,
    process,
    write_result,
)
from longterm.store.run_dir import (
    CHECKPOINTS,
    OLD_EVENTS_DIR,
    RunDirError,
    checkpoint_step,
    claim,
    events_dir,
    finished,
)
from longterm.training.callbacks import StopOnDivergence, StopWhenSolved, ignore_signal
from longterm.training.checkpoint_io import AtomicCheckpointIO
from longterm.training.faults import RunError, explain
from longterm.training.hparams_records import NAMED, close_session, open_session
from longterm.training.memory_estimate import memory_error
from longterm.training.module import MemoryTaskModule
from longterm.training.terminal import progress_callbacks

log = logging.getLogger(__name__)

# conf/callbacks/default.yaml: last_checkpoint.filename, the checkpoint a rerun resumes from,
# and checkpoint.filename, the best epoch's.
LAST, BEST = "last", "best"

# Batches are generated in the main process by default; it costs well under a millisecond at T0=50.
warnings.filterwarnings("ignore", ".*does not have many workers.*")
# Raised inside Lightning 2.6 under torch 2.13; nothing in this project uses the API it names.
warnings.filterwarnings("ignore", ".*LeafSpec.*is deprecated.*")
# A run directory with checkpoints is one being resumed (longterm.store.run_dir), not a mistake.
warnings.filterwarnings("ignore", ".*Checkpoint directory .* exists and is not empty.*")
# On a cluster's login node every local run would be told that SLURM is there; launcher=slurm is
# how a run uses it (README, "SLURM").
warnings.filterwarnings("ignore", ".*The `srun` command is available on your system.*")


def not_a_tip(record: logging.LogRecord) -> bool:
    """Lightning's advertisement for a hosted logger is no message about the run."""
    return not str(record.msg).startswith("💡 Tip")


def quiet_library_logs() -> None:
    """Print each Lightning message once, through Hydra's handlers (console and train.log), and
    a log line that cannot be written (train.log on a full disk) not as a traceback of its own:
    the run's one-line error says what failed (longterm.training.faults).

    Lightning gives its "pytorch_lightning" logger a console handler of its own and also lets it
    propagate to the root logger, so under Hydra every line would appear twice. Idempotent:
    the jobs of a local multirun share one process.
    """
    for name in ("pytorch_lightning", "lightning_fabric"):
        # imported before Hydra set up logging (a preflight check), Lightning gives its logger a
        # handler of its own and stops it propagating
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.raiseExceptions = False
    logging.getLogger("pytorch_lightning.utilities.rank_zero").addFilter(not_a_tip)


def instantiate_named(node: DictConfig, **kwargs: Any) -> Any:
    """Instantiate a config-group node; its `name` labels the choice and is no argument."""
    params = OmegaConf.to_container(node, resolve=True)
    params.pop("name", None)
    return instantiate(params, **kwargs)


def run_params(cfg: DictConfig) -> dict[str, Any]:
    """The flat hyperparameters that identify a run (HPARAMS view, result.json)."""
    params = {
        "task": cfg.task.name,
        "loss": cfg.task.loss,
        "pool": cfg.pool.name,
        "model": cfg.model.name,
        "data": cfg.data.name,
        "T0": cfg.T0,
        "lr": cfg.lr,
        "seed": cfg.seed,
        "mask_padding": cfg.pool.mask_padding,
        "batch_size": cfg.data.batch_size,
        "max_epochs": cfg.trainer.max_epochs,
    }
    for key in ("lengths", "min_length", "max_length"):
        if key in cfg.data:
            params[key] = cfg.data[key]
    params.update(cfg.task.params)  # the task's own keys (associative_recall: k)
    return params


def log_hparams(logger: TensorBoardLogger, params: dict[str, Any]) -> None:
    """hparams.yaml, and the HPARAMS experiment and session start once per run (longterm.training.hparams_records).

    Lightning's `log_hyperparams` only writes the session with metric values it logs at step 0,
    which would put a false point on the val/acc curve, so the records are written here.
    """
    logger.log_hyperparams(params)  # hparams.yaml

    def add_summary(summary: Summary) -> None:  # the writer starts its file on first use
        logger.experiment._get_file_writer().add_summary(summary)

    names = {key: group_names(key, params[key]) for key in NAMED}
    open_session(Path(logger.log_dir), add_summary, params, names)


def group_names(group: str, own: str) -> tuple[str, ...]:
    """The options of a config group on this run's search path (the built-ins' conf files and a
    user's, `--config-dir` or `hydra.searchpath`), with the run's own name."""
    hydra = GlobalHydra.instance()
    found = set(hydra.config_loader().get_group_options(group)) if hydra.is_initialized() else set()
    return tuple(sorted(found | {own}))


def end_session(logger: TensorBoardLogger | bool, result: dict[str, Any]) -> None:
    """The verdict scalars and the session end of a run that has ended (not of an interrupted
    one, which resumes)."""
    if logger and result["status"] != "interrupted":
        close_session(Path(logger.log_dir), result)


def build_model(cfg: DictConfig) -> MemoryTaskModule:
    """The LightningModule around the model: the encoder `cfg.model.encoder` names, the readout
    `cfg.pool` and the paper's head (models/build.py)."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    init = model.get("init", "paper")
    readout = instantiate_named(cfg.pool, dim=cfg.model.dim, init=init)
    net = sequence_model(
        **model,
        in_features=cfg.task.n_features,
        out_features=cfg.task.n_outputs,
        readout=readout,
    )
    return MemoryTaskModule(
        net,
        lr=cfg.lr,
        loss=cfg.task.loss,
        n_outputs=cfg.task.n_outputs,
        per_step=cfg.pool.name == "per_step",
        **OmegaConf.to_container(cfg.optim),
    )


def train(cfg: DictConfig) -> dict[str, Any]:
    """Fit one run in `cfg.run_dir`; return (and write) its result record.

    The same command in the same directory continues the run: a finished run (see
    `records.FINAL_STATUSES`) is returned as it is, an unfinished one resumes from its last
    checkpoint. One process at a time holds the directory.
    """
    validate(cfg)
    quiet_library_logs()
    run_dir = Path(cfg.run_dir)
    with claimed(run_dir):
        done = already_finished(cfg, run_dir)
        return fit(cfg, run_dir) if done is None else done


@contextmanager
def claimed(run_dir: Path) -> Iterator[Path]:
    """Hold `run_dir` (longterm.store.run_dir.claim) while the block runs; an error the user's situation
    caused, there or in the block, is raised as RunError with its one line (longterm.training.faults)."""
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
    trained again. RunDirError when it was run with other settings."""
    done = finished(run_dir)
    if done is None:
        return None
    conflicts = {k: v for k, v in run_params(cfg).items() if done.get(k) != v}
    if conflicts:
        raise RunDirError(
            f"{run_dir} holds a finished run with other settings "
            f"({', '.join(f'{k}={done.get(k)!r}' for k in conflicts)}): give this run "
            "another directory"
        )
    log.info(f"already {done['status']}, not trained again: {run_dir / RESULT_FILE}")
    settle(cfg)
    return done


def saved_checkpoint(run_dir: Path) -> Path | None:
    """The last checkpoint a rerun would resume from, if the run directory has one."""
    path = run_dir / CHECKPOINTS / f"{LAST}.ckpt"
    return path if path.exists() else None


def readable(path: Path) -> str | None:
    """Why the checkpoint at `path` cannot be loaded, in one line; None when it can."""
    try:
        torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:
        return str(e).split(". ")[0].splitlines()[0] if str(e) else type(e).__name__
    return None


def resumable(ckpt: Path | None) -> Path | None:
    """The checkpoint to resume from: `ckpt` (last.ckpt) when it loads; else, when best.ckpt
    beside it loads, that one, with last.ckpt kept beside it as last.ckpt.unreadable (the data
    are keyed by epoch and batch, so training on from the best epoch gives the same run). With
    neither, RunError says how to start again; no checkpoint is ever deleted."""
    if ckpt is None or (reason := readable(ckpt)) is None:
        return ckpt
    best = ckpt.with_name(f"{BEST}.ckpt")
    if best.exists() and readable(best) is None:
        kept = unused(ckpt.with_name(ckpt.name + ".unreadable"))
        ckpt.rename(kept)
        log.warning(f"{ckpt} cannot be read ({reason}): kept as {kept}; resuming from {best}")
        return best
    folder = ckpt.parent
    aside = unused(folder.with_name(folder.name + ".unreadable"))
    raise RunError(
        f"{ckpt} cannot be read ({reason}), and no other checkpoint of the run can: to start "
        f"the run again, move them away (mv {folder} {aside}) and rerun the same command"
    )


def unused(path: Path) -> Path:
    """`path`, or with .1, .2, ... added, the first name that nothing has."""
    found, n = path, 0
    while found.exists():
        n += 1
        found = path.with_name(f"{path.name}.{n}")
    return found


def settle(cfg: DictConfig) -> None:
    """The run's result is final: from now on the scheduler's requeue signal (the one the
    `defer_requeue_signal` callback defers) is ignored, so it can neither requeue the finished job
    nor fail it while the process exits (callbacks.ignore_signal)."""
    ignore_signal(OmegaConf.select(cfg, "callbacks.defer_requeue_signal.signal", default="SIGUSR2"))


def last_checkpoint(callbacks: list[L.Callback]) -> Path | None:
    """The `last.ckpt` that the `last_checkpoint` callback wrote in an earlier process, if any."""
    for callback in callbacks:
        if isinstance(callback, ModelCheckpoint) and callback.filename == LAST and callback.dirpath:
            path = Path(callback.dirpath) / (LAST + callback.FILE_EXTENSION)
            if path.exists():
                return path
    return None


def take_budget(cfg: DictConfig) -> int:
    """Take this job's share of the machine under launcher=parallel, which resolves it and hands
    it to each job as `launcher.threads` and `launcher.jobs` (hydra_plugins/longterm_launcher):
    set the threads (torch's, and so OpenMP's and the CPU kernels'; results do not depend on
    their number) and return how many jobs run at once with this one (1 elsewhere)."""
    threads = OmegaConf.select(cfg, "launcher.threads")
    if isinstance(threads, int):
        torch.set_num_threads(threads)
    jobs = OmegaConf.select(cfg, "launcher.jobs")
    return jobs if isinstance(jobs, int) else 1


def fit(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Build the parts, fit (from the last checkpoint when there is one), write result.json."""
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    datamodule = instantiate_named(cfg.data)
    module = build_model(cfg)
    jobs = take_budget(cfg)
    check_memory(cfg, module, jobs)
    callbacks = run_callbacks(cfg)
    ckpt = resumable(last_checkpoint(callbacks))
    resumed_at = None if ckpt is None else checkpoint_step(ckpt)
    logger = run_logger(cfg, run_dir, resumed_at)
    # bars of jobs side by side would draw over each other: lines instead
    shows, bar = progress_callbacks(cfg.trainer.get("enable_progress_bar", True), bars=jobs == 1)
    trainer = run_trainer(cfg, [*callbacks, *shows], logger, enable_progress_bar=bar)
    result = open_record(cfg, module, run_dir, logger, ckpt, resumed_at)
    start = time.perf_counter()
    try:
        trainer.fit(module, datamodule=datamodule, ckpt_path=ckpt)
    except BaseException as e:
        counts = outcome(callbacks, trainer.current_epoch, trainer.global_step, trainer.interrupted)
        record_failure(result, logger, counts, e, time.perf_counter() - start)
        raise
    counts = outcome(callbacks, trainer.current_epoch, trainer.global_step, trainer.interrupted)
    return close_record(cfg, result, logger, counts, time.perf_counter() - start)


def run_callbacks(cfg: DictConfig) -> list[L.Callback]:
    """The run's callbacks (conf/callbacks): the stopping rules, the checkpoints, ..."""
    return [instantiate(c) for c in cfg.callbacks.values()]


def check_memory(cfg: DictConfig, module: MemoryTaskModule, side_by_side: int) -> None:
    """RunError when the run cannot fit the machine's memory (longterm.training.memory_estimate)."""
    data, task = (OmegaConf.to_container(c, resolve=True) for c in (cfg.data, cfg.task))
    too_large = memory_error(module.net, data, task, side_by_side)
    if too_large:
        raise RunError(too_large)


def run_logger(cfg: DictConfig, run_dir: Path, resumed_at: int | None) -> TensorBoardLogger | bool:
    """The run's TensorBoard logger (False without one). Events from `resumed_at` on (the
    interrupted epoch; an epoch's validation is logged at the step before) came from the process
    that stopped and are logged again: the writer marks them stale, so TensorBoard shows one
    continuous curve in the same directory. A run begun before event files moved out of tb/
    keeps them there."""
    if not cfg.logger:
        return False
    where = {} if events_dir(run_dir) == run_dir else {"name": OLD_EVENTS_DIR}
    return instantiate(
        cfg.logger, **where, **({} if resumed_at is None else {"purge_step": resumed_at})
    )


def run_trainer(
    cfg: DictConfig, callbacks: list[L.Callback], logger: TensorBoardLogger | bool, **kw: Any
) -> L.Trainer:
    """The Trainer of `cfg.trainer`, writing checkpoints so that a failed write costs none."""
    plugins = [*instantiate(cfg.trainer.get("plugins") or []), AtomicCheckpointIO()]
    return instantiate(cfg.trainer, callbacks=callbacks, logger=logger, plugins=plugins, **kw)


def open_record(
    cfg: DictConfig,
    module: MemoryTaskModule,
    run_dir: Path,
    logger: TensorBoardLogger | bool,
    ckpt: Path | None,
    resumed_at: int | None,
) -> dict[str, Any]:
    """The run's HPARAMS session started, and its result record as it stands before training."""
    params = run_params(cfg)
    if logger:
        log_hparams(logger, params)
    if ckpt is not None:
        log.info(f"resuming from {ckpt} after {resumed_at} updates")
    return {
        **params,
        "status": "failed",
        "resumed_at_update": resumed_at,
        "n_params": sum(p.numel() for p in module.parameters()),
        "git_commit": git_commit(),
        "machine": machine(),
        "process": process(),
        "run_dir": str(run_dir),
        "config": OmegaConf.to_container(cfg, resolve=True),
        "started_at": now(),
    }


def record_failure(
    result: dict[str, Any],
    logger: TensorBoardLogger | bool,
    counts: dict[str, Any],
    error: BaseException,
    seconds: float,
) -> None:
    """Record a run that `error` stopped. An exception is a failure; SystemExit and
    KeyboardInterrupt (a signal, a requeue) an interruption. Neither is final: the same command
    resumes from the last checkpoint. The caller raises `error` again."""
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
        end_session(logger, result)
    except OSError as unwritten:
        log.warning(f"the failure could not be recorded in {run_dir}: {unwritten}")
    if isinstance(error, SystemExit) and not error.code:  # Lightning's exit on SIGTERM says 0
        raise SystemExit(f"interrupted: {run_dir / RESULT_FILE}") from error


def close_record(
    cfg: DictConfig,
    result: dict[str, Any],
    logger: TensorBoardLogger | bool,
    counts: dict[str, Any],
    seconds: float,
    say: logging.Logger | logging.LoggerAdapter = log,
) -> dict[str, Any]:
    """Write the result of a run that `fit` ended (its verdict scalars and session end too) and
    say it in one line; return it."""
    run_dir = Path(result["run_dir"])
    result.update(counts, wall_time_s=seconds, finished_at=now())
    if result["status"] in FINAL_STATUSES:
        settle(cfg)
    write_result(run_dir, result)
    end_session(logger, result)
    best = "none" if result["best_acc"] is None else f"{result['best_acc']:.4f}"
    say.info(
        f"{result['status']} after {result['epochs']} epochs ({result['updates']} updates), "
        f"best val/acc {best}, {result['wall_time_s']:.1f} s: {run_dir / RESULT_FILE}"
    )
    return result


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
        "status": status,
        "epoch_solved": solved.solved_epoch,
        "diverged_step": diverged.diverged_step,
        "best_acc": max(history, default=None),
        "final_acc": history[-1] if history else None,
        "val_acc_history": history,
        "epochs": epochs,
        "updates": updates,
    }
