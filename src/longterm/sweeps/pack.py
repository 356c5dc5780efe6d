"""Packed runs (launcher=packed): runs of one cell that differ only in learning rate, seed and
epoch limit train in one process as the members of a pack, each still a run of its own.

What the members share: one Lightning Trainer and its loop (one training step and one validation
step for all of them), the process, and the data: members with the same seed read one stream of
training batches, generated once (batches are keyed by seed, epoch and index, batches.py), and
one validation set.

What each member keeps: its model, built after seeding with its own seed as a run alone is; its
own optimizer, with the schedule of its learning rate and its gradient clipping
(training/recipes.py); its callbacks (conf/callbacks: the stopping rules, the checkpoints),
driven by the pack through a Trainer of the member's own that is never fitted and whose loop is
the pack's; its TensorBoard logger and HPARAMS session; its run directory with result.json,
train.log and checkpoints in the format of a run alone. So the collector, `continue_run`, a
rerun under any launcher and the archive treat a member as any run.

Exact on the CPU: a member's forward and backward passes are those of the run alone (the same
modules and kernels, one member after another), the pack's loss is the sum of the members'
losses (whose gradient reaches each member multiplied by exactly 1), and each member's optimizer
steps its own parameters, clipped to its own norm, at its own scheduled learning rate. A
member's parameters, val_acc_history, epochs and status are bit for bit those of the run alone
(tests/test_packed.py).

On an accelerator (`launcher.vectorise=auto`, fixed-length data) the members are stacked instead
(longterm.sweeps.stacked): one update of every member is a fixed number of ops, and not equal to the
bit; only under the paper's recipe (constant Adam, no clipping), other recipes step each member's
own optimizer as on the CPU.

A member stops on its own while the others go on (sweeps/members.py).
Resumption: each member resumes from its own last.ckpt; members whose checkpoints stand at other
updates (a pack killed while it wrote them) train as packs of their own.

The pack's Lightning objects are in sweeps/pack_module.py, its members' in sweeps/members.py.
"""

import logging
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytorch_lightning as L
import torch
from omegaconf import DictConfig, OmegaConf

from longterm.choices import AUTO, FUSED_ENCODER, PAPER_READOUTS
from longterm.config.debug import debug_keys
from longterm.config.validate import ConfigError, validate
from longterm.store.checkpoint_files import load_checkpoint
from longterm.store.run_dir import claim
from longterm.sweeps.members import ENDED, Member, MemberHooks, MemberLog, PackLogger
from longterm.sweeps.pack_module import OwnTensors, PackData, PackModule, PackOptimizer
from longterm.training.callbacks import DeferSignal
from longterm.training.checkpoints import saved_checkpoint
from longterm.training.faults import RunError, RunFailed, explain, failure_line
from longterm.training.library_internals import attach_unfitted, load_callback_states
from longterm.training.parts import assemble, instantiate_named, run_callbacks, run_trainer
from longterm.training.quiet import quiet_libraries
from longterm.training.result import open_record, outcome, record_failure
from longterm.training.run import already_finished
from longterm.training.tensorboard import ConfGroups, end_session, start_session

log = logging.getLogger(__name__)

LOG_FILE = "train.log"  # each member's log (packed_launcher.member_logs): Hydra's, of src/train.py
RANK_ZERO = "pytorch_lightning.utilities.rank_zero"  # Lightning's info lines


def packable(cfg: DictConfig) -> bool:
    """Whether runs of `cfg` can be members of a pack: the paper's network, by its classes (the
    feed-forward encoder and either of the paper's poolings), whatever their names, on one-hot
    inputs, with no evaluation at other lengths and no debugging key; others run alone (a task
    of token inputs puts an embedding in front, which the stacked members do not carry;
    eval.lengths runs after a run's own training; Lightning's debugging keys, config/debug.py,
    are a Trainer's, and a pack's members share one)."""
    paper = cfg.model.encoder == FUSED_ENCODER and cfg.pool.readout in PAPER_READOUTS
    one_hot = cfg.task.get("inputs", "onehot") == "onehot"
    alone = OmegaConf.select(cfg, "eval.lengths", default=None) or debug_keys(cfg.trainer)
    return paper and one_hot and not alone


