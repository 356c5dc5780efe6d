"""The parts of one run that `Trainer.fit` is given, built from its config: the model (encoder,
readout and head inside the LightningModule), the callbacks, the checkpoint it resumes from, the
TensorBoard logger and the Trainer. One assembly (`assemble`) serves a run alone (training/run.py)
and a pack's member (sweeps/pack.py), so the two are built alike. No import-time side effects:
analysis and benchmarks import these factories too.
"""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytorch_lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.loggers import TensorBoardLogger

from longterm.models.build import build_readout, encoder_in_features, sequence_model
from longterm.store.checkpoints import UnsafeCheckpointError, checkpoint_step, load_checkpoint
from longterm.store.run_dir import CHECKPOINTS
from longterm.training.checkpoint_io import AtomicCheckpointIO
from longterm.training.faults import RunError
from longterm.training.library_internals import NoProfiler
from longterm.training.memory_estimate import memory_error
from longterm.training.module import MemoryTaskModule
from longterm.training.recipes import Recipe

log = logging.getLogger(__name__)

# conf/callbacks/default.yaml: last_checkpoint.filename, the checkpoint a rerun resumes from,
# and checkpoint.filename, the best epoch's.
LAST, BEST = "last", "best"


def instantiate_named(node: DictConfig, **kwargs: Any) -> Any:
    """Instantiate a config-group node; its `name` labels the choice and is no argument."""
    params = OmegaConf.to_container(node, resolve=True)
    params.pop("name", None)
    return instantiate(params, **kwargs)


def build_model(cfg: DictConfig) -> MemoryTaskModule:
    """The LightningModule around the model: the encoder `cfg.model.encoder` names, the readout
    `cfg.pool.readout` names and the paper's head (models/build.py), with an embedding in front
    for a task of token inputs; it predicts per step when the readout's class says so
    (`per_step`)."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    pool = OmegaConf.to_container(cfg.pool, resolve=True)
    task = OmegaConf.to_container(cfg.task, resolve=True)
    readout = build_readout(pool, cfg.model.dim, model)
    tokens = task.get("inputs", "onehot") == "tokens"
    net = sequence_model(
        **model,
        in_features=encoder_in_features(task, cfg.model.dim),
        out_features=cfg.task.n_outputs,
        readout=readout,
        input_vocab=task["vocab"] if tokens else None,
    )
    return MemoryTaskModule(
        net,
        lr=cfg.lr,
        recipe=run_recipe(cfg),
        loss=cfg.task.loss,
        n_outputs=cfg.task.n_outputs,
        per_step=readout.per_step,
    )


def run_recipe(cfg: DictConfig) -> Recipe:
    """The training recipe of `cfg.optim` (training/recipes.py), over the run's epochs and
    updates."""
    optim = OmegaConf.to_container(cfg.optim, resolve=True)
    epochs, updates = cfg.trainer.max_epochs, cfg.data.batches_per_epoch
    return Recipe(**optim, max_epochs=epochs, updates_per_epoch=updates)


def run_callbacks(cfg: DictConfig) -> list[L.Callback]:
    """The run's callbacks (conf/callbacks): the stopping rules, the checkpoints, ..."""
    return [instantiate(c) for c in cfg.callbacks.values()]


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


def check_memory(cfg: DictConfig, module: MemoryTaskModule, side_by_side: int) -> None:
    """RunError when the run, or its scoring at eval.lengths after training, cannot fit the
    machine's memory (training/memory_estimate.py)."""
    data, task = (OmegaConf.to_container(c, resolve=True) for c in (cfg.data, cfg.task))
    lengths = OmegaConf.select(cfg, "eval.lengths", default=None) or []
    too_large = memory_error(module.net, data, task, side_by_side, lengths)
    if too_large:
        raise RunError(too_large)


def last_checkpoint(callbacks: list[L.Callback]) -> Path | None:
    """Where the `last_checkpoint` callback writes `last.ckpt` (None without that callback)."""
    for callback in callbacks:
        if isinstance(callback, ModelCheckpoint) and callback.filename == LAST and callback.dirpath:
            return Path(callback.dirpath) / (LAST + callback.FILE_EXTENSION)
    return None


def saved_checkpoint(run_dir: Path) -> Path | None:
    """The last checkpoint a rerun would resume from, if the run directory has one."""
    path = run_dir / CHECKPOINTS / f"{LAST}.ckpt"
    return path if path.exists() else None


def readable(path: Path) -> str | None:
    """Why the checkpoint at `path` cannot be loaded, in one line; None when it can. One that
    would run code when loaded is refused (UnsafeCheckpointError), never passed over for another."""
    try:
        load_checkpoint(path)
    except UnsafeCheckpointError:
        raise
    except Exception as e:
        return str(e).split(". ")[0].splitlines()[0] if str(e) else type(e).__name__
    return None


