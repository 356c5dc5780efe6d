"""The cost of one update of MAD's model shape (experiment=mad: [mixer, SwiGLU] x 2 at width 128)
on the CPU, to plan the protocol's runs: the median time of an update (forward, backward, AdamW's
step in mad-lab's groups; the head at the labelled steps) through the run's module as
`src/train.py` builds it, one thread, on a batch of mad-lab's training data at a MAD task's
setting (by default in-context recall's baseline: 128 sequences of 127 steps). Prints a
markdown table; a benchmark, not a test.

    python bench/mad_costs.py                                        # attention and mamba
    python bench/mad_costs.py --models mad_gla mad_s4d --task mad_selective_copying --updates 3

A run's hours follow: updates per epoch (ceil(n_train / 128): 100 at 12,800 sequences) times the
epochs it runs (at most 200; a run stops once test accuracy is above 0.999), and the test set's
forward passes each epoch.
"""

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

import torch
from figure2_costs import update_seconds
from hydra import compose, initialize_config_dir

from longterm.training.parts import build_model, instantiate_named
from longterm.training.recipes import Recipe

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("mad_attention", "mad_mamba")


def measure(model: str, task: str, setting: str, warmup: int, updates: int) -> float:
    """Median seconds of an update of `model` on the first training batch of `task` at
    `setting`, in this process."""
    overrides = ["experiment=mad", f"model={model}", f"task={task}", f"task.setting={setting}"]
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[*overrides, "data.n_train=128", "data.n_test=1"])
    data = build_data(cfg)
    x, y, mask = data.train[(0, 0)]
    torch.manual_seed(0)
    module = build_model(cfg).train()
    names, params = zip(*module.named_parameters(), strict=True)
    optim = Recipe(name="adamw", decay_groups="mad").optimizer(params, 1e-3, names)
    return update_seconds(module, optim, (x, y, mask), warmup, updates)


def build_data(cfg):
    data = instantiate_named(cfg.data)
    data.setup()
    return data


def child(model: str, args: argparse.Namespace) -> float:
    cmd = [sys.executable, __file__, "--one", model, "--task", args.task, "--setting", args.setting]
    cmd += ["--warmup", str(args.warmup), "--updates", str(args.updates)]
    out = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True,
                         text=True)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"{model} failed:\n{out.stderr[-3000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--task", default="mad_in_context_recall")
    parser.add_argument("--setting", default="baseline")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        torch.set_num_threads(1)
        print(measure(args.one, args.task, args.setting, args.warmup, args.updates))
        return
    where = platform.processor() or platform.machine()
    print(f"`python bench/mad_costs.py` on {where}, torch {torch.__version__}, one thread; "
          f"{args.task}, setting {args.setting}\n")  # fmt: skip
    print("| model | seconds per update | minutes per epoch of 100 updates |\n|---|---|---|")
    for model in args.models:
        seconds = child(model, args)
        print(f"| {model} | {seconds:.3f} | {seconds * 100 / 60:.1f} |", flush=True)


if __name__ == "__main__":
    main()
