"""How many one-core hours a queue of races has left, estimated from the runs it has made so far:
the plan of a long sweep's next sessions, from its first runs.

    python -m longterm.experiments.race_hours queue.txt          # [--cores N]

The queue is command_queue's file (the planners' printed lists). Of each `lr_race` command, every
run of its grid (task x pool x T0 x seed x learning rate) is finished (solved, at its limit or
diverged) or has epochs left (an interrupted run resumes after the epochs it holds):
- a leader (the first rate) is expected to need the median epochs of the finished leaders of the
  same task, pool and T0 in the sweep directory (their epochs to 100%, else the limit), and the
  limit where none has finished;
- a rival runs to its leader's epochs to 100%, or to the limit when the leader does not solve
  (lr_race): to the expected epochs of an unfinished leader.
An epoch costs what the runs so far cost per epoch (their wall times, earlier processes
included, over their epochs): those of the race's own seeds at that T0, made by the code the rest
will run (S4D's earlier runs predate its faster convolution, docs/performance_fft_conv.md); else
the race's sweep directory's other runs at that T0; where it has none, those of the same model,
task, readout and batches at the nearest other T0 in the directories beside it, scaled linearly
in T0 (every memory here costs time linear in T) and in the attention span where that differs
(recall.runs gives the attention models a span of T0). A race with neither is listed as not
estimated. The bound takes every unfinished run to the limit (a rival to its
leader's cap where the leader has finished). Wall hours: the one-core hours over the cores, one
command a core (command_queue), a floor where one command outlasts the rest.
"""

import argparse
import shlex
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from longterm.analysis.arguments import at_least, summary
from longterm.experiments.command_queue import cores, read
from longterm.experiments.lr_race import RaceError, checked_first_job, parser, read_results
from longterm.store.records import FINAL_STATUSES, total_seconds

RACE = "longterm.experiments.lr_race"
SPAN = "attn_span"  # an attention model's cost per step is linear in its span (recall.runs: T0)


@dataclass
class Row:
    """One race command's runs at one T0."""

    sweep_dir: str
    T0: int
    seeds: list[int]
    runs: int
    finished: int
    epochs: float  # expected epochs left
    bound: int  # at most
    per_epoch: float | None  # seconds, None where nothing to estimate from
    source: str  # where per_epoch comes from


def per_epoch(runs: list[dict[str, Any]]) -> float | None:
    """Seconds an epoch of `runs` took (their wall times, earlier processes included), over
    those that hold an epoch."""
    runs = [r for r in runs if r.get("epochs")]
    spent = sum(total_seconds(r) or 0.0 for r in runs)
    return spent / sum(r["epochs"] for r in runs) if runs else None


def needed(r: dict[str, Any], limit: int) -> int:
    """The epochs a finished run took to 100%, else the limit (lr_race.leader_caps)."""
    return r["epoch_solved"] if r["status"] == "solved" and r["epoch_solved"] else limit


def epochs_left(
    results: list[dict[str, Any]], args: argparse.Namespace, limit: int, T0: int
) -> tuple[int, int, float, int]:
    """(runs, finished, expected epochs left, bound) of the race's grid at `T0`."""
    finished, started = {}, {}
    for r in results:
        key = (r["task"], r["pool"], r["T0"], r["seed"], r["lr"])
        (finished if r["status"] in FINAL_STATUSES else started)[key] = r
    leader, rivals = args.lrs[0], args.lrs[1:]
    runs = done = bound = 0
    expected = 0.0
    for task in args.tasks:
        for pool in args.pools:
            led = [
                needed(r, limit)
                for (t, p, T, _, lr), r in finished.items()
                if (t, p, T, lr) == (task, pool, T0, leader)
            ]
            typical = statistics.median(led) if led else limit
            for seed in args.seeds:
                cell = (task, pool, T0, seed)
                lead = finished.get((*cell, leader))
                cap, cap_bound = (needed(lead, limit),) * 2 if lead else (typical, limit)
                for lr in (leader, *rivals):
                    runs += 1
                    if (*cell, lr) in finished:
                        done += 1
                        continue
                    held = (started.get((*cell, lr)) or {}).get("epochs") or 0
                    goal, most = (typical, limit) if lr == leader else (cap, cap_bound)
                    expected += max(goal - held, 0)
                    bound += max(most - held, 0)
    return runs, done, expected, bound


def alike(config: dict[str, Any], like: dict[str, Any]) -> bool:
    """Runs whose cost per step is the race's, up to the attention span: the same model, task,
    readout and batches. A model key one of the two lacks (a run recorded before the key
    existed) is not held against it, as in a run directory's check (config/run_settings.py)."""
    keys = ("batch_size", "batches_per_epoch")
    model, theirs = config.get("model") or {}, like["model"]
    shared = set(model) & set(theirs) - {SPAN}
    return (
        bool(shared)
        and all(model[k] == theirs[k] for k in shared)
        and config.get("pool") == like["pool"]
        and config.get("task", {}).get("name") == like["task"]["name"]
        and all(config.get("data", {}).get(k) == like["data"].get(k) for k in keys)
    )


