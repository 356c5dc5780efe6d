"""A finished run's accuracy on each batch of its validation set, from its last checkpoint, or at
new lengths: the one analysis module that loads a model, and with it the training core and
Lightning.

For the variable-length experiment (§2.3) each validation batch has one length, so this is the
accuracy by evaluation length: `python -m longterm.analysis.evaluate <run dir>` prints it. The
mean over batches of equal size is the run's final val/acc.

A run that predicts per step (its readout's class says `per_step`, as pool=per_step's) gets its
accuracy by position instead, over the labelled steps of its validation set, and for the
algorithmic task also by the print's statement index in its program and by what last changed the
printed variable (tasks/algorithmic.py: replay); the labelled steps of each table add up to the
run's final val/acc.

`python -m longterm.analysis.evaluate <run dir> --lengths 128 256` scores the run at those T0 as
training scores eval.lengths (training/eval_lengths.py: the final weights, from its last
checkpoint, on sequences of their own seeds), records them in its result.json's eval_lengths
beside the others, and prints them all in one line; a length already scored is not scored again.
"""

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf

from longterm.analysis.arguments import at_least
from longterm.analysis.variable_length import variable_length_runs
from longterm.config.validate import ConfigError, validate
from longterm.plugins.resolve import readout_class
from longterm.store.checkpoint_files import load_checkpoint
from longterm.store.records import FINAL_STATUSES, RESULT_FILE
from longterm.store.run_dir import CHECKPOINTS, RunDirError, claim, holder, run_record
from longterm.store.upgrade import recorded_config
from longterm.tasks import NO_TARGET
from longterm.tasks.algorithmic import replay
from longterm.tasks.marked import MIN_LENGTH
from longterm.training.eval_lengths import add_lengths, lengths_line
from longterm.training.faults import RunError
from longterm.training.module import MemoryTaskModule
from longterm.training.parts import build_model, instantiate_named

log = logging.getLogger("longterm.analysis.collect")


def load_module(
    run_dir: str | Path, checkpoint: str = "last.ckpt"
) -> tuple[MemoryTaskModule, DictConfig]:
    """The run's LightningModule with the weights of `checkpoint`, in eval mode, and its
    config."""
    run_dir = Path(run_dir)
    cfg = OmegaConf.create(recorded_config(run_dir))
    module = build_model(cfg)
    state = load_checkpoint(run_dir / CHECKPOINTS / checkpoint)
    module.load_state_dict(state["state_dict"])
    return module.eval(), cfg


@torch.no_grad()
def accuracy_by_batch(run_dir: str | Path, checkpoint: str = "last.ckpt") -> pd.DataFrame:
    """One row per validation batch: `length` (its padded width), `n` sequences, `acc`."""
    module, cfg = load_module(run_dir, checkpoint)
    data = instantiate_named(cfg.data)
    rows = []
    for x, y, mask in data.validation_set():
        module.val_acc.reset()
        module.val_acc.update(module(x, mask), y.long() if module.classify else y)
        rows.append({"length": x.shape[1], "n": len(y), "acc": module.val_acc.compute().item()})
    return pd.DataFrame(rows)


def program_annotations(x: torch.Tensor, mask: torch.Tensor) -> pd.DataFrame:
    """Each print of a batch of the algorithmic task, replayed from its tokens: `sequence`,
    `position` (its labelled step), `statement` (its index in its program) and `last_write`."""
    rows = [
        (i, p.step, p.statement, p.last_write)
        for i, (tokens, keep) in enumerate(zip(x.argmax(-1), mask, strict=True))
        for p in replay(tokens[keep].tolist())
    ]
    return pd.DataFrame(rows, columns=["sequence", "position", "statement", "last_write"])


@torch.no_grad()
def step_predictions(module: MemoryTaskModule, cfg: DictConfig) -> pd.DataFrame:
    """One row per labelled step of a per-step run's validation set: `batch`, `sequence`,
    `position`, `target`, `correct`; for the algorithmic task also `statement` and
    `last_write` (program_annotations)."""
    frames = []
    for b, (x, y, mask) in enumerate(instantiate_named(cfg.data).validation_set()):
        correct = module(x, mask).argmax(-1) == y  # (B, T)
        sequence, position = torch.nonzero(y != NO_TARGET, as_tuple=True)
        frame = pd.DataFrame(
            {
                "batch": b,
                "sequence": sequence.numpy(),
                "position": position.numpy(),
                "target": y[sequence, position].numpy(),
                "correct": correct[sequence, position].numpy(),
            }
        )
        if cfg.task.name == "algorithmic":
            notes = program_annotations(x, mask)
            frame = frame.merge(notes, "left", on=["sequence", "position"], validate="1:1")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def accuracy_by(steps: pd.DataFrame, key: str) -> pd.DataFrame:
    """Accuracy over the labelled steps grouped by `key`: a row per value with `n` and `acc`."""
    grouped = steps.groupby(key).correct
    return pd.DataFrame({"n": grouped.size(), "acc": grouped.mean()}).reset_index()


