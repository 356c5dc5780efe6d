"""`launcher=parallel`: the jobs of a multirun side by side on this machine, at most `jobs` at a
time, each with `threads` CPU threads (conf/launcher/parallel.yaml).

An engine that exists does the work: hydra-joblib-launcher runs each job through Hydra's
`run_job` in a loky worker process, so a job writes its run directory, logs and result.json as
under `launcher=local`, and its lines reach this terminal. This subclass adds what a sweep of
training runs needs on top:
- a budget: `auto` jobs fill the CPUs this process may use (os.sched_getaffinity), one per CPU
  or `threads` CPUs each, never more than the sweep has, and `auto` threads split those CPUs
  evenly between the jobs that run at once;
- the budget reaches each job as its overrides `launcher.jobs=N launcher.threads=K` (left out of
  the job's name, conf/hydra/default.yaml), where longterm.training.run sets torch's and OpenMP's
  threads and gives the job its share of the memory; the workers also start with OMP_NUM_THREADS=K;
- a job that stopped with a one-line error (src/train.py) is counted in this process, so the sweep
  ends with its table and exits non-zero as under `launcher=local`
  (longterm.sweeps.multirun.JobsTable).

On a GPU the jobs share the device: several small runs keep it busier than one.
"""

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, setup_globals
from hydra_plugins.hydra_joblib_launcher._core import execute_job
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from joblib import Parallel, delayed

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


def run_one(*args: Any) -> tuple[JobReturn, list[str]]:
    """One job in a worker: its JobReturn, and the one-line errors it stopped with."""
    before = FAILURES.mark()
    ret = execute_job(*args)
    return ret, FAILURES.since(before)


class ParallelLauncher(JoblibLauncher):
    def __init__(self, jobs: int | str = AUTO, threads: int | str = AUTO) -> None:
        super().__init__()
        self.jobs, self.threads = jobs, threads

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
        with thread_environment(threads):
            # one job per dispatch: jobs are long, and each should start as soon as a worker frees
            done = Parallel(n_jobs=jobs, backend="loky", batch_size=1)(
                delayed(run_one)(
                    initial_job_idx + i,
                    with_budget(overrides, jobs, threads),
                    self.hydra_context,
                    self.config,
                    self.task_function,
                    state,
                )
                for i, overrides in enumerate(job_overrides)
            )
        for _, lines in done:
            FAILURES.report(*lines)
        return [ret for ret, _ in done]


@dataclass
class ParallelLauncherConf:
    _target_: str = "hydra_plugins.longterm_launcher.parallel_launcher.ParallelLauncher"
    jobs: Any = AUTO
    threads: Any = AUTO


ConfigStore.instance().store(
    group="hydra/launcher", name="parallel", node=ParallelLauncherConf, provider="longterm"
)
