"""`launcher=packed`: the jobs of a multirun that differ only in `lr`, `seed` and
`trainer.max_epochs` train as the members of packs, one process per pack (longterm.sweeps.pack), and
packs run side by side as under `launcher=parallel` (conf/launcher/packed.yaml).

- Grouping: jobs whose other overrides are the same form a group; a group whose config is not
  the paper's network (longterm.sweeps.pack.packable) runs job by job, as under launcher=parallel,
  and the sweep says so in one line.
- Packs: a group is cut into packs of at most `members` members, in seed order (members of one
  seed share their batches); `auto` cuts the groups into as many packs as there are CPUs to fill,
  and no more.
- Each member is prepared by Hydra's own `run_job`, so its run directory, `.hydra/` files and
  JobReturn are those of the job run alone; its log lines go to its own train.log (and the pack's
  lines that are no member's to every member's). Then the pack trains.
"""

import logging
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job, setup_globals
from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.longterm_launcher.parallel_launcher import (
    ParallelLauncher,
    budget,
    job_config,
    key_of,
    run_one,
    side_by_side_jobs,
    usable_cpus,
    with_budget,
)
from longterm.choices import AUTO, PACK_MEMBER_KEYS

log = logging.getLogger(__name__)


def group_key(overrides: Sequence[str]) -> tuple[str, ...]:
    """What the jobs of one pack share: their overrides but those of PACK_MEMBER_KEYS."""
    return tuple(sorted(o for o in overrides if key_of(o) not in PACK_MEMBER_KEYS))


def seed_of(overrides: Sequence[str]) -> str:
    return next((o.split("=", 1)[1] for o in overrides if key_of(o) == "seed"), "")


def cut(indices: list[int], size: int) -> list[list[int]]:
    """`indices` in consecutive packs of at most `size` members, as even as can be."""
    n = math.ceil(len(indices) / size)
    return [indices[k * len(indices) // n : (k + 1) * len(indices) // n] for k in range(n)]


def pack_size(members: int | str, groups: list[list[int]], at_once: int, singles: int = 0) -> int:
    """The most members of a pack: `members`, or under `auto` the fewest packs that keep
    `at_once` processes busy beside `singles` single jobs (one pack per group once the groups
    do)."""
    if members != AUTO:
        return int(members)
    largest = max(len(g) for g in groups)
    return max(1, math.ceil(largest / max(1, math.ceil((at_once - singles) / len(groups)))))


def resolved(cfg: DictConfig) -> DictConfig:
    """A job's config with every interpolation resolved (its run_dir among them), while Hydra's
    config is the job's own (run_job sets it)."""
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))


class MemberFiles(logging.Handler):
    """Each member's records to its own train.log (a record's `member`: its run directory, or a
    tuple of them); the pack's other records to every one."""

    def __init__(self, paths: dict[str, Path], formatter: logging.Formatter | None):
        super().__init__()
        self.files = {member: path.open("a") for member, path in paths.items()}
        self.setFormatter(formatter or logging.Formatter())

    def emit(self, record: logging.LogRecord) -> None:
        member = getattr(record, "member", None)
        members = (member,) if isinstance(member, str) else member
        line = self.format(record) + "\n"
        for name, f in self.files.items():
            if members is None or name in members:
                f.write(line)
                f.flush()

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        super().close()


def member_logs(config: DictConfig, cfgs: list[DictConfig]) -> MemberFiles:
    """Logging for a pack: Hydra's job logging (its console handler), with the file handler
    replaced by one train.log per member."""
    configure_log(config.hydra.job_logging, config.hydra.verbose)
    root = logging.getLogger()
    files = [h for h in root.handlers if isinstance(h, logging.FileHandler)]
    for handler in files:
        root.removeHandler(handler)
        handler.close()
    log_name = Path(files[0].baseFilename).name if files else "train.log"
    paths = {cfg.run_dir: Path(cfg.run_dir) / log_name for cfg in cfgs}
    handler = MemberFiles(paths, files[0].formatter if files else None)
    root.addHandler(handler)
    return handler


