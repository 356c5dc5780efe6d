"""`launcher=parallel`: the jobs of a multirun side by side on this machine, at most `jobs` at a
time, each with `threads` CPU threads (conf/launcher/parallel.yaml).

Each job runs through Hydra's public `run_job`, its config made as Hydra's own launchers make it
(run_one), in a process forked from this one (processes.py), so a job writes its run directory,
logs and result.json as under `launcher=local`, and its lines reach this terminal. On top of that:
- a budget: `auto` jobs fill the CPUs this process may use (os.sched_getaffinity), one per CPU
  or `threads` CPUs each, never more than the sweep has, and `auto` threads split those CPUs
  evenly between the jobs that run at once;
- the budget reaches each job as its overrides `launcher.jobs=N launcher.threads=K` (left out of
  the job's name, conf/hydra/default.yaml), where longterm.training.run sets torch's and OpenMP's
  threads and gives the job its share of the memory; the workers also start with OMP_NUM_THREADS=K;
- a job that stopped with a one-line error (src/train.py), or whose process ended without its
  result, is counted in this process, so the sweep ends with its table and exits non-zero as
  under `launcher=local` (longterm.sweeps.multirun.JobsTable);
- a sweep stopped by a signal stops its jobs, records them as interrupted, says so in one line
  and leaves no process behind (processes.py); the same command resumes it.

On a GPU the jobs share the device: several small runs keep it busier than one.
"""

import functools
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

# the module, not its names: Hydra's plugin scan executes it again in place, making new classes
from hydra_plugins.longterm_launcher import processes
from longterm.choices import AUTO
from longterm.sweeps.failures import FAILURES

log = logging.getLogger(__name__)

# The overrides by which a job learns its share of the machine.
BUDGET_KEYS = ("launcher.jobs", "launcher.threads")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a cluster's cgroup also sets)."""
    return len(os.sched_getaffinity(0))