def train_pack(
    cfgs: list[DictConfig], groups: ConfGroups | None = None
) -> list[dict[str, Any] | RunError]:
    """Train the runs of `cfgs` (resolved configs that differ only in choices.PACK_MEMBER_KEYS,
    each with its own run_dir) as a pack; return each run's result, or the RunError that stopped it.
    `groups`: the conf files HPARAMS lists, as `run.train` is given them.

    As `run.train` for each: a finished run is returned as it is, an unfinished one resumes from
    its last checkpoint, and one process at a time holds a run directory."""
    quiet_libraries()
    outcomes: list[dict[str, Any] | RunError | None] = [None] * len(cfgs)
    with ExitStack() as held:
        members: list[tuple[int, Member]] = []
        for i, cfg in enumerate(cfgs):
            run_dir = Path(cfg.run_dir)
            try:
                validate(cfg)
                held.enter_context(claim(run_dir))
                outcomes[i] = already_finished(cfg, run_dir)
                if outcomes[i] is None:
                    members.append((i, build_member(cfg, run_dir, len(cfgs))))
            except (RunError, ConfigError) as e:
                outcomes[i] = e if isinstance(e, RunError) else RunError(str(e))
            except Exception as e:
                line = explain(e, run_dir, saved_checkpoint(run_dir))
                outcomes[i] = RunError(line) if line is not None else fault(e, [run_dir])[0]
        by_step: dict[int | None, list[tuple[int, Member]]] = defaultdict(list)
        for i, member in members:
            by_step[member.resumed_at].append((i, member))
        for group in by_step.values():
            results = fit_pack([member for _, member in group], groups or ConfGroups())
            for (i, _), result in zip(group, results, strict=True):
                outcomes[i] = result
    return outcomes  # type: ignore[return-value]