def run_pack(
    jobs: list[tuple[int, Sequence[str]]],
    hydra_context: HydraContext,
    config: DictConfig,
    singleton_state: dict[Any, Any],
) -> tuple[list[JobReturn], list[str]]:
    """One pack in a worker process: each member prepared by Hydra's run_job, then
    trained together (longterm.sweeps.pack.train_pack); the JobReturns, and the one-line errors."""
    setup_globals()
    Singleton.set_state(singleton_state)
    returns = []
    for idx, overrides in jobs:
        sweep_config = job_config(hydra_context, config, idx, overrides)
        returns.append(
            run_job(
                hydra_context=hydra_context,
                task_function=resolved,
                config=sweep_config,
                job_dir_key="hydra.sweep.dir",
                job_subdir_key="hydra.sweep.subdir",
                configure_logging=False,
            )
        )
    cfgs = [ret.return_value for ret in returns]
    handler = member_logs(sweep_config, cfgs)
    # torch and Lightning load in the process that trains
    from longterm.sweeps.pack import fault, train_pack
    from longterm.training.faults import RunError
    from longterm.training.tensorboard import on_search_path

    errors = []
    try:  # what the runs need of Hydra is handed to them: the conf files HPARAMS lists
        outcomes = train_pack(cfgs, on_search_path(hydra_context.config_loader))
    except Exception as e:  # a fault of the code before or around training: every member stops
        outcomes = fault(e, [Path(cfg.run_dir) for cfg in cfgs])
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    for ret, outcome in zip(returns, outcomes, strict=True):
        if isinstance(outcome, RunError):
            if os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise outcome
            print(f"error: {outcome}", file=sys.stderr, flush=True)
            errors.append(str(outcome))
            ret.return_value = None
        else:
            ret.return_value = outcome["best_acc"]
        ret.status = JobStatus.COMPLETED
    return returns, errors


def is_packable(hydra_context: HydraContext, config: DictConfig, overrides: Sequence[str]) -> bool:
    """Whether a job's config is the paper's network (longterm.sweeps.pack.packable)."""
    from longterm.sweeps.pack import packable

    cfg = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    return packable(cfg)


def plan_packs(
    job_overrides: Sequence[Sequence[str]],
    hydra_context: HydraContext,
    config: DictConfig,
    members: int | str,
    at_once: int | None,
) -> tuple[list[list[int]], list[list[int]], int]:
    """The jobs (their indices) cut into packs, the groups that run job by job (not the paper's
    network), and the most members of a pack (pack_size, `at_once` processes to fill; None: no
    bound, as on a cluster, where `auto` makes a pack of each group). Says in one line how many
    jobs run alone."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, overrides in enumerate(job_overrides):
        groups.setdefault(group_key(overrides), []).append(i)
    packed, alone = [], []
    for indices in groups.values():
        first = job_overrides[indices[0]]
        (packed if is_packable(hydra_context, config, first) else alone).append(indices)
    if alone:
        n = sum(map(len, alone))
        log.info(f"{n} jobs are not of the paper's network and run one by one")
    singles = sum(map(len, alone))
    if not packed:
        size = 1
    elif at_once is None and members == AUTO:
        size = max(map(len, packed))
    else:
        size = pack_size(members, packed, at_once or 1, singles)
    packs = [
        pack
        for indices in packed
        for pack in cut(sorted(indices, key=lambda i: (seed_of(job_overrides[i]), i)), size)
    ]
    return packs, alone, size


class PackedLauncher(ParallelLauncher):
    def __init__(
        self, jobs: int | str = AUTO, threads: int | str = AUTO, members: int | str = AUTO
    ):
        super().__init__(jobs, threads)
        self.members = members

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> list[JobReturn]:
        sweep_dir = self.start_sweep()
        assert self.config is not None and self.hydra_context is not None
        cpus = usable_cpus()
        at_once = cpus if self.jobs == AUTO else int(self.jobs)
        packs, alone, size = plan_packs(
            job_overrides, self.hydra_context, self.config, self.members, at_once
        )
        units = len(packs) + sum(map(len, alone))
        jobs, threads = budget(self.jobs, self.threads, units, cpus)
        log.info(
            f"{len(job_overrides)} jobs: {len(packs)} packs of at most {size} members"
            + (f" and {units - len(packs)} single jobs" if alone else "")
            + f", {jobs} at a time with {threads} threads each ({cpus} CPUs): {sweep_dir}"
        )
        state = Singleton.get_state()

        def job(i: int) -> tuple[int, Sequence[str]]:
            return initial_job_idx + i, with_budget(job_overrides[i], jobs, threads)

        calls: list[tuple[Callable, tuple]] = [
            (run_pack, ([job(i) for i in pack], self.hydra_context, self.config, state))
            for pack in packs
        ] + [
            (run_one, (*job(i), self.hydra_context, self.config, self.task_function, state))
            for indices in alone
            for i in indices
        ]
        units = [*packs, *([i] for indices in alone for i in indices)]
        returns = side_by_side_jobs(calls, units, job_overrides, initial_job_idx, jobs, threads)
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        return returns


@dataclass
class PackedLauncherConf:
    _target_: str = "hydra_plugins.longterm_launcher.packed_launcher.PackedLauncher"
    jobs: Any = AUTO
    threads: Any = AUTO
    members: Any = AUTO


ConfigStore.instance().store(
    group="hydra/launcher", name="packed", node=PackedLauncherConf, provider="longterm"
)
