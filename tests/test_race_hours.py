"""The hours a queue of races has left (longterm.experiments.race_hours), on copies of archived runs
(runs/every_memory/gla, runs/recall/gla_d64_T64), through `python -m` from outside the
repository, as a user plans a sweep's next sessions."""

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT

GLA = ROOT / "runs" / "every_memory" / "gla"
RECALL = ROOT / "runs" / "recall" / "gla_d64_T64"
PLANNED = "--launcher parallel -- experiment=every_memory model=gla launcher.jobs=1"
LRS, LIMIT = (0.003, 0.001), 5


def race(T0: int, seeds: str) -> str:
    """every_memory's race of gla at `T0` (its planner's command, every_memory.runs)."""
    return (
        f"python -m longterm.experiments.lr_race --sweep-dir every_memory/gla --T0 {T0} --seeds "
        f"{seeds} --tasks addition multiplication --pools last --lrs 0.003 0.001 "
        f"--max-epochs {LIMIT} {PLANNED}"
    )


def hours(tmp_path: Path, *commands: str) -> list[str]:
    """race_hours' lines for a queue of `commands`, run in `tmp_path`."""
    (tmp_path / "queue.txt").write_text("# a planner's note\n" + "\n".join(commands) + "\n")
    out = python_m(tmp_path, "longterm.experiments.race_hours", "queue.txt", "--cores", "2")
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def python_m(cwd: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m module args` in `cwd`, output captured."""
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def runs(sweep: Path, T0: int) -> list[dict]:
    found = [json.loads(p.read_text()) for p in sweep.glob("*/result.json")]
    return [r for r in found if r["T0"] == T0]


def row(lines: list[str], sweep_dir: str, T0: int, seeds: str) -> list[str]:
    """The cells after the sweep directory, T0 and seeds of the table's row for them."""
    [line] = [x for x in lines if x.startswith(f"| {sweep_dir} | {T0} | {seeds} |")]
    return [cell.strip() for cell in line.strip("|").split("|")][3:]


@pytest.fixture
def archived(tmp_path: Path) -> Path:
    if not (GLA.is_dir() and RECALL.is_dir()):
        pytest.skip("the archived runs are not in this checkout")
    shutil.copytree(GLA, tmp_path / "every_memory" / "gla")
    shutil.copytree(RECALL, tmp_path / "recall" / RECALL.name)
    return tmp_path


def test_a_finished_race_has_nothing_left_and_a_new_seed_its_leaders_epochs(archived):
    """Seed 1 at T0 = 50 finished: nothing left. A seed never run (9): its leader expected at the
    median epochs to 100% of the finished leaders at that T0, each rival capped there; at most
    the limit each; an epoch at what the runs at that T0 cost per epoch."""
    lines = hours(archived, race(50, "1"), race(50, "9"))
    finished = row(lines, "every_memory/gla", 50, "1")
    at_50 = runs(archived / "every_memory" / "gla", 50)
    assert finished[0] == f"{len(LRS) * 2} of {len(LRS) * 2}" and finished[2:] == [
        "0, 0",
        "0.00, 0.00",
    ]
    cells = row(lines, "every_memory/gla", 50, "9")
    expected = 0.0
    for task in ("addition", "multiplication"):
        led = [r for r in at_50 if r["task"] == task and r["lr"] == LRS[0]]
        needed = [r["epoch_solved"] if r["status"] == "solved" else LIMIT for r in led]
        expected += statistics.median(needed) * len(LRS)
    spent = sum(r["wall_time_s"] + (r.get("earlier_wall_time_s") or 0) for r in at_50)
    per_epoch = spent / sum(r["epochs"] for r in at_50)
    assert cells[0] == f"0 of {len(LRS) * 2}" and cells[1] == f"{per_epoch:.0f} (its runs)"
    assert cells[2] == f"{expected:g}, {LIMIT * len(LRS) * 2}"
    left = f"{expected * per_epoch / 3600:.2f}, {LIMIT * len(LRS) * 2 * per_epoch / 3600:.2f}"
    assert cells[3] == left
    total = f"In all: {expected * per_epoch / 3600:.1f} one-core hours expected"
    assert any(x.startswith(total) for x in lines), lines


def test_a_race_whose_seeds_have_run_is_costed_from_their_runs(archived):
    """Seeds 1 and 9 at T0 = 50: seed 1's runs, made by the code the rest will run on, give the
    cost of an epoch, not the other seeds' runs of the sweep."""
    [line] = [x for x in hours(archived, race(50, "1 9")) if "| 50 | 1 9 |" in x]
    seed_1 = [r for r in runs(archived / "every_memory" / "gla", 50) if r["seed"] == 1]
    spent = sum(r["wall_time_s"] + (r.get("earlier_wall_time_s") or 0) for r in seed_1)
    per_epoch = spent / sum(r["epochs"] for r in seed_1)
    everyone = runs(archived / "every_memory" / "gla", 50)
    assert len(everyone) > len(seed_1)  # the sweep's other seeds, left out
    assert f"| {per_epoch:.0f} (its seeds' runs) |" in line


def test_a_length_not_run_is_costed_from_the_runs_beside_it_scaled_in_the_length(archived):
    """recall's gla at T0 = 128, nothing run there: an epoch costs what its T0 = 64 runs beside
    it cost, twice; a model none of whose runs are alike is listed as not estimated."""
    command = (
        "python -m longterm.experiments.lr_race --sweep-dir recall/{name}_T128 --T0 128 "
        "--tasks mqar --pools per_step --seeds 1 --lrs 3e-3 1e-3 --launcher local -- "
        "experiment=recall model={model} model.dim=64 task.params.kv_pairs=8"
    )
    gla = command.format(name="gla_d64", model="gla")
    lstm = command.format(name="lstm_d64", model="lstm")
    lines = hours(archived, gla, lstm)
    # seed 1 ran GLA's readable form (model.impl=reference), before its kernels: another cost
    alike = [r for r in runs(archived / "recall" / RECALL.name, 64) if r["seed"] != 1]
    assert {r["config"]["model"]["impl"] for r in alike} == {"auto"}
    per_epoch = 2 * sum(r["wall_time_s"] for r in alike) / sum(r["epochs"] for r in alike)
    cells = row(lines, "recall/gla_d64_T128", 128, "1")
    assert cells[1] == f"{per_epoch:.0f} (T0 = 64 beside it, x 2.00)"
    assert cells[2] == "16, 16"  # recall.yaml's limit of 8 epochs, two learning rates
    assert row(lines, "recall/lstm_d64_T128", 128, "1")[1:] == [
        "no runs to estimate from",
        "16, 16",
        "not estimated",
    ]
    assert lines[-1] == "Not estimated (no runs to estimate from): recall/lstm_d64_T128 T0=128."


def test_a_bad_race_line_is_refused_in_one_line(tmp_path):
    bad = race(50, "1").replace("model=gla", "model=gla trainer.max_epochs=3")
    (tmp_path / "queue.txt").write_text(bad + "\n")
    out = python_m(tmp_path, "longterm.experiments.race_hours", "queue.txt")
    assert out.returncode == 1 and out.stderr.strip() == (
        "error: give the epoch limit as --max-epochs: the race sets trainer.max_epochs itself"
    )
