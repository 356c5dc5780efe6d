"""What a sweep costs under each launcher: the same multirun (4 learning rates x 2 seeds of one
cell, a few hundred updates each) timed from the command's start to its end, start-up included,
at T0 = 50, 100, 1000 and 10000, under every launcher named, in one run; writes
docs/performance_sweeps.md. A benchmark, not a test: the machine is shared and its speed varies
between runs, so every ratio is taken between sweeps measured in the same run, and nothing else
should run meanwhile.

    python bench/sweep.py                                   # the page, docs/performance_sweeps.md
    python bench/sweep.py --T0 100 --out /tmp/sweeps.md     # one length
    python bench/sweep.py --launchers parallel joblib --T0 50 --section    # that section alone

Each sweep is `python src/train.py -m launcher=<L> task=addition pool=attention T0=<T0>
lr=3e-4,1e-3,3e-3,1e-2 seed=1,2 data.batches_per_epoch=100 trainer.max_epochs=3` in a fresh
directory: a run that solves stops early, as in any sweep. Updates per second are the sweep's
updates (each run's result.json) over its wall time. "identical" compares every run's
val_acc_history, epochs, updates and status with the same run under the first launcher.

`joblib` is Hydra's stock joblib launcher (hydra-joblib-launcher, at its defaults: n_jobs=-1, one
job per CPU), which conf/launcher/ does not offer as a choice: its sweep is `launcher=local
hydra/launcher=joblib`. Where both it and `parallel` run, the page ends with a section that sets
them side by side and says which the project keeps and why; `--section` measures that section's
launchers alone and rewrites only that section of the page, leaving the rest as it is.
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
# Launchers that conf/launcher/ does not offer, by the overrides that select them.
HYDRA_LAUNCHERS = {"joblib": ["launcher=local", "hydra/launcher=joblib"]}
SECTION = "## launcher=parallel beside Hydra's joblib launcher"


def sweep_args(launcher: str, T0: int | str, args: argparse.Namespace) -> list[str]:
    """The multirun's overrides (without its directory)."""
    return [
        "-m",
        *HYDRA_LAUNCHERS.get(launcher, [f"launcher={launcher}"]),
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


def provenance(args: argparse.Namespace, seconds: float, what: str) -> list[str]:
    """The command that regenerates `what`, where and when it ran, and the run's note."""
    return [
        "    " + shlex.join(["python", "bench/sweep.py", *sys.argv[1:]]),
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit: {git_commit()}",
        f"- machine: {json.dumps(machine())}; {platform.platform()}",
        f"- {what}: {seconds:.0f} s",
        *([f"- note: {args.note}"] if args.note else []),
    ]


def table(records: list[dict], args: argparse.Namespace, launchers: list[str]) -> list[str]:
    """What each sweep is, and a row per sweep under `launchers`, against the first of them."""
    first = launchers[0]
    joblib = (
        " joblib: Hydra's stock joblib launcher (hydra-joblib-launcher at its defaults, n_jobs=-1: "
        "one job per CPU), `" + " ".join(HYDRA_LAUNCHERS["joblib"]) + "` in place of "
        "`launcher=<launcher>`."
        if "joblib" in launchers
        else ""
    )
    lines = [
        "Each sweep: `python src/train.py "
        + shlex.join(sweep_args("<launcher>", "<T0>", args))
        + "` at the row's T0, in a fresh sweep directory: "
        f"{len(LRS.split(','))} learning rates × {len(SEEDS.split(','))} seeds of one cell, "
        "timed from the command's start to its end (start-up included). "
        f"× {first}: the wall time of the sweep under `launcher={first}` at the "
        "same T0 over this one's. identical: every run's val_acc_history, epochs, updates and "
        f"status equal those of the same run under `launcher={first}`." + joblib,
        "",
        "| T0 | launcher | runs | updates | wall s | s / run | updates / s "
        f"| × {first} | identical |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for T0 in args.T0:
        at = [r for r in records if r["T0"] == T0 and r["launcher"] in launchers]
        at.sort(key=lambda r: launchers.index(r["launcher"]))
        lines += [row(r, at[0]) for r in at]
    return lines


def beside_joblib(records: list[dict], args: argparse.Namespace, seconds: float) -> list[str]:
    """The section that sets launcher=parallel beside Hydra's joblib launcher: their sweeps, and
    which the project keeps and why, from this run's times."""
    pairs = [{r["launcher"]: r["wall_s"] for r in records if r["T0"] == T0} for T0 in args.T0]
    faster = [t["joblib"] / t["parallel"] for t in pairs]
    times = "; ".join(
        f"at T0 = {T0}, {t['parallel']:.1f} s under `launcher=parallel` and {t['joblib']:.1f} s "
        f"under joblib (joblib's wall time {f:.2f}× parallel's)"
        for T0, t, f in zip(args.T0, pairs, faster, strict=True)
    )
    if all(f > 1 for f in faster):
        speed = "`launcher=parallel` is the faster of the two in every sweep here"
    elif all(f < 1 for f in faster):
        speed = "joblib is the faster of the two in every sweep here"
    else:
        speed = "neither is the faster in every sweep here"
    return [
        "",
        SECTION,
        "",
        "Generated by `bench/sweep.py` (its launchers `parallel` and `joblib`); regenerate this "
        "section alone with",
        "",
        *provenance(args, seconds, "the section's benchmark"),
        "",
        *table(records, args, ["parallel", "joblib"]),
        "",
        f"The same sweep, timed in the same run: {times}. {speed[0].upper() + speed[1:]}. "
        "The project keeps `launcher=parallel`, "
        + ("for its speed and " if all(f > 1 for f in faster) else "")
        + "for what Hydra's joblib launcher does not do (the behaviour of each below was seen on "
        "this machine; tests/test_launchers.py holds launcher=parallel's):",
        "",
        "- **signals**: a sweep stopped by `kill` or Ctrl-C stops its running jobs after their "
        "batch, records them `interrupted`, ends with its table and the line that resumes it, "
        "and leaves no process behind. Under joblib the command dies of SIGTERM (exit 143) "
        "with no table or line, and its loky workers outlive it and go on training the jobs "
        "they hold.",
        "- **a job's one-line error**: a job that stops on its situation (too large for the "
        "memory, say) is counted, and the sweep ends with its table, that count and exit "
        "status 1. Under joblib the line is printed by the worker and the sweep exits 0.",
        "- **the thread and memory budget**: each job is told its share of the machine "
        "(`launcher.jobs`, `launcher.threads`, in its config and result.json): its torch "
        "threads, and its share of the memory in the memory check. joblib's workers also run "
        "one OpenMP thread per CPU share, but a job does not know it has neighbours: its "
        "memory check counts the whole machine's memory for each job.",
        "- **job names** are no reason: a job's directory is the project's `${job_name:}` "
        "under both. `launcher=packed` builds on `launcher=parallel`'s processes.",
    ]


def document(records: list[dict], args: argparse.Namespace, seconds: float, floor: float) -> str:
    """The page: the command, where and when, and a row per sweep; the joblib section where
    both launchers ran."""
    lines = [
        "# Sweeps under each launcher",
        "",
        "Generated by `bench/sweep.py`; do not edit by hand. Regenerate with",
        "",
        *provenance(args, seconds, "whole benchmark"),
        "",
        *table(records, args, args.launchers),
    ]
    lines += bounds(records, args, floor)
    if {"parallel", "joblib"} <= set(args.launchers):
        lines += beside_joblib(records, args, seconds)
    return "\n".join(lines) + "\n"


def with_section(page: str, section: list[str]) -> str:
    """`page` with its section of `section`'s heading replaced by `section` (added at the end
    where it has none); the rest as it is."""
    lines = page.rstrip("\n").split("\n")
    heading = section[1]
    if heading in lines:
        start = lines.index(heading) - 1  # the blank line before it
        end = next(
            (i for i in range(start + 2, len(lines)) if lines[i].startswith("## ")),
            len(lines) + 1,
        )
        lines[start : end - 1] = section
    else:
        lines += section
    return "\n".join(lines) + "\n"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T0", type=int, nargs="+", default=[50, 100, 1000, 10000])
    parser.add_argument("--launchers", nargs="+", default=["local", "parallel", "packed", "joblib"])
    parser.add_argument("--batches-per-epoch", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance_sweeps.md")
    parser.add_argument("--note", help="a line on the page: what else the machine was doing")
    parser.add_argument(
        "--section",
        action="store_true",
        help="rewrite only the section that sets launcher=parallel beside joblib (--launchers "
        "parallel joblib), leaving the rest of the page as it is",
    )
    args = parser.parse_args()
    if args.section and args.launchers != ["parallel", "joblib"]:
        parser.error("--section measures --launchers parallel joblib")
    return args


def main() -> None:
    args = parse()
    started = time.perf_counter()
    floor = 0.0 if args.section else import_floor()
    records = []
    with tempfile.TemporaryDirectory(prefix="sweeps-") as where:
        for T0 in args.T0:
            for launcher in args.launchers:
                record = time_sweep(launcher, T0, args, Path(where))
                print(f"T0={T0} launcher={launcher}: {record['wall_s']:.1f} s", flush=True)
                records.append(record)
    seconds = time.perf_counter() - started
    if args.section:
        page = args.out.read_text() if args.out.exists() else ""
        text = with_section(page, beside_joblib(records, args, seconds))
    else:
        text = document(records, args, seconds, floor)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
