"""The committed archive of runs (longterm.store.archive): what it keeps, its budget, and continuing
an archived run on another checkout."""

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from helpers.paths import ROOT
from helpers.presets import quick
from helpers.results import read_json
from helpers.runs import train_py

from longterm.analysis.collect import collect
from longterm.analysis.runs import load_runs
from longterm.store.archive import (
    BUDGET_MB,
    FINAL_MARK,
    LAST,
    RUN_FILES,
    ArchiveError,
    beaten,
    get,
    is_final,
    kept_files,
    needs_checkpoint,
    put,
    run_dirs,
    size_mb,
)
from longterm.store.continue_run import continue_run
from longterm.store.run_dir import event_files


@pytest.fixture
def sweep(two_runs) -> Path:
    """conftest.two_runs: one run solved, one at its limit unsolved."""
    return two_runs


def archived(tmp_path: Path, sweep: Path) -> Path:
    put([sweep], tmp_path / "runs")
    return tmp_path / "runs" / sweep.name


def test_put_keeps_results_commands_events_and_the_checkpoints_of_unsolved_runs(sweep, tmp_path):
    archive = archived(tmp_path, sweep)
    assert (archive / "multirun.yaml").exists()
    for run in run_dirs(archive):
        status = read_json(run / "result.json")["status"]
        assert all((run / name).exists() for name in RUN_FILES)
        assert event_files(run), run
        assert (run / LAST).exists() == (status != "solved")
        assert not (run / "checkpoints" / "best.ckpt").exists()
        assert not (run / "train.log").exists()
    columns = ["task", "status", "epochs", "best_acc", "history"]
    pd_archive, pd_outputs = load_runs([archive]), load_runs([sweep])
    assert pd_archive[columns].equals(pd_outputs[columns])


def test_a_sweep_put_back_unchanged_keeps_the_archived_checkpoints(sweep, tmp_path):
    """`get` relocates each checkpoint's recorded paths; putting the sweep back untrained keeps
    the archived bytes, and a checkpoint that trained on replaces them."""
    runs = tmp_path / "runs"
    archive = archived(tmp_path, sweep)
    before = {p: p.read_bytes() for p in archive.rglob("*.ckpt")}
    assert before
    restored = get(archive, tmp_path / "elsewhere")
    assert all(
        (restored / p.relative_to(archive)).read_bytes() != b for p, b in before.items()
    )  # relocated
    put([restored], runs)
    assert {p: p.read_bytes() for p in archive.rglob("*.ckpt")} == before
    ckpt = next(restored.rglob("*.ckpt"))
    state = torch.load(ckpt, weights_only=False)
    state["global_step"] += 1
    torch.save(state, ckpt)
    put([restored], runs)
    assert (archive / ckpt.relative_to(restored)).read_bytes() == ckpt.read_bytes()


def test_put_refuses_past_its_budget_and_leaves_the_archive_as_it_was(sweep, tmp_path):
    archive = archived(tmp_path, sweep)
    before = sorted(p for p in archive.rglob("*"))
    with pytest.raises(ArchiveError, match=r"over its budget of 0.01 MB"):
        put([sweep], tmp_path / "runs", budget_mb=0.01)
    assert sorted(p for p in archive.rglob("*")) == before


def test_get_refuses_to_overwrite_a_run_directory(sweep, tmp_path):
    archive = archived(tmp_path, sweep)
    get(archive, tmp_path / "outputs")
    with pytest.raises(ArchiveError, match="2 run directories exist already"):
        get(archive, tmp_path / "outputs")


def test_get_of_a_sweep_not_archived_says_which_are(sweep, tmp_path):
    """A misspelt sweep is refused, naming those the archive holds, and nothing is made."""
    archive = archived(tmp_path, sweep)
    with pytest.raises(ArchiveError) as refused:
        get(archive.parent / "nosuch", tmp_path / "outputs")
    assert str(refused.value) == (
        f"{archive.parent / 'nosuch'} holds no archived sweep (no result.json under it) "
        f"({archive.parent} holds {archive.name})"
    )
    assert not (tmp_path / "outputs").exists()