def budget(jobs: int | str, threads: int | str, n_jobs: int, cpus: int) -> tuple[int, int]:
    """(jobs at a time, threads per job) for a sweep of `n_jobs` jobs on `cpus` CPUs: `auto` jobs
    fill the CPUs (with `threads` each where given), `auto` threads share them out."""
    if jobs == AUTO:
        jobs = cpus // (1 if threads == AUTO else int(threads))
    at_once = max(1, min(int(jobs), n_jobs))
    return at_once, max(1, cpus // at_once) if threads == AUTO else int(threads)


def key_of(override: str) -> str:
    """The key an override sets, without its + or ~."""
    return override.split("=", 1)[0].lstrip("+~")


def with_budget(overrides: Sequence[str], jobs: int, threads: int) -> list[str]:
    """A job's overrides with its budget in place of any the command line gave."""
    kept = [o for o in overrides if key_of(o) not in BUDGET_KEYS]
    return [*kept, f"launcher.jobs={jobs}", f"launcher.threads={threads}"]


@contextmanager
def thread_environment(threads: int) -> Iterator[None]:
    """OMP_NUM_THREADS and MKL_NUM_THREADS for the worker processes started inside."""
    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def job_config(
    hydra_context: HydraContext, config: DictConfig, idx: int, overrides: Sequence[str]
) -> DictConfig:
    """Job `idx`'s config, as Hydra's launchers make it: the sweep's config loaded with the job's
    overrides, its `hydra.job.id` (`<job name>_<idx>`, as hydra-joblib-launcher's) and
    `hydra.job.num`; Hydra's config of this process set to it."""
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    HydraConfig.instance().set_config(sweep_config)
    return sweep_config


@dataclass
class Failed:
    """A job whose task raised (past src/train.py's one-line errors): its JobReturn and what it
    raised, which the JobReturn keeps where only its getter, raising it, reaches it."""

    ret: JobReturn
    error: Exception


def run_one(
    idx: int,
    overrides: Sequence[str],
    hydra_context: HydraContext,
    config: DictConfig,
    task_function: TaskFunction,
    singleton_state: dict[Any, Any],
) -> tuple[JobReturn | Failed, list[str]]:
    """Job `idx` in a worker, with Hydra's globals and state as in the launching process, through
    Hydra's run_job as its basic launcher runs a job: its JobReturn (Failed where its task
    raised), and the one-line errors it stopped with."""
    setup_globals()
    Singleton.set_state(singleton_state)
    before = FAILURES.mark()
    raised: list[Exception] = []

    @functools.wraps(task_function)
    def task(cfg: DictConfig) -> Any:
        try:
            return task_function(cfg)
        except Exception as e:  # run_job records the job failed with it
            raised.append(e)
            raise

    ret = run_job(
        hydra_context=hydra_context,
        config=job_config(hydra_context, config, idx, overrides),
        task_function=task,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
    failed = ret.status == JobStatus.FAILED and raised
    return Failed(ret, raised[-1]) if failed else ret, FAILURES.since(before)


def job_label(indices: list[int], job_overrides: Sequence[Sequence[str]], first: int) -> str:
    """`job #3 (lr=1e-3 seed=1)`, or `jobs #3, #4 (a pack)`, as Hydra numbers them."""
    if len(indices) == 1:
        i = indices[0]
        return f"job #{first + i} ({' '.join(job_overrides[i])})"
    return f"jobs {', '.join(f'#{first + i}' for i in indices)} (a pack)"


def reason(error: BaseException) -> str:
    """Why a job ended without its result, in one line."""
    if isinstance(error, SystemExit | ChildProcessError):
        return str(error)
    first = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {first}"


def settled(ret: JobReturn | Failed, label: str) -> JobReturn:
    """`ret`'s JobReturn; a job that raised (past src/train.py) said in one line and counted as
    stopped, so that the sweep still ends with its table."""
    if isinstance(ret, Failed):
        FAILURES.tell(f"{label} failed: {reason(ret.error)}")
        ret = ret.ret
        ret.status, ret.return_value = JobStatus.COMPLETED, None
    return ret


def side_by_side_jobs(
    calls: list[tuple[Callable, tuple]],
    units: list[list[int]],
    job_overrides: Sequence[Sequence[str]],
    first: int,
    jobs: int,
    threads: int,
) -> list[JobReturn]:
    """Run `calls` side by side (processes.side_by_side), `units[k]` the jobs (their indices in
    `job_overrides`) that call k runs; each job's JobReturn. A job that ended without its result
    is said in one line; a stopped sweep is recorded as such (sweeps/failures.py)."""
    stop = processes.Stop()
    with thread_environment(threads), stop.installed():
        done = processes.side_by_side(calls, jobs, stop)
    returns: dict[int, JobReturn] = {}
    interrupted = not_started = 0
    for result, unit in zip(done, units, strict=True):
        label = job_label(unit, job_overrides, first)
        if isinstance(result, processes.Unfinished):
            for i in unit:
                returns[i] = JobReturn(overrides=list(job_overrides[i]), status=JobStatus.COMPLETED)
            if result.error is None:
                not_started += len(unit)
            elif stop:
                interrupted += len(unit)
            else:
                them = "them" if len(unit) > 1 else "it"
                FAILURES.tell(
                    f"{label} ended without its result: {reason(result.error)}; rerun the "
                    f"same command to resume {them}"
                )
            continue
        value, lines = result
        FAILURES.report(*lines)
        for i, ret in zip(unit, value if isinstance(value, list) else [value], strict=True):
            returns[i] = settled(ret, job_label([i], job_overrides, first))
    if stop:
        FAILURES.stopped(stop.name, interrupted, not_started)
    return [returns[i] for i in range(len(job_overrides))]


class ParallelLauncher(Launcher):
    def __init__(self, jobs: int | str = AUTO, threads: int | str = AUTO) -> None:
        self.jobs, self.threads = jobs, threads
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def start_sweep(self) -> Path:
        """Hydra's globals and logging set up for a sweep, and its directory made."""
        assert self.config is not None and self.hydra_context is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        return sweep_dir

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> list[JobReturn]:
        sweep_dir = self.start_sweep()
        cpus = usable_cpus()
        jobs, threads = budget(self.jobs, self.threads, len(job_overrides), cpus)
        log.info(
            f"{len(job_overrides)} jobs, {jobs} at a time with {threads} threads each "
            f"({cpus} CPUs): {sweep_dir}"
        )
        state = Singleton.get_state()
        calls: list[tuple[Callable, tuple]] = [
            (
                run_one,
                (
                    initial_job_idx + i,
                    with_budget(overrides, jobs, threads),
                    self.hydra_context,
                    self.config,
                    self.task_function,
                    state,
                ),
            )
            for i, overrides in enumerate(job_overrides)
        ]
        units = [[i] for i in range(len(job_overrides))]
        return side_by_side_jobs(calls, units, job_overrides, initial_job_idx, jobs, threads)


@dataclass
class ParallelLauncherConf:
    _target_: str = "hydra_plugins.longterm_launcher.parallel_launcher.ParallelLauncher"
    jobs: Any = AUTO
    threads: Any = AUTO


ConfigStore.instance().store(
    group="hydra/launcher", name="parallel", node=ParallelLauncherConf, provider="longterm"
)
