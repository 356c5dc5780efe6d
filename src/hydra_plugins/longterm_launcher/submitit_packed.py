"""`launcher=slurm` and `launcher=submitit_local` with `launcher.members` above 1 (or `auto`):
packs inside cluster jobs. The jobs of a sweep that differ only in `lr`, `seed` and
`trainer.max_epochs` train as the members of a pack (longterm.sweeps.pack), one submitit job per
pack, grouped as `launcher=packed` groups them on one machine (packed_launcher.plan_packs); `auto`
puts each cell in one job. The other jobs, and every job under `members=1` (the default), go one per
submitit job, as hydra-submitit-launcher sends them (this class is its launcher, with packs on
top).

A pack's job is requeued as a run's is: SIGUSR2 (the time limit near, or a preemption) runs
submitit's handler at the pack's next batch boundary (longterm.training.callbacks.DeferSignal, one
per pack), which calls SubmititPack.checkpoint: the same pack is submitted again and each member
resumes from its own last checkpoint, as the same job run alone would.

A job's one-line errors are said in its own process, whose terminal is its submitit log: each job,
a pack's or a single run's, returns them with its JobReturns, and the launching process says them
and counts them (longterm.sweeps.failures), so that a sweep with a failed run ends with its table
and exits non-zero, as under `launcher=local`; a job whose task raised past src/train.py is said
in one line, as under `launcher=parallel`.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus
from hydra.types import HydraContext
from hydra_plugins.hydra_submitit_launcher.config import (
    BaseQueueConf,
    LocalQueueConf,
    SlurmQueueConf,
)
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import (
    BaseSubmititLauncher,
    LocalLauncher,
    SlurmLauncher,
)
from omegaconf import DictConfig, OmegaConf

# parallel_launcher: the module, not its names (its classes are made again by Hydra's plugin scan)
from hydra_plugins.longterm_launcher import parallel_launcher
from hydra_plugins.longterm_launcher.packed_launcher import plan_packs, run_pack
from longterm.choices import AUTO
from longterm.sweeps.failures import FAILURES


class SubmititPack:
    """What one submitit job of a pack runs (pickled to the node): its members, through
    packed_launcher.run_pack; returns their JobReturns and the one-line errors."""

    def __init__(self, hydra_context: HydraContext, config: DictConfig) -> None:
        self.hydra_context, self.config = hydra_context, config

    def __call__(
        self, jobs: list[tuple[int, list[str]]], singleton_state: dict[Any, Any]
    ) -> tuple[list[JobReturn], list[str]]:
        return run_pack(jobs, self.hydra_context, self.config, singleton_state)

    def checkpoint(self, *args: Any) -> Any:
        """submitit's requeue: the same pack again; its members resume from their checkpoints."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args)


def told(outcome: tuple[JobReturn, list[str]], label: str) -> JobReturn:
    """A single job's JobReturn, in the launching process: its one-line errors said and counted
    here; a task that raised past src/train.py (a FAILED JobReturn, whose getter raises what it
    raised) said in one line under `label` and counted (parallel_launcher.settled)."""
    ret, lines = outcome
    for line in lines:
        FAILURES.tell(line)
    if ret.status != JobStatus.FAILED:
        return ret
    try:
        _ = ret.return_value
    except Exception as e:
        return parallel_launcher.settled(parallel_launcher.Failed(ret, e), label)
    return ret


