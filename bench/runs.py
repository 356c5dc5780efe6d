"""Where a short run's time goes: an update's kernels and data alone, a bare Lightning loop, a run
as src/train.py trains it, and packs of 1, 4 and 16 members (launcher=packed's exact CPU path), at
T0 = 50, 100 and 1000, on one thread, in one process; then each run's time broken into its parts
with a sampling profiler (pyinstrument). Writes one section of docs/performance_runs.md (`--label`),
keeping the page's other sections, so the page holds the same measurement before and after a
change. A benchmark, not a test: every ratio is taken between cases measured in the same run, the
cases interleaved (one of each in turn, `--repeats` times) and each the median of its turns.

    python bench/runs.py --label after                    # docs/performance_runs.md
    python bench/runs.py --T0 100 --out /tmp/runs.md      # one length

The model is the paper's (addition, attention pooling, B = 100, each sequence T0 to 1.1 T0 steps,
as conf/ composes it; lr 1e-3, seed 1). Each case makes `--updates` updates (1000 by default: a
run of two epochs of 500, whose start and end weigh on each update as in a short Table 1 run):
- kernels: forward, loss, backward and Adam's step on a ready batch, in a plain Python loop;
- data: the training batches generated (training/data.py: KeyedBatches);
- bare loop: `Trainer.fit` of the same LightningModule on a DataLoader of ready batches, with no
  callback, logger, checkpoint, validation or progress bar;
- run: `longterm.training.run.train` of the composed config (what src/train.py calls after Hydra):
  two epochs, each validated on 100 sequences and checkpointed, the TensorBoard logger, no bar;
  the stopping rule watches val/loss (>= 1 never holds here), so every run makes every update;
- pack of M: `longterm.sweeps.pack.train_pack` of M such runs of other learning rates and seeds.
Times are per update (a pack's: per member-update), each case's whole call over its updates, in
CPU seconds of the process (time.process_time): the machine these run on is shared, and its other
processes' turns would count in the wall clock.
"""

import argparse
import json
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig
from pyinstrument import Profiler
from pytorch_lightning import Trainer
from torch.utils.data import DataLoader

from longterm.models.ops import meta_batch
from longterm.store.records import git_commit, machine
from longterm.sweeps.pack import train_pack
from longterm.sweeps.pack_ops import pack_update_ops
from longterm.tasks import default_width
from longterm.training.parts import build_model, instantiate_named
from longterm.training.quiet import quiet_libraries
from longterm.training.run import train

ROOT = Path(__file__).resolve().parent.parent
B = 100
LRS = (3e-4, 1e-3, 3e-3, 1e-2)  # a pack's members: these learning rates x seeds 1, 2, ...
PACKS = (1, 4, 16)
# sampled frames -> the part of a run they belong to: the innermost frame that matches names it
PARTS = (
    ("kernels", "longterm/training/module.py", ("step_loss",)),
    ("kernels", "torch/_tensor.py", ("backward",)),
    ("kernels", "torch/optim/adam.py", ("step",)),
    ("kernels", "longterm/sweeps/pack_module.py", ("training_step", "step")),
    ("data", "pytorch_lightning/loops/fetchers.py", ("__next__",)),
    ("logging", "pytorch_lightning/core/module.py", ("log",)),
    ("logging", "logger_connector", ()),
    ("logging", "pytorch_lightning/loggers/", ()),
    ("callbacks", "pytorch_lightning/trainer/call.py", ("_call_callback_hooks",)),
    ("validation", "pytorch_lightning/loops/evaluation_loop.py", ("run",)),
    ("checkpoints", "pytorch_lightning/trainer/trainer.py", ("save_checkpoint",)),
    ("loop", "pytorch_lightning/trainer/trainer.py", ("fit",)),
)
PART_NAMES = ("kernels", "data", "logging", "callbacks", "validation", "checkpoints", "loop")


def clock() -> float:
    """Seconds of CPU this process has used, all its threads (one of torch's): on a machine shared
    with other processes, far steadier than the wall clock, which counts their turns too."""
    return time.process_time()


def config(T0: int, run_dir: Path, updates: int, lr: float = 1e-3, seed: int = 1) -> DictConfig:
    """The run's config as src/train.py composes it (see the module docstring)."""
    overrides = [
        f"T0={T0}",
        f"lr={lr}",
        f"seed={seed}",
        f"run_dir={run_dir}",
        f"data.batches_per_epoch={updates // 2}",
        "data.val_size=100",
        "trainer.max_epochs=2",
        "trainer.enable_progress_bar=false",
        "callbacks.stop_when_solved.monitor=val/loss",  # >= 1: never, at these lengths
    ]
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=overrides)


def batches(cfg: DictConfig, n: int) -> list[tuple]:
    """The run's first n training batches."""
    stream = instantiate_named(cfg.data).keyed_batches()
    return [stream[(0, i)] for i in range(n)]