def resumable(last: Path | None) -> Path | None:
    """The checkpoint to resume from, given where `last.ckpt` is written: last.ckpt when it loads;
    else best.ckpt beside it when that loads, with an unreadable last.ckpt kept beside it as
    last.ckpt.unreadable. best.ckpt without last.ckpt is left by an attempt stopped between the
    two writes (a full disk, a kill): resuming from it keeps best.ckpt the best of the run. The
    data are keyed by epoch and batch, so training on from the best epoch gives the same run.
    Neither there: None (the run starts). Neither loads: RunError says how to start again; no
    checkpoint is ever deleted."""
    if last is None:
        return None
    best = last.with_name(f"{BEST}.ckpt")
    if not last.exists():
        if not best.exists():
            return None
        if (reason := readable(best)) is None:
            log.warning(f"{last} is missing: resuming from {best}")
            return best
        unloadable(best, reason)
    if (reason := readable(last)) is None:
        return last
    if best.exists() and readable(best) is None:
        kept = unused(last.with_name(last.name + ".unreadable"))
        last.rename(kept)
        log.warning(f"{last} cannot be read ({reason}): kept as {kept}; resuming from {best}")
        return best
    unloadable(last, reason)


def same_model(module: MemoryTaskModule, ckpt: Path) -> None:
    """RunError when `ckpt` holds other parameters than `module` has: the run it belongs to was
    made with other model settings (a `model.dim` that result.json's settings do not name)."""
    theirs, ours = load_checkpoint(ckpt)["state_dict"], module.state_dict()
    for key in sorted(theirs.keys() | ours.keys()):
        there, here = (shape(d.get(key)) for d in (theirs, ours))
        if there != here:
            raise RunError(
                f"{ckpt} holds a model of other parameters than this command's ({key}: {there} "
                f"there, {here} here): rerun the run with its own settings, or give this run "
                "another directory"
            )


def shape(tensor: torch.Tensor | None) -> str:
    return "none" if tensor is None else "x".join(map(str, tensor.shape)) or "a scalar"


def unloadable(ckpt: Path, reason: str) -> NoReturn:
    """RunError: `ckpt` cannot be read for `reason`, and no other checkpoint of its run can."""
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


def run_logger(cfg: DictConfig, resumed_at: int | None) -> TensorBoardLogger | bool:
    """The run's TensorBoard logger (False without one). Events from `resumed_at` on (the
    interrupted epoch; an epoch's validation is logged at the step before) came from the process
    that stopped and are logged again: the writer marks them stale, so TensorBoard shows one
    continuous curve in the same directory."""
    if not cfg.logger:
        return False
    return instantiate(cfg.logger, **({} if resumed_at is None else {"purge_step": resumed_at}))


def run_trainer(
    cfg: DictConfig, callbacks: list[L.Callback], logger: TensorBoardLogger | bool, **kw: Any
) -> L.Trainer:
    """The Trainer of `cfg.trainer`, writing checkpoints so that a failed write costs none."""
    plugins = [*instantiate(cfg.trainer.get("plugins") or []), AtomicCheckpointIO()]
    if cfg.trainer.get("profiler") is None:
        kw.setdefault("profiler", NoProfiler())
    return instantiate(cfg.trainer, callbacks=callbacks, logger=logger, plugins=plugins, **kw)


@dataclass(eq=False)
class Parts:
    """What one run trains with, but its data and Trainer (which a run alone and a pack's
    member make differently)."""

    module: MemoryTaskModule
    callbacks: list[L.Callback]
    ckpt: Path | None  # the checkpoint it resumes from
    resumed_at: int | None  # the update it resumes after
    logger: TensorBoardLogger | bool
    jobs: int  # processes side by side with this one (launcher=parallel), itself included


def assemble(cfg: DictConfig, members: int = 1) -> Parts:
    """The parts of the run of `cfg`, built after seeding with its seed: the model, the machine's
    share and the memory check (for `members` runs in this process), the callbacks, the
    checkpoint to resume from and the logger."""
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module = build_model(cfg)
    jobs = take_budget(cfg)
    check_memory(cfg, module, jobs * members)
    callbacks = run_callbacks(cfg)
    ckpt = resumable(last_checkpoint(callbacks))
    if ckpt is not None:
        same_model(module, ckpt)
    resumed_at = None if ckpt is None else checkpoint_step(ckpt)
    return Parts(module, callbacks, ckpt, resumed_at, run_logger(cfg, resumed_at), jobs)