class PackedSubmitit(BaseSubmititLauncher):
    """A submitit launcher (its `_EXECUTOR`) that sends packs as one job each."""

    def __init__(self, members: int | str = 1, **params: Any) -> None:
        super().__init__(**params)
        self.members = members

    def __call__(self, *args: Any) -> tuple[JobReturn, list[str]]:  # type: ignore[override]
        """One run in its submitit job, as hydra-submitit-launcher runs it: its JobReturn, and
        the one-line errors it stopped with, for the launching process to say (`told`)."""
        before = FAILURES.mark()
        return super().__call__(*args), FAILURES.since(before)

    def executor(self) -> Any:
        """submitit's executor with this launcher's parameters: those every cluster takes under
        their own names, the others prefixed with the cluster's (as the plugin passes them)."""
        import submitit

        params = dict(self.params)
        init = {"folder": params.pop("submitit_folder")}
        if "max_num_timeout" in params:
            init[f"{self._EXECUTOR}_max_num_timeout"] = params.pop("max_num_timeout")
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init)
        shared = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(
            **{k if k in shared else f"{self._EXECUTOR}_{k}": v for k, v in params.items()}
        )
        return executor

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        try:
            if self.members != AUTO and int(self.members) == 1:
                outcomes: Any = super().launch(job_overrides, initial_job_idx)  # __call__'s
                return [
                    told(outcome, parallel_launcher.job_label([i], job_overrides, initial_job_idx))
                    for i, outcome in enumerate(outcomes)
                ]
            return self.launch_packs(job_overrides, initial_job_idx)
        finally:
            self.tidy()

    def tidy(self) -> None:
        """Remove the folder submitit makes of its folder's pattern itself (`.submitit/%j`, made
        before any job has an id) once the sweep leaves it empty."""
        pattern = Path(str(self.params["submitit_folder"]))
        if "%j" in pattern.name and pattern.is_dir() and not any(pattern.iterdir()):
            pattern.rmdir()

    def launch_packs(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None
        packs, alone, size = plan_packs(
            job_overrides, self.hydra_context, self.config, self.members, at_once=None
        )
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        singles = [i for indices in alone for i in indices]
        state = Singleton.get_state()
        executor = self.executor()
        pack = SubmititPack(self.hydra_context, self.config)
        with executor.batch():  # one array: the packs' jobs, then the single jobs
            pack_jobs = [
                executor.submit(
                    pack, [(initial_job_idx + i, list(job_overrides[i])) for i in members], state
                )
                for members in packs
            ]
            single_jobs = [
                executor.submit(
                    self,
                    list(job_overrides[i]),
                    "hydra.sweep.dir",
                    initial_job_idx + i,
                    f"job_id_for_{initial_job_idx + i}",
                    state,
                )
                for i in singles
            ]
        print(
            f"{len(job_overrides)} jobs: {len(packs)} packs of at most {size} members"
            + (f" and {len(singles)} single jobs" if singles else "")
            + f", one {self._EXECUTOR} job each: {self.config.hydra.sweep.dir}",
            flush=True,
        )
        returns: dict[int, JobReturn] = {}
        for members, job in zip(packs, pack_jobs, strict=True):
            member_returns, errors = job.results()[0]
            for line in errors:  # said in the job's log; said here too
                FAILURES.tell(line)
            returns.update(zip(members, member_returns, strict=True))
        for i, job in zip(singles, single_jobs, strict=True):
            label = parallel_launcher.job_label([i], job_overrides, initial_job_idx)
            returns[i] = told(job.results()[0], label)
        return [returns[i] for i in range(len(job_overrides))]


class PackedSlurmLauncher(PackedSubmitit, SlurmLauncher):
    _EXECUTOR = "slurm"


class PackedLocalLauncher(PackedSubmitit, LocalLauncher):
    _EXECUTOR = "local"


@dataclass
class PackedSlurmConf(SlurmQueueConf):
    _target_: str = "hydra_plugins.longterm_launcher.submitit_packed.PackedSlurmLauncher"
    members: Any = 1


@dataclass
class PackedLocalConf(LocalQueueConf):
    _target_: str = "hydra_plugins.longterm_launcher.submitit_packed.PackedLocalLauncher"
    members: Any = 1


ConfigStore.instance().store(
    group="hydra/launcher", name="longterm_slurm", node=PackedSlurmConf, provider="longterm"
)
ConfigStore.instance().store(
    group="hydra/launcher",
    name="longterm_submitit_local",
    node=PackedLocalConf,
    provider="longterm",
)
