"""The cost of one update of each model of zoology's Figure 2 (experiment=zoology_figure2), to plan
its runs on a CPU: the median time of an update (forward, backward, AdamW's step; the head at the
labelled steps) through the run's module as `src/train.py` builds it, one thread, at each
(L, d, batch) asked. Prints a markdown table and writes it with the machine and commit to
`--out` (default docs/performance_figure2.md). A benchmark, not a test.

    python bench/figure2_costs.py                               # the page
    python bench/figure2_costs.py --shapes 256:128:256 --updates 2 --out /tmp/f2.md

The hours of a run follow: updates per epoch (zoology's epoch of 100,000 sequences: 196 updates
of 512 at L <= 128, 391 of 256 at L = 256) times the epochs it runs (at most 64; a run stops
once validation accuracy is above 99%).
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch
from head_at_labels import optimizer_of
from hydra import compose, initialize_config_dir

from longterm.training.batches import TRAIN, FixedLengthBatches, batch_rng
from longterm.training.parts import build_model

ROOT = Path(__file__).resolve().parent.parent
MODELS = {  # the Figure-2 rows, as experiment=zoology_figure2's header runs them
    "attention": ["arch=zoology_attention"],
    "hyena": ["arch=zoology_hyena"],
    "base_conv": ["arch=zoology_base_conv"],
    "mamba": ["arch=zoology_mamba"],
    "gla": ["model=gla", "model.use_short_conv=true", "model.head=tied"],
    "deltanet": ["model=deltanet", "model.use_short_conv=true", "model.head=tied"],
}
SHAPES = ["64:64:512", "64:128:512", "256:64:256", "256:128:256"]  # L:d:batch
EPOCH_SEQUENCES = 100_000


def config(model: str, L: int, d: int, batch: int):
    overrides = ["experiment=zoology_figure2", *MODELS[model], f"T0={L}", f"model.dim={d}"]
    overrides += [f"task.params.kv_pairs={L // 16}", f"data.batch_size={batch}"]
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=overrides)


def measure(model: str, L: int, d: int, batch: int, warmup: int, updates: int) -> float:
    """Median seconds of an update of `model` at (L, d, batch), in this process."""
    cfg = config(model, L, d, batch)
    recipe = FixedLengthBatches(cfg.task.generator, L, batch, "per_sequence", cfg.task.params)
    x, y, mask = recipe(batch_rng(0, TRAIN, 0, 0))
    torch.manual_seed(0)
    module = build_model(cfg).train()
    return update_seconds(module, optimizer_of(module), (x, y, mask), warmup, updates)


def update_seconds(module, optimizer, batch, warmup: int, updates: int) -> float:
    """Median seconds of an update of `module` on `batch` (zero_grad, the loss's backward, the
    optimizer's step), after `warmup` untimed ones."""
    times = []
    for i in range(warmup + updates):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        module.step_loss(batch).backward()
        optimizer.step()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def child(model: str, shape: str, args: argparse.Namespace) -> float:
    cmd = [sys.executable, __file__, "--one", model, shape]
    cmd += ["--warmup", str(args.warmup), "--updates", str(args.updates)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{model} at {shape} failed:\n{out.stderr[-3000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    return out.stdout.decode().strip() or "unknown"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--shapes", nargs="+", default=SHAPES, help="L:d:batch rows")
    p.add_argument("--warmup", type=int, default=1, help="updates before the timed ones")
    p.add_argument("--updates", type=int, default=3, help="updates timed (their median)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "performance_figure2.md")
    p.add_argument("--note", default="", help="a line on the machine, e.g. its load")
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # model L:d:batch, in a child
    a = p.parse_args()
    if a.one:
        L, d, batch = map(int, a.one[1].split(":"))
        print(measure(a.one[0], L, d, batch, a.warmup, a.updates))
        return
    start, load = time.time(), os.getloadavg()[0]
    rows = ["| model | L | d | batch | s / update | updates / epoch | h / epoch | h at 64 epochs |"]
    rows.append("|---|---|---|---|---|---|---|---|")
    for shape in a.shapes:
        L, d, batch = map(int, shape.split(":"))
        per_epoch = -(-EPOCH_SEQUENCES // batch)
        for model in a.models:
            s = child(model, shape, a)
            h = s * per_epoch / 3600
            rows.append(
                f"| {model} | {L} | {d} | {batch} | {s:.2f} | {per_epoch} | {h:.3f} | "
                f"{64 * h:.1f} |"
            )
            print(rows[-1], flush=True)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        "# The cost of zoology's Figure 2 on this CPU",
        "",
        "Generated by `bench/figure2_costs.py`; do not edit by hand. Regenerate with",
        "",
        "    python bench/figure2_costs.py",
        "",
        f"- date: {now}; commit: {commit()}",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"torch {torch.__version__}; one thread",
        f"- whole benchmark: {time.time() - start:.0f} s; load average (1 minute) at its start "
        f"and end: {load:.1f}, {os.getloadavg()[0]:.1f} (other work shares the cores)",
        *([f"- {a.note}"] if a.note else []),
        "",
        f"Median of {a.updates} updates after {a.warmup} warm-up, vocab 8192, kv pairs L / 16.",
        "",
    ]
    tail = ["", "## How it is measured", "", __doc__.strip()]
    a.out.write_text("\n".join(head + rows + tail) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