def step_report(run_dir: str | Path, checkpoint: str = "last.ckpt") -> str:
    """A per-step run's accuracy by position, and for the algorithmic task by statement index
    and by what last changed the printed variable, as text."""
    module, cfg = load_module(run_dir, checkpoint)
    steps = step_predictions(module, cfg)
    keys = ["position"] + (["statement", "last_write"] if "statement" in steps else [])
    parts = [f"all labelled steps: n={len(steps)} acc={steps.correct.mean():.4f}"]
    for key in keys:
        parts.append(f"by {key}:\n" + accuracy_by(steps, key).to_string(index=False))
    return "\n\n".join(parts)


def accuracy_by_length(runs: pd.DataFrame) -> pd.DataFrame:
    """Each variable-length run's last checkpoint on the test lengths: a row per run and length
    (task, pool, lr, seed, length, n, acc); runs without a checkpoint are left out with a
    warning."""
    frames = []
    for r in variable_length_runs(runs).itertuples(index=False):
        if (Path(r.run_dir) / CHECKPOINTS / "last.ckpt").exists():
            frames.append(
                accuracy_by_batch(r.run_dir).assign(task=r.task, pool=r.pool, lr=r.lr, seed=r.seed)
            )
        else:
            log.warning(f"{r.run_dir}: no last.ckpt, left out of the accuracy by length")
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def at_lengths(
    run_dir: str | Path, lengths: Sequence[int], sequences: int | None = None
) -> dict[str, Any]:
    """The finished run in `run_dir` scored at `lengths` (training/eval_lengths.py: add_lengths),
    on `sequences` sequences each (None: as many as its eval_lengths were scored on, else its
    eval.sequences), recorded in its result.json; return the record. RunError, one line, for a
    directory in use or a run that has not finished; ConfigError for lengths its config refuses
    (a model defined for fewer steps)."""
    run_dir = Path(run_dir)
    who = holder(run_dir)
    if who is not None:
        raise RunError(f"{run_dir} is in use by {who}: wait for it to end")
    with claim(run_dir):
        result = run_record(run_dir)
        status = None if result is None else result.get("status")
        if status not in FINAL_STATUSES:
            raise RunError(
                f"{run_dir / RESULT_FILE} has status {status!r}: finish the run first (its own "
                "command resumes it), then score it at new lengths"
                if result is not None
                else f"{run_dir} holds no {RESULT_FILE}: give a finished run's directory"
            )
        cfg = OmegaConf.create(recorded_config(run_dir))
        n = sequences or result.get("eval_sequences") or OmegaConf.select(cfg, "eval.sequences")
        validate(OmegaConf.merge(cfg, {"eval": {"lengths": list(lengths), "sequences": n or 1000}}))
        return add_lengths(cfg, run_dir, result, lengths, n or 1000, asked_as="--sequences ")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run_dir")
    p.add_argument("--checkpoint", default="last.ckpt")
    p.add_argument(
        "--lengths",
        type=at_least(MIN_LENGTH),
        nargs="+",
        metavar="T0",
        help="score the run at these T0 too, as training scores eval.lengths (its last\n"
        "checkpoint), recorded in its result.json, and print them all",
    )
    p.add_argument(
        "--sequences",
        type=at_least(1),
        help="sequences per length with --lengths (default: as many as its eval_lengths\n"
        "were scored on, else its eval.sequences)",
    )
    args = p.parse_args(argv)
    if args.lengths:
        if args.checkpoint != "last.ckpt":
            p.error(
                "--lengths scores the final weights (last.ckpt), as training does: no --checkpoint"
            )
        try:
            result = at_lengths(args.run_dir, args.lengths, args.sequences)
        except ConfigError as e:
            sys.exit(f"error: --lengths {' '.join(map(str, args.lengths))}: {e}")
        except (RunError, RunDirError) as e:
            sys.exit(f"error: {e}")
        print(lengths_line(result))
        return
    if args.sequences is not None:
        p.error("--sequences goes with --lengths")
    if readout_class(recorded_config(args.run_dir)["pool"]["readout"]).per_step:
        print(step_report(args.run_dir, args.checkpoint))
    else:
        print(accuracy_by_batch(args.run_dir, args.checkpoint).to_string(index=False))


if __name__ == "__main__":
    main()