def test_an_archived_run_continues_to_a_larger_limit_elsewhere(sweep, tmp_path):
    """continue_run from the archive into a fresh outputs/: the continued run resumes from the
    archived epoch, its checkpoint paths point at its new directory, and its metrics equal a
    run made with the larger limit from the start."""
    archive = archived(tmp_path, sweep)
    (unsolved,) = [r for r in run_dirs(archive) if read_json(r / "result.json")["epochs"] == 2]
    longer = quick("trainer.max_epochs=3")
    new = tmp_path / "elsewhere" / "continued"
    continue_run(unsolved, new)
    state = torch.load(new / LAST, map_location="cpu", weights_only=False)
    assert all(str(new) in v["dirpath"] for v in state["callbacks"].values() if "dirpath" in v)
    assert train_py(*longer, f"hydra.run.dir={new}").returncode == 0
    fresh = tmp_path / "fresh"
    assert train_py(*longer, f"hydra.run.dir={fresh}").returncode == 0
    continued, reference = read_json(new / "result.json"), read_json(fresh / "result.json")
    assert continued["resumed_at_update"] == 40
    assert continued["val_acc_history"] == reference["val_acc_history"]


def test_the_committed_archive_is_complete_and_within_its_budget():
    archive = ROOT / "runs"
    if not archive.exists():
        pytest.skip("no runs/ in this checkout")
    assert size_mb(archive) <= BUDGET_MB
    for sweep in (p for p in archive.iterdir() if p.is_dir()):
        runs = run_dirs(sweep)
        results = [read_json(run / "result.json") for run in runs]
        for run, result in zip(runs, results, strict=True):
            assert all((run / name).exists() for name in RUN_FILES), run
            needed = needs_checkpoint(result, results, is_final(sweep))
            assert (run / LAST).exists() == needed, run


def test_a_rival_beaten_within_its_limit_keeps_no_checkpoint():
    """An unsolved run whose cell another learning rate solved within its limit cannot win under
    the paper's rule: not kept. Unsolved runs that could still win, and variable-length runs
    (evaluated by length), are."""
    cell = {"task": "addition", "pool": "mean", "T0": 100, "seed": 1, "data": "fixed"}
    leader = {**cell, "lr": 3e-3, "status": "solved", "epochs": 4, "max_epochs": 100}
    capped = {**cell, "lr": 1e-3, "status": "max_epochs", "epochs": 4, "max_epochs": 4}
    longer = {**cell, "lr": 1e-2, "status": "max_epochs", "epochs": 3, "max_epochs": 3}
    other_seed = {**capped, "seed": 2}
    variable = {**capped, "data": "variable"}
    solved_variable = {**leader, "data": "variable"}
    runs = [leader, capped, longer, other_seed, variable, solved_variable]
    assert [beaten(r, runs) for r in runs] == [False, True, False, False, False, False]


def test_a_run_cut_off_in_its_first_epoch_has_no_checkpoint_to_keep():
    """Checkpoints are written at the end of each epoch: a run interrupted before the first has
    none, and its command starts it again."""
    cut_off = {"status": "interrupted", "epochs": 0, "val_acc_history": []}
    resumable = {"status": "interrupted", "epochs": 2, "val_acc_history": [0.1, 0.2]}
    for final in (False, True):
        assert not needs_checkpoint(cut_off, [cut_off], final)
        assert needs_checkpoint(resumable, [resumable], final)


