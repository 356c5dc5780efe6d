"""Run directory names that tell runs apart at a glance: the settings a sweep usually varies come
first, short, then the job's other overrides (conf/hydra/default.yaml).

    outputs/runs/2026-11-30_21-13-26.123456-addition-attention-T50-lr1e-3-s0    one run
    <sweep dir>/addition-attention-T50-lr1e-3-s1                                a sweep's job
    <sweep dir>/temporal_order-lstm-last-T100-lr3e-3-s1,trainer.max_epochs=20
    <sweep dir>/addition-mean-var50-10000-lr1e-3-s1

The short part is task, model (left out for the paper's feed-forward network), pool, the lengths
(`T<T0>`, `var<min>-<max>` for data=variable, the MAD setting for data=mad: `baseline`,
`vocab_size_32`), `lr<lr>` and `s<seed>`, read from the composed
config. A job's other overrides (except the keys that say where or how it runs, the `exclude_keys`
of `hydra.job.config.override_dirname`) follow it, sorted, so two jobs never share a directory and
the same command maps each job to the same directory every time. A sweep directory made before
this scheme keeps its jobs' old names (Hydra's `override_dirname`), so rerunning its command
still resumes them.

Importing this module registers the resolvers `${run_name:}` (the short part), `${job_name:}`
(a sweep job's whole name) and `${debug_dir:}` (`debug/` for a run with Lightning's debugging
keys, which so goes under outputs/debug/: config/debug.py); `longterm.config.command_line`, which
src/train.py imports, does so before Hydra composes. Hydra hands the registered resolvers to the
job processes a launcher starts (submitit).
"""

import hashlib
from decimal import Decimal
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from longterm.config.debug import debug_dir

DEFAULT_MODEL = "feedforward"  # the paper's network: not named
MAX_NAME = 200  # characters; beyond it the other overrides are replaced by a digest of them


def number(x: float) -> str:
    """The shortest exact scientific form: 1e-3 for 0.001, 3e-4, 1.5e-3, 1e30."""
    _, digits, exponent = Decimal(repr(float(x))).normalize().as_tuple()
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    return f"{mantissa}e{exponent + len(digits) - 1}"


def short_name(cfg: DictConfig) -> str:
    """task[-model]-pool-lengths-lr-seed, e.g. `addition-attention-T50-lr1e-3-s1`."""
    model = [] if cfg.model.name == DEFAULT_MODEL else [cfg.model.name]
    lengths = f"T{cfg.T0}"
    if cfg.data.name == "variable":
        lengths = f"var{cfg.data.min_length}-{cfg.data.max_length}"
    elif cfg.data.name == "mad":
        lengths = cfg.task.setting
    parts = [cfg.task.name, *model, cfg.pool.name, lengths, f"lr{number(cfg.lr)}", f"s{cfg.seed}"]
    return "-".join(str(p) for p in parts)


def named_keys(cfg: DictConfig) -> set[str]:
    """The override keys whose values the short name shows."""
    lengths = {"T0"}
    if cfg.data.name == "variable":
        lengths = {"data.min_length", "data.max_length"}
    elif cfg.data.name == "mad":
        lengths = {"task.setting"}
    return {"task", "model", "pool", "arch", "data", "lr", "seed", *lengths}


def other_overrides(cfg: DictConfig) -> list[str]:
    """The job's overrides that the short name does not show, sorted; `/` becomes `_`."""
    excluded = set(cfg.hydra.job.config.override_dirname.exclude_keys) | named_keys(cfg)
    kept = [o for o in cfg.hydra.overrides.task if o.split("=", 1)[0].lstrip("+~") not in excluded]
    return sorted(o.replace("/", "_") for o in kept)


def job_name(cfg: DictConfig) -> str:
    """A sweep job's directory name: the short name, then its other overrides."""
    legacy = cfg.hydra.job.override_dirname
    if legacy and (Path(cfg.hydra.sweep.dir) / legacy).is_dir():
        return legacy
    short, rest = short_name(cfg), ",".join(other_overrides(cfg))
    if rest and len(short) + 1 + len(rest) > MAX_NAME:
        rest = "overrides-" + hashlib.sha256(rest.encode()).hexdigest()[:12]
    return f"{short},{rest}" if rest else short


def register() -> None:
    """Make `${run_name:}`, `${job_name:}` and `${debug_dir:}` resolvable (idempotent)."""
    OmegaConf.register_new_resolver("run_name", lambda *, _root_: short_name(_root_), replace=True)
    OmegaConf.register_new_resolver("job_name", lambda *, _root_: job_name(_root_), replace=True)
    OmegaConf.register_new_resolver("debug_dir", lambda *, _root_: debug_dir(_root_), replace=True)


register()
