"""A finished run's accuracy on each batch of its validation set, from its last checkpoint: the
one analysis module that loads a model, and with it the training core and Lightning.

For the variable-length experiment (§2.3) each validation batch has one length, so this is the
accuracy by evaluation length: `python -m longterm.analysis.evaluate <run dir>` prints it. The
mean over batches of equal size is the run's final val/acc.
"""

import argparse
import logging
from pathlib import Path

import pandas as pd
import torch
from omegaconf import OmegaConf

from longterm.analysis.variable_length import variable_length_runs
from longterm.records import read_result
from longterm.run import build_model, instantiate_named
from longterm.rundir import CHECKPOINTS

log = logging.getLogger("longterm.analysis.collect")


@torch.no_grad()
def accuracy_by_batch(run_dir: str | Path, checkpoint: str = "last.ckpt") -> pd.DataFrame:
    """One row per validation batch: `length` (its padded width), `n` sequences, `acc`."""
    run_dir = Path(run_dir)
    cfg = OmegaConf.create(read_result(run_dir)["config"])
    module = build_model(cfg)
    state = torch.load(run_dir / CHECKPOINTS / checkpoint, map_location="cpu", weights_only=True)
    module.load_state_dict(state["state_dict"])
    module.eval()
    data = instantiate_named(cfg.data)
    rows = []
    for x, y, mask in data.validation_set():
        module.val_acc.reset()
        module.val_acc.update(module(x, mask), y.long() if module.classify else y)
        rows.append({"length": x.shape[1], "n": len(y), "acc": module.val_acc.compute().item()})
    return pd.DataFrame(rows)


def accuracy_by_length(runs: pd.DataFrame) -> pd.DataFrame:
    """Each variable-length run's last checkpoint on the test lengths: a row per run and length
    (task, pool, seed, length, n, acc); runs without a checkpoint are left out with a warning."""
    frames = []
    for r in variable_length_runs(runs).itertuples(index=False):
        if (Path(r.run_dir) / CHECKPOINTS / "last.ckpt").exists():
            frames.append(
                accuracy_by_batch(r.run_dir).assign(task=r.task, pool=r.pool, seed=r.seed)
            )
        else:
            log.warning(f"{r.run_dir}: no last.ckpt, left out of the accuracy by length")
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("run_dir")
    p.add_argument("--checkpoint", default="last.ckpt")
    args = p.parse_args(argv)
    print(accuracy_by_batch(args.run_dir, args.checkpoint).to_string(index=False))


if __name__ == "__main__":
    main()
