"""What a sweep costs under each launcher: the same multirun (4 learning rates x 2 seeds of one
cell, a few hundred updates each) timed from the command's start to its end, start-up included,
at T0 = 50, 100, 1000 and 10000, under every launcher named, in one run; writes
docs/performance_sweeps.md. A benchmark, not a test: the machine is shared and its speed varies
between runs, so every ratio is taken between sweeps measured in the same run, and nothing else
should run meanwhile.

    python bench/sweep.py                                   # the page, docs/performance_sweeps.md
    python bench/sweep.py --T0 100 --out /tmp/sweeps.md     # one length

Each sweep is `python src/train.py -m launcher=<L> task=addition pool=attention T0=<T0>
lr=3e-4,1e-3,3e-3,1e-2 seed=1,2 data.batches_per_epoch=100 trainer.max_epochs=3` in a fresh
directory: a run that solves stops early, as in any sweep. Updates per second are the sweep's
updates (each run's result.json) over its wall time. "identical" compares every run's
val_acc_history, epochs, updates and status with the same run under the first launcher.
"""

import argparse
import json
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from longterm.store.records import git_commit, machine

ROOT = Path(__file__).resolve().parents[1]
TRAIN_PY = ROOT / "src" / "train.py"
LRS = "3e-4,1e-3,3e-3,1e-2"
SEEDS = "1,2"
COMPARED = ("val_acc_history", "epochs", "updates", "status")


def sweep_args(launcher: str, T0: int | str, args: argparse.Namespace) -> list[str]:
    """The multirun's overrides (without its directory)."""
    return [
        "-m",
        f"launcher={launcher}",
        "task=addition",
        "pool=attention",
        f"T0={T0}",
        f"lr={LRS}",
        f"seed={SEEDS}",
        f"data.batches_per_epoch={args.batches_per_epoch}",
        f"trainer.max_epochs={args.epochs}",
        "trainer.enable_progress_bar=false",
    ]


def results(sweep_dir: Path) -> dict[str, dict]:
    """Each job's result.json by its directory's name."""
    return {p.parent.name: json.loads(p.read_text()) for p in sweep_dir.glob("*/result.json")}


def time_sweep(launcher: str, T0: int, args: argparse.Namespace, where: Path) -> dict:
    """One multirun in a new directory: its wall time and its runs' results."""
    sweep_dir = where / f"T{T0}-{launcher}"
    command = [sys.executable, str(TRAIN_PY), *sweep_args(launcher, T0, args)]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, f"hydra.sweep.dir={sweep_dir}"], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"the sweep under launcher={launcher} at T0={T0} failed:\n{done.stderr[-3000:]}")
    runs = results(sweep_dir)
    return {"launcher": launcher, "T0": T0, "wall_s": wall, "runs": runs}


IMPORTS = "import pytorch_lightning, longterm.sweeps.pack, longterm.training.run"


