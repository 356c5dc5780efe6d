"""Lightning's debugging keys: which of them a run sets, the directory a debug run goes to, and
the directory check that keeps a debug run out of a real run's directory.

`trainer.fast_dev_run`, `trainer.limit_train_batches`, `trainer.limit_val_batches` and
`trainer.overfit_batches` (conf/trainer/default.yaml; `debug=fast|overfit|limit` sets them,
conf/debug/) train on less than the run's data. A run with any of them away from its default is a
debug run:
- alone, it goes under `outputs/debug/runs/` (`${debug_dir:}` in conf/hydra/default.yaml); in a
  sweep, into the sweep's directory (one for all its jobs) under a name that shows its debug
  override; a real run's directory given explicitly is refused (`debug_conflict`);
- it records `status: debug` when it ends, with the keys in result.json's `debug`, from its start
  on (training/result.py), so it is never counted as finished: the next run in its directory
  trains from the start (store/run_dir.py: clear_debug_run) and the collector leaves it out;
- it writes no HPARAMS session (training/tensorboard.py) and trains alone under the packed
  launchers (sweeps/pack.py: packable).
"""

from pathlib import Path
from typing import Any

from longterm.store.run_dir import CHECKPOINTS, debug_run, run_record

# Each key's default, Lightning's: what a run that sets none trains on.
DEBUG_KEYS: dict[str, Any] = {
    "fast_dev_run": False,
    "limit_train_batches": None,
    "limit_val_batches": None,
    "overfit_batches": 0,
}


def is_default(key: str, value: Any) -> bool:
    """Whether `value` of the debugging key `key` trains on all the run's data: fast_dev_run
    false (or 0), no limit or a limit of 1.0 (all batches; the integer 1 is one batch), no
    batches overfitted."""
    if key.startswith("limit_"):
        return value is None or (type(value) is float and value == 1.0)
    return value is False or (type(value) in (int, float) and value == 0)


def debug_keys(trainer: Any) -> dict[str, Any]:
    """The debugging keys that a trainer section (a run's `cfg.trainer`, a mapping) sets away
    from their defaults, e.g. {"fast_dev_run": True}; {} for a real run."""
    trainer = trainer or {}
    found = {key: trainer.get(key, default) for key, default in DEBUG_KEYS.items()}
    return {key: value for key, value in found.items() if not is_default(key, value)}


def debug_line(keys: dict[str, Any]) -> str:
    """The debugging keys as a command line gives them: `trainer.fast_dev_run=True`."""
    return " ".join(f"trainer.{key}={value}" for key, value in keys.items())


def debug_dir(root: Any) -> str:
    """`${debug_dir:}` of conf/hydra/default.yaml's run directory: `debug/` for a debug run,
    which so goes under outputs/debug/runs/, else nothing."""
    return "debug/" if debug_keys(root.get("trainer")) else ""


def debug_conflict(cfg: Any, run_dir: Path) -> str | None:
    """Why the debug run of `cfg` may not run in `run_dir` (one line), or None when it may (or
    `cfg` is no debug run): the directory holds a real run's record, or checkpoints and no
    record (a real run killed before it wrote one; a debug run records itself from its start)."""
    keys = debug_keys(cfg.get("trainer"))
    if not keys:
        return None
    result = run_record(run_dir)
    if result is not None and not debug_run(result):
        held = f"a run that is no debug run (status {result.get('status')})"
    elif result is None and any((run_dir / CHECKPOINTS).glob("*.ckpt")):
        held = "the checkpoints of a run that is no debug run"
    else:
        return None
    return (
        f"{run_dir} holds {held}: a debug run ({debug_line(keys)}) never writes into a real "
        "run's directory; give it another, or leave hydra.run.dir out (a debug run goes under "
        "outputs/debug/runs/)"
    )
