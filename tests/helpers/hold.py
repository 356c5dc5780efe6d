"""Signalling a run part-way through at any speed: the run waits as its second epoch starts
(tests/plugins/hold.py, brought in by HOLD with tests/plugins on its PYTHONPATH: paths.PLUGINS)
until its run directory holds a file named `release`. A test waits until the run is held, signals
it, waits until the run has logged the signal as received, then releases it: the signal finds the
run with most of its epochs ahead of it, however fast the machine trains."""

from pathlib import Path

from helpers.configs import composed

HOLD = "+callbacks.hold._target_=hold.HoldAfterFirstEpoch"


def unnamed() -> str:
    """The override of Hydra's config that leaves HOLD out of a sweep job's directory name, as the
    keys that say how a job runs are left out (conf/hydra/default.yaml): the job is named as the
    same run without HOLD, and its checkpoints name the same paths."""
    keys = [*composed(with_hydra=True).hydra.job.config.override_dirname.exclude_keys]
    keys.append(HOLD.lstrip("+").split("=", 1)[0])
    return f"hydra.job.config.override_dirname.exclude_keys=[{','.join(keys)}]"


def said(run_dir: Path, text: str) -> bool:
    """Whether the run's train.log has `text` (a pack's own lines go to each member's)."""
    log = run_dir / "train.log"
    return log.is_file() and text in log.read_text()


def is_held(run_dir: Path) -> bool:
    return said(run_dir, "held after the first epoch")


def has_received(run_dir: Path, signal: str = "SIGUSR2") -> bool:
    """Whether the run has logged `signal` as received (training/callbacks.py: DeferSignal)."""
    return said(run_dir, f"{signal} received;")


def release(run_dir: Path) -> None:
    (run_dir / "release").touch()  # tests/plugins/hold.py: RELEASE
