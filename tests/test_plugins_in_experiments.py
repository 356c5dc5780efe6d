"""A model of one's own in the experiments, from a directory outside the repo (conftest.lab: the
example package's GRU): the learning-rate race with a relative sweep directory, and the
every_memory planner and page, as a user runs them (docs/plugins.md, "Your model in the
experiments")."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT
from helpers.results import sweep_results
from helpers.runs import forked

from longterm.experiments import lr_race
from longterm.experiments.every_memory.page import main as every_memory_page
from longterm.experiments.every_memory.runs import plan
from longterm.experiments.recall.runs import races

TINY_DATA = ["data.batch_size=8", "data.batches_per_epoch=3", "data.val_size=16"]


def search_path(lab: Path) -> str:
    return f"hydra.searchpath=[file://{lab / 'mylab' / 'conf'}]"


def row(page: Path, memory: str) -> list[str]:
    """`memory`'s row of the page's addition table: memory, parameters, state size, limit, the
    cells by T0."""
    table = page.read_text().split("## addition\n")[1].split("\n## ")[0]
    line = next(x for x in table.splitlines() if x.startswith(f"| {memory} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_race_runs_its_jobs_where_it_runs(lab: Path, monkeypatch):
    """From the user's directory, a relative --sweep-dir: the jobs land there (not in the repo),
    so the race reads its leader's runs and runs the rival up to their cap; the page reads the
    sweep with the model as a row of its own."""
    monkeypatch.chdir(lab)
    monkeypatch.setenv("PYTHONPATH", str(lab))  # the jobs'
    monkeypatch.syspath_prepend(str(lab))  # the race's check, in this process
    sweep = Path("outputs") / "every_memory" / "gru"
    argv = ["--sweep-dir", str(sweep), "--T0", "20", "--seeds", "1", "--tasks", "addition"]
    argv += ["--pools", "last", "--lrs", "3e-3", "1e-3", "--max-epochs", "2"]
    argv += ["--launcher", "local", "--", "experiment=every_memory", search_path(lab)]
    argv += ["model=gru", *TINY_DATA]
    assert lr_race.main(argv, runner=forked) == 0
    results = {r["lr"]: r for r in sweep_results(lab / sweep)}
    assert sorted(results) == [1e-3, 3e-3] and not (ROOT / sweep).exists()
    leader = results[3e-3]
    cap = leader["epoch_solved"] if leader["status"] == "solved" else 2
    assert results[1e-3]["epochs"] <= cap
    assert {r["model"] for r in results.values()} == {"gru"}
    every_memory_page([str(lab / "outputs" / "every_memory"), "--out", str(lab / "page.md")])
    gru = row(lab / "page.md", "gru")
    assert gru[1] == f"{leader['n_params']:,}" and gru[4] != "not run"  # T0 = 20


def test_the_planners_take_a_model_of_ones_own_by_name():
    """every_memory.runs and recall.runs race a model that is not built in, by its conf name:
    after the built-ins, at T0 = 50 unless told, 3e-3 leading 1e-3."""
    commands = plan(["gru", "rnn"], None, (1,))
    sweeps = [shlex.split(c)[shlex.split(c).index("--sweep-dir") + 1] for c in commands]
    assert sweeps == [f"outputs/every_memory/{m}" for m in ("rnn", "gru", "rnn")]
    gru = shlex.split(commands[1])
    assert gru[gru.index("--T0") + 1 : gru.index("--seeds")] == ["50"]
    assert gru[gru.index("--lrs") + 1 : gru.index("--max-epochs")] == ["0.003", "0.001"]
    assert gru[-3:] == ["model=gru", "launcher.jobs=1", "launcher.threads=1"]
    (recall,) = races(settings=((32, 2),), dims=(32,), models=("gru",))
    assert "--sweep-dir outputs/recall/gru_d32_T32" in recall and "attn_span" not in recall


def planner(lab: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m longterm.experiments.every_memory.runs ARGS` in the user's directory."""
    path = os.pathsep.join(p for p in (str(lab), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "longterm.experiments.every_memory.runs", *args],
        cwd=lab, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip


def test_a_misspelt_model_of_ones_own_is_one_line_before_any_race(lab: Path):
    out = planner(lab, "--models", "gru", "gruu", "--", search_path(lab))
    assert out.returncode == 1 and out.stdout == ""
    choices = sorted({p.stem for p in (ROOT / "conf" / "model").glob("*.yaml")} | {"gru"})
    assert out.stderr.strip().splitlines() == [
        f"error: model='gruu' is invalid: choose one of {', '.join(choices)}; did you mean gru?"
    ]


@pytest.mark.slow
def test_the_every_memory_planner_runs_a_model_of_ones_own(lab: Path, tmp_path: Path):
    """`every_memory.runs --run --models gru` from the user's directory, as docs/plugins.md
    gives it (tiny data): the race's runs land in its own outputs/ (about 40 s)."""
    lab = shutil.copytree(lab / "mylab", tmp_path / "mylab").parent  # outputs/ of its own
    args = ["--run", "--models", "gru", "--T0", "20", "--seeds", "1", "--races", "1"]
    out = planner(lab, *args, "--", search_path(lab), *TINY_DATA)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    results = sweep_results(lab / "outputs" / "every_memory" / "gru")
    assert sorted((r["task"], r["lr"]) for r in results if r["lr"] == 3e-3) == [
        ("addition", 3e-3),
        ("multiplication", 3e-3),
    ]
    assert {r["model"] for r in results} == {"gru"} and len(results) == 4