def import_floor(repeats: int = 3) -> float:
    """Seconds a fresh Python takes to import what every sweep's training imports (torch,
    Lightning, longterm): the least start-up any launcher pays (median of `repeats`)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, check=True)
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def bound(first: dict, floor: float, cpus: int) -> tuple[float, float]:
    """The runs' own time under the first launcher (the sum of each run's wall_time_s, its fit
    from start to end), and the most any launcher could gain on it: the first launcher's wall
    time over the import floor plus that work split evenly over the CPUs, with no other cost."""
    work = sum(r["wall_time_s"] for r in first["runs"].values())
    return work, first["wall_s"] / (floor + work / cpus)


def row(record: dict, first: dict) -> str:
    """A table row: the sweep against the same sweep under the first launcher."""
    runs = record["runs"]
    updates = sum(r["updates"] for r in runs.values())
    same = runs.keys() == first["runs"].keys() and all(
        all(r[k] == first["runs"][name][k] for k in COMPARED) for name, r in runs.items()
    )
    return (
        f"| {record['T0']} | {record['launcher']} | {len(runs)} | {updates} | "
        f"{record['wall_s']:.1f} | {record['wall_s'] / len(runs):.2f} | "
        f"{updates / record['wall_s']:.1f} | {first['wall_s'] / record['wall_s']:.2f}× | "
        f"{'yes' if same else 'no'} |"
    )


def bounds(records: list[dict], args: argparse.Namespace, floor: float) -> list[str]:
    """The section that says how far a launcher can go on this machine, from this run's numbers."""
    cpus = machine()["cpus"]
    first = args.launchers[0]
    lines = [
        "",
        "## What bounds the ratios",
        "",
        f"Every sweep starts a Python that imports torch, Lightning and longterm: {floor:.1f} s "
        f"here (`python -c '{IMPORTS}'`, the median of 3, measured in this run). The runs "
        f"themselves, each run's fit from start to end (result.json's wall_time_s) under "
        f"`launcher={first}`, add up to the work below. A launcher that kept each run's work "
        f"as it is alone could take no less than the import plus that work split evenly over "
        f"the {cpus} CPUs: the last columns set `launcher={first}`'s wall time over that "
        "floor (the most such a launcher could gain here) beside what each launcher gained, and "
        "over the import alone (`no work`: what a launcher that trained every run in no time "
        "at all would gain, the bound of any launcher that starts a Python for its sweep). "
        "A packed member does its run's work (its results are equal to the bit); on the CPU "
        "the pack updates its members in one call (their kernels in one call, their Adam "
        "steps in a few ops for all of them) and shares the data stream and Lightning's "
        "loop between them. `launcher=local` runs each job on every CPU torch uses: on a "
        "machine shared with other work, its threads wait for each other at every parallel "
        "op, which the other launchers (a thread or so per job) do not.",
        "",
        f"| T0 | {first} wall s | runs' work s | floor s | at most × {first} | "
        f"no work × {first} | "
        + " | ".join(f"{launcher} × {first}" for launcher in args.launchers[1:])
        + " |",
        "|---|---|---|---|---|---|" + "---|" * (len(args.launchers) - 1),
    ]
    for T0 in args.T0:
        at = [r for r in records if r["T0"] == T0]
        work, most = bound(at[0], floor, cpus)
        ratios = " | ".join(f"{at[0]['wall_s'] / r['wall_s']:.2f}×" for r in at[1:])
        lines.append(
            f"| {T0} | {at[0]['wall_s']:.1f} | {work:.1f} | {floor + work / cpus:.1f} | "
            f"{most:.2f}× | {at[0]['wall_s'] / floor:.2f}× | {ratios} |"
        )
    return lines


def document(records: list[dict], args: argparse.Namespace, seconds: float, floor: float) -> str:
    """The page: the command, where and when, and a row per sweep."""
    launchers = args.launchers
    lines = [
        "# Sweeps under each launcher",
        "",
        "Generated by `bench/sweep.py`; do not edit by hand. Regenerate with",
        "",
        "    " + shlex.join(["python", "bench/sweep.py", *sys.argv[1:]]),
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit: {git_commit()}",
        f"- machine: {json.dumps(machine())}; {platform.platform()}",
        f"- whole benchmark: {seconds:.0f} s",
        "",
        "Each sweep: `python src/train.py "
        + shlex.join(sweep_args("<launcher>", "<T0>", args))
        + "` at the row's T0, in a fresh sweep directory: "
        f"{len(LRS.split(','))} learning rates × {len(SEEDS.split(','))} seeds of one cell, "
        "timed from the command's start to its end (start-up included). "
        f"× {launchers[0]}: the wall time of the sweep under `launcher={launchers[0]}` at the "
        "same T0 over this one's. identical: every run's val_acc_history, epochs, updates and "
        f"status equal those of the same run under `launcher={launchers[0]}`.",
        "",
        "| T0 | launcher | runs | updates | wall s | s / run | updates / s "
        f"| × {launchers[0]} | identical |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for T0 in args.T0:
        at = [r for r in records if r["T0"] == T0]
        lines += [row(r, at[0]) for r in at]
    lines += bounds(records, args, floor)
    return "\n".join(lines) + "\n"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T0", type=int, nargs="+", default=[50, 100, 1000, 10000])
    parser.add_argument("--launchers", nargs="+", default=["local", "parallel", "packed"])
    parser.add_argument("--batches-per-epoch", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance_sweeps.md")
    return parser.parse_args()


def main() -> None:
    args = parse()
    started = time.perf_counter()
    floor = import_floor()
    records = []
    with tempfile.TemporaryDirectory(prefix="sweeps-") as where:
        for T0 in args.T0:
            for launcher in args.launchers:
                record = time_sweep(launcher, T0, args, Path(where))
                print(f"T0={T0} launcher={launcher}: {record['wall_s']:.1f} s", flush=True)
                records.append(record)
    text = document(records, args, time.perf_counter() - started, floor)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