def kernels(T0: int, updates: int, where: Path) -> float:
    """Seconds of `updates` updates on one ready batch, in a plain loop."""
    cfg = config(T0, where / "kernels", updates)
    module = build_model(cfg)
    optimizer = module.configure_optimizers()
    (batch,) = batches(cfg, 1)
    started = clock()
    for _ in range(updates):
        optimizer.zero_grad()
        module.step_loss(batch).backward()
        optimizer.step()
    return clock() - started


def data(T0: int, updates: int, where: Path) -> float:
    """Seconds to generate `updates` training batches."""
    cfg = config(T0, where / "data", updates)
    started = clock()
    batches(cfg, updates)
    return clock() - started


def bare_trainer(**settings) -> Trainer:
    """One epoch of Lightning's loop alone: no callbacks, checkpoints, bar, summary or
    validation; `settings` add to these (a logger)."""
    return Trainer(
        max_epochs=1,
        callbacks=[],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        **settings,
    )


def bare(T0: int, updates: int, where: Path) -> float:
    """Seconds of `Trainer.fit` over `updates` ready batches (a few, repeated), nothing else."""
    cfg = config(T0, where / "bare", updates)
    ready = batches(cfg, 4)
    loader = DataLoader([ready[i % 4] for i in range(updates)], batch_size=None)
    trainer = bare_trainer(logger=False)
    module = build_model(cfg)
    started = clock()
    trainer.fit(module, train_dataloaders=loader)
    return clock() - started


def run(T0: int, updates: int, where: Path) -> float:
    """Seconds of one run through `longterm.training.run.train`."""
    cfg = config(T0, where / f"run-{time.perf_counter_ns()}", updates)
    started = clock()
    result = train(cfg)
    assert result["updates"] == updates, result["updates"]
    return clock() - started


