"""The parts of one run that `Trainer.fit` is given, built from its config: the model (encoder,
readout and head inside the LightningModule), the callbacks, the logger (TensorBoard's, CSV, a
user's) and the Trainer, with the checkpoint it resumes from (chosen in training/checkpoints.py;
none after a debug run, config/debug.py). One assembly
(`assemble`) serves a run alone (training/run.py) and a pack's member (sweeps/pack.py), so the two
are built alike. No import-time side effects: analysis and benchmarks import these factories too.
"""

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytorch_lightning as L
import torch
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.loggers import Logger, TensorBoardLogger

from longterm.config.debug import debug_keys
from longterm.models.build import build_readout, sequence_model
from longterm.store.run_dir import clear_debug_run
from longterm.tasks.inputs import encoder_in_features
from longterm.training.checkpoints import AtomicCheckpointIO, resume_from
from longterm.training.faults import RunError
from longterm.training.library_internals import NoProfiler
from longterm.training.memory_estimate import memory_error
from longterm.training.module import MemoryTaskModule
from longterm.training.recipes import Recipe


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
        accuracy=task.get("accuracy", "micro"),
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


def run_logger(cfg: DictConfig, resumed_at: int | None) -> Logger | bool:
    """The run's logger (False without one). Events from `resumed_at` on (the interrupted epoch;
    an epoch's validation is logged at the step before) came from the process that stopped and
    are logged again: a logger that takes `purge_step` (TensorBoard's writer, the CSV logger of
    training/loggers.py) drops or marks them stale, so the run shows one continuous curve in the
    same directory; 0 for a run that starts over a debug run's directory."""
    if not cfg.logger:
        return False
    if resumed_at is None:
        return instantiate(cfg.logger)
    cls = get_class(cfg.logger["_target_"])
    purges = issubclass(cls, TensorBoardLogger) or "purge_step" in inspect.signature(cls).parameters
    return instantiate(cfg.logger, **({"purge_step": resumed_at} if purges else {}))


def run_trainer(
    cfg: DictConfig, callbacks: list[L.Callback], logger: Logger | bool, **kw: Any
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
    logger: Logger | bool
    jobs: int  # processes side by side with this one (launcher=parallel), itself included


def assemble(cfg: DictConfig, members: int = 1) -> Parts:
    """The parts of the run of `cfg`, built after seeding with its seed: the model, the machine's
    share and the memory check (for `members` runs in this process), the callbacks, the
    checkpoint to resume from and the logger. A debug run resumes from none, and a run in a debug
    run's directory starts over: its checkpoints are removed, its logged events purged."""
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module = build_model(cfg)
    jobs = take_budget(cfg)
    check_memory(cfg, module, jobs * members)
    callbacks = run_callbacks(cfg)
    over = clear_debug_run(cfg.run_dir)  # store/run_dir.py
    if over or debug_keys(cfg.trainer):
        ckpt, resumed_at = None, None
    else:
        ckpt, resumed_at = resume_from(module, callbacks)  # training/checkpoints.py
    logger = run_logger(cfg, 0 if over else resumed_at)
    return Parts(module, callbacks, ckpt, resumed_at, logger, jobs)