@contextmanager
def quiet(name: str) -> Iterator[None]:
    """Only warnings from logger `name` inside."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def build_member(cfg: DictConfig, run_dir: Path, pack_size: int) -> Member:
    """A member's parts, assembled as a run's alone (training/parts.py), with a Trainer of its
    own that is never fitted: its callbacks, logger and checkpoints."""
    parts = assemble(cfg, members=pack_size)
    own = [c for c in parts.callbacks if not isinstance(c, DeferSignal)]  # the pack's: one process
    with quiet(RANK_ZERO):  # the pack's Trainer says once what hardware it found
        trainer = run_trainer(
            cfg, own, parts.logger, enable_progress_bar=False, enable_model_summary=False
        )
    optimizer, schedule = parts.module.make_optimizer()
    attach_unfitted(trainer, parts.module, optimizer, schedule)
    say = MemberLog(log, run_dir)
    return Member(
        cfg,
        run_dir,
        parts.module,
        optimizer,
        parts.callbacks,
        parts.logger,
        trainer,
        parts.ckpt,
        parts.resumed_at,
        say,
    )


def fit_pack(members: list[Member], groups: ConfGroups) -> list[dict[str, Any] | RunError]:
    """Fit members that stand at the same update (all fresh, or all resumed from there)."""
    first = members[0].cfg
    seeds = sorted({m.cfg.seed for m in members})
    for index, member in enumerate(members):
        member.index, member.stream = index, seeds.index(member.cfg.seed)
    streams = [
        instantiate_named(next(m.cfg for m in members if m.cfg.seed == s).data) for s in seeds
    ]
    data = PackData(streams)
    vectorise = OmegaConf.select(first, "launcher.vectorise", default=AUTO)
    fixed = first.data.name == "fixed"  # every seed's batches of one shape
    module = PackModule([m.module for m in members], [m.stream for m in members], vectorise, fixed)
    for member in members:  # a stacked member's tensors are views: saved as their own
        member.trainer.callbacks.append(OwnTensors())
    module.optimizer = PackOptimizer([m.optimizer for m in members], module)
    hooks = MemberHooks(members, module)
    pack_level = [c for c in run_callbacks(first) if isinstance(c, DeferSignal)]
    trainer = run_trainer(
        first,
        [hooks, *pack_level],
        PackLogger(members) if first.logger else False,
        max_epochs=max(m.max_epochs for m in members),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    for member in members:
        member.trainer.fit_loop = trainer.fit_loop  # the member's counters are the pack's
        member.result = open_record(
            member.cfg, member.module, member.run_dir, member.ckpt, member.resumed_at
        )
        start_session(member.logger, member.cfg, member.result, groups)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pack-") as where:
        ckpt = None if members[0].ckpt is None else restore(members, module, Path(where))
        try:
            trainer.fit(module, datamodule=data, ckpt_path=ckpt, weights_only=True)
        except BaseException as e:
            return record_pack_failure(members, trainer, e, time.perf_counter() - started)
    for member in members:  # none is left unended: MemberHooks.on_train_end ends the rest
        assert member.state == ENDED, member.run_dir
    return [m.result for m in members]


def restore(members: list[Member], module: PackModule, where: Path) -> Path:
    """Load each member's own last checkpoint into its callbacks, and write the pack's (the
    members' weights and optimizer states, the loop's counters, the same in each) for
    `Trainer.fit(ckpt_path=...)`; return its path."""
    loaded = [load_checkpoint(m.ckpt) for m in members]
    for member, ckpt in zip(members, loaded, strict=True):
        load_callback_states(member.trainer, ckpt)
        if member.module.schedule is not None:  # as Trainer.fit restores a run's alone
            member.module.schedule.load_state_dict(ckpt["lr_schedulers"][0])
    pack = dict(loaded[0])
    pack["state_dict"] = {
        f"members.{i}.{k}": v
        for i, ckpt in enumerate(loaded)
        for k, v in ckpt["state_dict"].items()
    }
    pack["optimizer_states"] = [{"members": [c["optimizer_states"][0] for c in loaded]}]
    pack["callbacks"], pack["lr_schedulers"] = {}, []  # the members' own, loaded above
    path = where / "pack.ckpt"
    torch.save(pack, path)
    return path


def record_pack_failure(
    members: list[Member], trainer: L.Trainer, error: BaseException, seconds: float
) -> list[dict[str, Any] | RunError]:
    """Record every member that `error` stopped as `run.fit` records a run, then raise it again
    (a SIGTERM's exit as `interrupted`), or return its one line for each
    (longterm.training.faults)."""
    exit_: SystemExit | None = None
    for member in members:
        if member.state == ENDED:
            continue
        counts = outcome(
            member.callbacks, trainer.current_epoch, trainer.global_step, trainer.interrupted
        )
        try:
            ended = partial(end_session, member.logger)
            record_failure(member.result, counts, error, seconds, ended)
        except SystemExit as e:
            exit_ = exit_ or e
    if exit_ is not None:
        raise exit_ from error
    if not isinstance(error, Exception):
        raise error
    line = explain(error, members[0].run_dir, saved_checkpoint(members[0].run_dir))
    stopped = [m for m in members if m.state != ENDED]
    lines = [RunError(line)] * len(stopped) if line else fault(error, [m.run_dir for m in stopped])
    failed = dict(zip(stopped, lines, strict=True))
    return [failed.get(m, m.result) for m in members]


def fault(error: Exception, run_dirs: list[Path]) -> list[RunFailed]:
    """The lines of the runs of `run_dirs` that a fault of the code stopped (a plugin's, say),
    its traceback logged once, on the console and in each run's train.log (the launcher's
    handler, packed_launcher.MemberFiles); the other runs and packs go on."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        raise error
    members = tuple(str(d) for d in run_dirs)
    log.error(f"{type(error).__name__} in a pack", exc_info=error, extra={"member": members})
    return [RunFailed(failure_line(error, d, d / LOG_FILE)) for d in run_dirs]