def pack(members: int) -> Callable[[int, int, Path], float]:
    def fit(T0: int, updates: int, where: Path) -> float:
        """Seconds of a pack of `members` runs over their member-updates."""
        name = f"pack{members}-{time.perf_counter_ns()}"
        cfgs = [
            config(T0, where / name / str(i), updates, LRS[i % len(LRS)], 1 + i // len(LRS))
            for i in range(members)
        ]
        started = clock()
        results = train_pack(cfgs)
        seconds = clock() - started
        assert all(r["updates"] == updates for r in results), results
        return seconds / members

    return fit


CASES: dict[str, Callable[[int, int, Path], float]] = {
    "kernels": kernels,
    "data": data,
    "bare loop": bare,
    "run": run,
    **{f"pack of {m}": pack(m) for m in PACKS},
}


def parts(T0: int, updates: int, where: Path) -> dict[str, float]:
    """One run profiled (pyinstrument, every 0.2 ms): seconds by part (PARTS), `setup` for what
    is outside `Trainer.fit` (building the parts, the records)."""
    profiler = Profiler(interval=0.0002)
    profiler.start()
    run(T0, updates, where)
    profiler.stop()
    found: dict[str, float] = defaultdict(float)

    def walk(frame, part: str) -> None:
        path = frame.file_path or ""
        for name, file, functions in PARTS:
            if file in path and (not functions or frame.function in functions):
                part = name
                break
        children = frame.children
        found[part] += frame.time - sum(c.time for c in children)
        for child in children:
            walk(child, part)

    walk(profiler.last_session.root_frame(), "setup")
    return dict(found)


def measure(args: argparse.Namespace, where: Path) -> dict:
    """Every case at every T0, interleaved; medians in ms per update, and the profiles."""
    for T0 in args.T0:  # what is compiled, compiled; what is imported, imported
        run(T0, 4, where)
    times: dict[tuple[int, str], list[float]] = defaultdict(list)
    for _ in range(args.repeats):
        for T0 in args.T0:
            for case in args.cases:
                seconds = CASES[case](T0, args.updates, where)
                times[(T0, case)].append(seconds / args.updates * 1e3)
                print(f"T0={T0} {case}: {times[(T0, case)][-1]:.2f} ms/update", flush=True)
    profiles = {T0: parts(T0, args.updates, where) for T0 in args.T0}
    ops = pack_ops(args.T0[0]) if args.ops else {}
    return {
        "ms": {f"{T0}/{case}": statistics.median(t) for (T0, case), t in times.items()},
        "profiles": profiles,
        "ops": ops,
    }


def pack_ops(T0: int) -> dict[str, int]:
    """aten ops of one update of a pack of 1, 4 and 16 members on the meta device, one after
    another (the CPU's path) and stacked (an accelerator's)."""
    cfg = config(T0, Path("unused"), 2)
    batch = meta_batch(B, default_width(T0), cfg.task.n_features)
    return {
        f"{m}/{stacked}": pack_update_ops([build_model(cfg) for _ in range(m)], batch, stacked)
        for m in PACKS
        for stacked in (False, True)
    }


def section(args: argparse.Namespace, measured: dict, seconds: float) -> str:
    """The page's section of this run."""
    ms, lines = measured["ms"], []
    lines += [
        f"## {args.label}",
        "",
        f"- command: `{shlex.join(['python', 'bench/runs.py', *sys.argv[1:]])}`",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit: {git_commit()}",
        f"- machine: {json.dumps(machine())}; {platform.platform()}; torch threads: 1",
        f"- {args.updates} updates a case, medians of {args.repeats} interleaved turns; "
        f"whole benchmark {seconds:.0f} s",
        "",
        "CPU ms per update (a pack's: per member-update); × k+d: over kernels + data.",
        "",
        "| T0 | kernels | data | kernels + data | bare loop | run | run × k+d | "
        + " | ".join(f"pack of {m} | × k+d" for m in PACKS)
        + " |",
        "|---|---|---|---|---|---|---|" + "---|---|" * len(PACKS),
    ]
    for T0 in args.T0:
        kd = ms[f"{T0}/kernels"] + ms[f"{T0}/data"]
        cells = [ms[f"{T0}/{c}"] for c in ("kernels", "data")] + [kd, ms[f"{T0}/bare loop"]]
        packs = " | ".join(
            f"{ms[f'{T0}/pack of {m}']:.2f} | {ms[f'{T0}/pack of {m}'] / kd:.2f}×" for m in PACKS
        )
        lines.append(
            f"| {T0} | "
            + " | ".join(f"{c:.2f}" for c in cells)
            + f" | {ms[f'{T0}/run']:.2f} | {ms[f'{T0}/run'] / kd:.2f}× | {packs} |"
        )
    lines += [
        "",
        "A run's time by part, from one profiled run per T0 (pyinstrument, a sample every 0.2 "
        "ms): each part's share of the samples, and that share of the run's CPU ms per update "
        "above. The innermost of these frames names each sample's part: kernels (the training "
        "step's forward, loss, backward, Adam), data (the loaders' next batch), logging "
        "(`self.log`, Lightning's logger connector, the loggers), callbacks (the callbacks' "
        "hooks), validation (the evaluation loop), checkpoints (`Trainer.save_checkpoint`), loop "
        "(the rest of `Trainer.fit`), setup (outside `Trainer.fit`: building the parts, the "
        "records).",
        "",
        "| T0 | " + " | ".join([*PART_NAMES, "setup"]) + " |",
        "|---|" + "---|" * (len(PART_NAMES) + 1),
    ]
    for T0, found in measured["profiles"].items():
        total, run_ms = sum(found.values()), ms[f"{T0}/run"]
        shares = [found.get(p, 0.0) / total for p in (*PART_NAMES, "setup")]
        cells = " | ".join(f"{share * run_ms:.2f} ({share:.0%})" for share in shares)
        lines.append(f"| {T0} | {cells} |")
    if measured["ops"]:
        ops = measured["ops"]
        lines += [
            "",
            f"aten ops of one update of a pack at T0 = {args.T0[0]} on the meta device "
            "(longterm.sweeps.pack_ops; an accelerator's count):",
            "",
            "| members | " + " | ".join(str(m) for m in PACKS) + " |",
            "|---|" + "---|" * len(PACKS),
            "| one after another | " + " | ".join(f"{ops[f'{m}/False']:,}" for m in PACKS) + " |",
            "| stacked | " + " | ".join(f"{ops[f'{m}/True']:,}" for m in PACKS) + " |",
        ]
    return "\n".join(lines) + "\n"


HEAD = """# Where a short run's time goes

Generated by `bench/runs.py` (sections `before` and `after`) and `bench/cuts.py` (section
`cuts`); do not edit by hand. Each section is one run of the benchmark, named by its `--label`;
rerunning a label replaces its section only. `before` ran on the code before the cuts around each
update and before a pack's members were updated in one call, `after` on the code after them (the
commits are in each section; `before` with that commit's bench/runs.py). The machine is shared
with other work, whose load changes from run to run: times are CPU times of the process, and
sections to be compared are best run at the same time, side by side.

"""


def write(out: Path, label: str, text: str) -> None:
    """Replace (or add) the section `label` of the page at `out`, under this script's head."""
    old = out.read_text() if out.exists() else ""
    head = HEAD + "\n".join(__doc__.split("\n\n")[2:]) + "\n"
    kept = [s for s in old.split("\n## ")[1:] if s.split("\n", 1)[0] != label]
    out.write_text("\n## ".join([head.rstrip("\n") + "\n", *kept, text[3:]]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T0", type=int, nargs="+", default=[50, 100, 1000])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="after")
    parser.add_argument("--no-ops", dest="ops", action="store_false")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance_runs.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    quiet_libraries()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="runs-") as where:
        measured = measure(args, Path(where))
    text = section(args, measured, time.perf_counter() - started)
    write(args.out, args.label, text)
    print(text)


if __name__ == "__main__":
    main()