def test_make_collect_regenerates_the_committed_results(tmp_path, monkeypatch):
    """docs/results is what `make collect` writes from runs/, byte for byte (figures too), and
    so is each hypothesis' own collection in docs/results/<name>."""
    committed = ROOT / "docs" / "results"
    if not (ROOT / "runs").exists() or not committed.exists():
        pytest.skip("no runs/ or docs/results/ in this checkout")
    makefile = (ROOT / "Makefile").read_text()
    sweeps = re.search(r"^SWEEPS \?= (.+)$", makefile, re.M).group(1).split()
    hypotheses = re.search(r"^HYPOTHESES \?= (.+)$", makefile, re.M).group(1).split()
    monkeypatch.chdir(ROOT)  # runs.csv names each run by its path from the repository root
    collections = [(sweeps, committed)] + [([f"runs/{h}"], committed / h) for h in hypotheses]
    for dirs, expected in collections:
        out = tmp_path / expected.relative_to(committed)
        collect(dirs, out)
        files = sorted(p.name for p in expected.iterdir() if p.is_file())
        assert sorted(p.name for p in out.iterdir() if p.is_file()) == files, expected
        for name in files:
            assert (out / name).read_bytes() == (expected / name).read_bytes(), expected / name


def epochs_table(markdown: str) -> str:
    """The first Markdown table whose header starts `| task | pool | T0=50`, its rows as they
    stand."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| task | pool | T0=50"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def test_the_table_in_results_md_is_the_generated_one():
    """docs/results.md quotes Table 1 from docs/results/table1.md (written by `make collect`): the
    two must not drift apart when the runs change."""
    prose, generated = ROOT / "docs" / "results.md", ROOT / "docs" / "results" / "table1.md"
    if not generated.exists():
        pytest.skip("no docs/results/ in this checkout")
    assert epochs_table(prose.read_text()) == epochs_table(generated.read_text())


def test_a_run_recorded_before_the_subpackages_is_evaluated_with_today_s_classes(tmp_path):
    """A run directory made before the package's subpackages (a user's outputs/) records the
    old import paths of its data module, readout, logger and callbacks (`_target_`), and its
    readout's class under `_target_`: store/upgrade.py maps them, so it is still evaluated."""
    from longterm.analysis.evaluate import accuracy_by_batch
    from longterm.store.upgrade import MOVED

    sweep = ROOT / "runs/variable_length_100"
    archived = sweep / "addition-mean-var50-10000-lr1e-3-s1,trainer.max_epochs=100"
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints/last.ckpt").write_bytes((archived / "checkpoints/last.ckpt").read_bytes())
    text = (archived / "result.json").read_text()
    for old, new in MOVED.items():
        text = text.replace(f'"{new}.', f'"{old}.')
    assert '"longterm.pooling.MeanPooling"' in text and '"longterm.callbacks.' in text
    (run / "result.json").write_text(text)
    rows = accuracy_by_batch(run)
    assert len(rows) > 0 and rows["acc"].between(0, 1).all()


def test_a_final_sweep_keeps_the_checkpoints_of_unfinished_runs_only(sweep, tmp_path):
    """`put --final` (an experiment at a fixed budget): no finished run keeps its checkpoint, an
    interrupted one does, the sweep's commands are kept at every level of a sweep of sweeps, and
    the rule stays with the archived copy when it is put again."""
    nested = tmp_path / "outer"
    shutil.copytree(sweep, nested / "race")
    stopped = next(r for r in run_dirs(nested) if (r / LAST).exists())
    result = read_json(stopped / "result.json")
    (stopped / "result.json").write_text(json.dumps({**result, "status": "interrupted"}))
    put([nested], tmp_path / "runs", final=True)
    archive = tmp_path / "runs" / "outer"
    assert (archive / FINAL_MARK).exists() and (archive / "race" / "multirun.yaml").exists()
    kept = {r.name for r in run_dirs(archive) if (r / LAST).exists()}
    assert kept == {stopped.name}
    assert {p.relative_to(archive) for p in kept_files(archive)} == {
        p.relative_to(archive) for p in archive.rglob("*") if p.is_file()
    }