def cost(
    sweep_dir: Path, T0: int, like: dict[str, Any], seeds: list[int]
) -> tuple[float | None, str]:
    """Seconds an epoch of the race at `T0` costs, and where that comes from: the runs of its
    own seeds first, as they are made by the code and machine the rest will run on."""
    at_T0 = [r for r in read_results(sweep_dir) if r["T0"] == T0]
    own = per_epoch([r for r in at_T0 if r["seed"] in seeds])
    if own is not None:
        return own, "its seeds' runs"
    own = per_epoch(at_T0)
    if own is not None:
        return own, "its runs"
    beside: dict[int, list[dict[str, Any]]] = {}
    for other in sorted(sweep_dir.parent.iterdir()) if sweep_dir.parent.is_dir() else []:
        for r in read_results(other) if other.is_dir() else []:
            if r["T0"] != T0 and alike(r.get("config") or {}, like):
                beside.setdefault(r["T0"], []).append(r)
    measured = {T: per_epoch(runs) for T, runs in beside.items()}
    measured = {T: s for T, s in measured.items() if s is not None}
    if not measured:
        return None, "no runs to estimate from"
    nearest = min(measured, key=lambda T: (abs(T - T0), T))
    scale = T0 / nearest
    span, their_span = like["model"].get(SPAN), beside[nearest][0]["config"]["model"].get(SPAN)
    if span and their_span:
        scale *= span / their_span
    return measured[nearest] * scale, f"T0 = {nearest} beside it, x {scale:.2f}"


def race_rows(command: str) -> list[Row]:
    """The rows of one `lr_race` command line (`python -m longterm.experiments.lr_race ...`)."""
    args = parser().parse_args(shlex.split(command)[3:])
    cfg = checked_first_job(args)
    like = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("model", "pool", "task")}
    like["data"] = {k: cfg.data[k] for k in ("batch_size", "batches_per_epoch")}
    limit = args.max_epochs or int(cfg.trainer.max_epochs)
    sweep_dir = Path(args.sweep_dir)
    results = read_results(sweep_dir)
    rows = []
    for T0 in args.T0:
        runs, done, expected, bound = epochs_left(results, args, limit, T0)
        epoch_cost, source = cost(sweep_dir, T0, like, args.seeds)
        rows.append(
            Row(str(sweep_dir), T0, args.seeds, runs, done, expected, bound, epoch_cost, source)
        )
    return rows


def table(rows: list[Row], n_cores: int) -> list[str]:
    """The rows as a markdown table, then the totals."""
    lines = [
        "| sweep directory | T0 | seeds | runs finished | s / epoch | epochs left: expected, at "
        "most | one-core hours left: expected, at most |",
        "|---|---|---|---|---|---|---|",
    ]
    hours = most = 0.0
    unknown = []
    for r in rows:
        if r.per_epoch is None:
            h = "not estimated" if r.epochs else "0.00, 0.00"
            if r.epochs:
                unknown.append(f"{r.sweep_dir} T0={r.T0}")
            cost_text = r.source
        else:
            hours += r.epochs * r.per_epoch / 3600
            most += r.bound * r.per_epoch / 3600
            h = f"{r.epochs * r.per_epoch / 3600:.2f}, {r.bound * r.per_epoch / 3600:.2f}"
            cost_text = f"{r.per_epoch:.0f} ({r.source})"
        lines.append(
            f"| {r.sweep_dir} | {r.T0} | {' '.join(map(str, r.seeds))} | {r.finished} of "
            f"{r.runs} | {cost_text} | {r.epochs:g}, {r.bound} | {h} |"
        )
    lines += [
        "",
        f"In all: {hours:.1f} one-core hours expected, at most {most:.1f}; on {n_cores} cores, "
        f"one command a core: about {hours / n_cores:.1f} hours of wall time (at most "
        f"{most / n_cores:.1f}).",
    ]
    if unknown:
        lines.append(f"Not estimated (no runs to estimate from): {', '.join(unknown)}.")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=summary(__doc__))
    p.add_argument("file", help="the queue: command_queue's file of commands")
    p.add_argument(
        "--cores", type=at_least(1), default=cores(), help="commands at once (default: CPUs)"
    )
    args = p.parse_args(argv)
    try:
        commands = read(Path(args.file).read_text())
    except OSError as e:
        sys.exit(f"error: {args.file}: {e.strerror}")
    if not commands:
        sys.exit(f"error: no command in {args.file}")
    rows, other = [], 0
    for command in commands:
        if shlex.split(command)[1:3] != ["-m", RACE]:
            other += 1  # a src/train.py line: its cost is not a race's
            continue
        try:
            rows += race_rows(command)
        except RaceError as e:
            sys.exit(f"error: {e}")
    print("\n".join(table(rows, args.cores)))
    if other:
        print(f"Not estimated: {other} command(s) of the queue that are not races.")


if __name__ == "__main__":
    main()
