"""The addition problem (Raffel & Ellis 2015, §2.2) learned by an LSTM in a plain PyTorch loop,
written apart from the framework: only the task's generator (longterm.tasks.marked, equal to the
paper's `lstm_problems.add`) comes from the package. A check that the framework's recurrent
baselines, which stay near the constant predictor on this task (docs/every_memory.md), are not
held back by the framework.

    python scripts/plain_lstm_addition.py --T0 50 100 --updates 5000 \\
        --out docs/every_memory/plain_lstm_addition.json

The loop: `nn.LSTM(2, 100)`, its output at each sequence's last real step, `nn.Linear(100, 1)`,
mean squared error, Adam at 1e-3, batches of 100 fresh sequences, one thread. Accuracy as the
paper counts it (|y - ŷ| < 0.04) on a fixed validation set of 1,000 sequences, every 1,000
updates, beside the best constant predictor's on the same set. Writes the numbers with the
command, commit and machine (JSON); docs/every_memory.md reads them from there.
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from longterm.tasks.marked import addition

TOLERANCE = 0.04  # the paper's: correct when |y - ŷ| < 0.04


class LastStepLSTM(nn.Module):
    """x (B, T, 2), lengths (B,) -> ŷ (B,): the LSTM's output at each sequence's last real step."""

    def __init__(self, hidden: int = 100):
        super().__init__()
        self.lstm = nn.LSTM(2, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(x)  # (B, T, hidden)
        last = h[torch.arange(len(x)), lengths - 1]  # (B, hidden)
        return self.out(last).squeeze(-1)


def batch(rng: np.random.RandomState, T0: int, n: int) -> tuple[torch.Tensor, ...]:
    X, y, mask = addition(rng, T0, n)
    return (
        torch.from_numpy(X).float(),
        torch.from_numpy(mask.sum(1)).long(),
        torch.from_numpy(y).float(),
    )


def accuracy(y_hat: torch.Tensor, y: torch.Tensor) -> float:
    return float(((y_hat - y).abs() < TOLERANCE).float().mean())


def constant_accuracy(y: torch.Tensor) -> float:
    """The best constant predictor's accuracy: the most targets within the tolerance of one value
    (every target tried as the value's centre)."""
    v = torch.sort(y).values
    within = torch.searchsorted(v, v + 2 * TOLERANCE) - torch.arange(len(v))
    return float(within.max()) / len(v)


def train(T0: int, updates: int, every: int, seed: int) -> dict:
    """One LSTM on the addition problem at `T0`: accuracy on the validation set every `every`
    updates."""
    torch.manual_seed(seed)
    model = LastStepLSTM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = batch(np.random.RandomState(10_000 + seed), T0, 1000)
    rng = np.random.RandomState(seed)
    curve, start = [], time.perf_counter()
    for update in range(1, updates + 1):
        x, lengths, y = batch(rng, T0, 100)
        loss = nn.functional.mse_loss(model(x, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if update % every == 0:
            with torch.no_grad():
                acc = accuracy(model(val[0], val[1]), val[2])
            curve.append({"update": update, "val_acc": acc, "train_mse": float(loss.detach())})
            print(f"T0 = {T0}, update {update}: validation accuracy {100 * acc:.1f}%", flush=True)
    return {
        "T0": T0,
        "seed": seed,
        "curve": curve,
        "constant_predictor_acc": constant_accuracy(val[2]),
        "seconds": time.perf_counter() - start,
    }


def commit() -> str:
    """The checkout's commit, `-dirty` where its tracked files have changed."""
    try:
        command = ["git", "describe", "--always", "--abbrev=40", "--dirty"]
        out = subprocess.run(command, capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def machine() -> str:
    """`<processor>, <n> cores, torch <version>, 1 thread`."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores, torch {torch.__version__}, 1 thread"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--T0", type=int, nargs="+", default=[50, 100])
    p.add_argument("--updates", type=int, default=5000)
    p.add_argument("--every", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    runs = [train(T0, args.updates, args.every, args.seed) for T0 in args.T0]
    record = {
        "command": shlex.join(["python", "scripts/plain_lstm_addition.py", *sys.argv[1:]]),
        "commit": commit(),
        "machine": machine(),
        "model": "nn.LSTM(2, 100), last real step, nn.Linear(100, 1), MSE, Adam 1e-3, batch 100",
        "runs": runs,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
