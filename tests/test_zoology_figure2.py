"""zoology's Figure 2 grid (longterm.experiments.recall.figure2) and its page (recall/page.py with
figure2_page.py and unfinished.py), from the archived runs (runs/zoology_figure2) and result.json
records made from them here: the planner's commands check and leave out finished cells, cheapest
first; the page names Figure 2, lists the grid's points not run with the planner's commands, says
whether the learning rates ran as a grid or a race, lists an interrupted run with the command that
resumes it; and the recall page is still the committed docs/recall.md, byte for byte."""

import json
import shlex
from pathlib import Path

import pytest
from helpers.paths import CONF, ROOT

from longterm.config.command_line import check
from longterm.experiments.recall import figure2
from longterm.experiments.recall.figure2 import LRS, MODELS, SWEEP_DIR, cells, command, cost
from longterm.experiments.recall.figure2 import main as plan
from longterm.experiments.recall.figure2_page import is_figure2
from longterm.experiments.recall.page import load
from longterm.experiments.recall.page import main as page
from longterm.experiments.recall.settings import learning_rates
from longterm.experiments.recall.unfinished import NO_RECORD, unfinished

ARCHIVE = ROOT / "runs" / "zoology_figure2"
TEMPLATE = ARCHIVE / "mqar-zoology_attention-per_step-T64-lr2.15e-3-s1,model.dim=64"
pytestmark = pytest.mark.skipif(not TEMPLATE.is_dir(), reason="the archived Figure 2 runs")


def write_run(sweep: Path, model: str, lr: str, seed: int, status: str = "solved") -> Path:
    """An archived Figure 2 run's record (attention at T0 = 64, D = 64) as another model, learning
    rate, seed and status, with its job's overrides, in `sweep`."""
    record = json.loads((TEMPLATE / "result.json").read_text())
    record |= {"model": model, "lr": float(lr), "seed": seed, "status": status}
    record["config"]["model"]["name"] = model
    run = sweep / f"mqar-{model}-per_step-T64-lr{lr}-s{seed},model.dim=64"
    (run / ".hydra").mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(record))
    (run / ".hydra" / "config.yaml").write_text(json.dumps(record["config"]))  # JSON is YAML
    overrides = ["experiment=zoology_figure2", *MODELS[model], "model.dim=64", f"lr={lr}"]
    lines = [f"- {o}" for o in [*overrides, f"seed={seed}"]]
    (run / ".hydra" / "overrides.yaml").write_text("\n".join(lines) + "\n")
    return run


def cells_of(line: str) -> list[str]:
    """The cells of a Markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def printed(capsys) -> list[str]:
    """The planner's commands, without its `#` notes."""
    out = capsys.readouterr().out.splitlines()
    return [line for line in out if line and not line.startswith("#")]


def test_the_grid_is_every_cell_cheapest_first():
    grid = cells()
    assert len(grid) == len(MODELS) * 2 * 2 * len(LRS) == 96
    costs = [cost(c) for c in grid]
    assert costs == sorted(costs)
    assert [(c.T0, c.width) for c in grid[:: len(MODELS) * len(LRS)]] == [
        (64, 64), (64, 128), (256, 64), (256, 128)
    ]  # fmt: skip
    seeded = cells(lengths=(64,), widths=(64,), seeds=(1, 2))
    assert [c.seed for c in seeded] == [1] * 24 + [2] * 24  # seed 1 of the whole grid first


def test_every_printed_command_checks_and_makes_one_cell(tmp_path: Path, capsys):
    """The planner checks every job it prints (one multirun per model and length) before it
    prints; each line is one cell, in the grid's order; deltanet's first line at each length
    checks again here."""
    plan(["--sweep-dir", str(tmp_path / "none")])
    lines = printed(capsys)
    assert len(lines) == 96
    made, firsts = [], {}
    for line in lines:
        words = shlex.split(line)
        assert words[:4] == ["python", "src/train.py", "-m", "experiment=zoology_figure2"]
        given = dict(w.split("=", 1) for w in words[4:])
        assert given["hydra.sweep.dir"] == str(tmp_path / "none")
        model = next(m for m, o in MODELS.items() if o[0] in words)
        T0 = int(given.get("T0", 64))
        made.append((model, T0, int(given["model.dim"]), given["lr"]))
        firsts.setdefault((model, T0), words)
    assert made == [(c.model, c.T0, c.width, c.lr) for c in cells()]  # in the grid's order
    for T0 in (64, 256):  # the longest command line at each length, checked again here
        check(firsts[("deltanet", T0)][2:], CONF)


def test_a_width_a_model_cannot_take_is_one_line_before_anything_is_printed(capsys):
    with pytest.raises(SystemExit, match=r"^error: -m experiment=zoology_figure2 .*model.dim=3 "):
        plan(["--widths", "3", "--models", "gla", "--lengths", "64"])
    assert capsys.readouterr().out == ""


def test_finished_cells_are_left_out_and_an_interrupted_one_is_resumed(
    tmp_path: Path, capsys, monkeypatch
):
    sweep = tmp_path / "figure2"
    write_run(sweep, "gla", "1e-4", 1)
    write_run(sweep, "gla", "4.64e-4", 1, status="interrupted")
    gla = ["--sweep-dir", str(sweep), "--lengths", "64", "--widths", "64", "--models", "gla"]
    plan(gla)
    lines = printed(capsys)
    lrs = [dict(w.split("=", 1) for w in shlex.split(c)[4:])["lr"] for c in lines]
    assert lrs == ["4.64e-4", "2.15e-3", "1e-2"]
    queued = []
    monkeypatch.setattr(figure2, "run", lambda c, launcher, races: queued.append((c, races)))
    plan([*gla, "--run", "--races", "1"])  # the same commands, through command_queue.run
    assert queued == [(lines, 1)]
    # the archive: attention's three seeds solved, BaseConv's seed 1 interrupted
    grid = ["--lengths", "64", "--widths", "64", "--lrs", "2.15e-3", "--seeds", "1", "2", "3"]
    plan(["--sweep-dir", str(ARCHIVE), *grid, "--models", "zoology_attention", "zoology_base_conv"])
    assert [shlex.split(c)[-2] for c in printed(capsys)] == ["seed=1", "seed=2", "seed=3"]
    recorded = json.loads((ARCHIVE / "commands.json").read_text())[1]["command"]
    assert command("zoology_base_conv", 64, [64], ["2.15e-3"], [1]) == recorded
    assert SWEEP_DIR == "outputs/zoology_figure2"


def test_the_page_of_the_archived_runs(tmp_path: Path, monkeypatch):
    """Recognised from the runs' recipe (no --grid): Figure 2 in the title, the learning rates a
    grid, the sequences each run saw, the points not run with commands that check, the point run
    in part with what it lacks, and the interrupted run with its resume command."""
    monkeypatch.chdir(ROOT)
    out = tmp_path / "figure2.md"
    page(["runs/zoology_figure2", "--out", str(out)])
    text = out.read_text()
    assert text.startswith("# zoology's Figure 2 in its recipe")
    rows = {tuple(cells_of(line)[:3]): line for line in text.splitlines() if line.startswith("| ")}
    settings = {k[0]: cells_of(v)[1] for k, v in rows.items()}
    assert "2.15e-3 (a grid: each learning rate its own run" in settings["learning rates"]
    assert "race" not in settings["learning rates"]
    seen = settings["sequences seen"]
    assert "against zoology's 100,000 × 64 epochs (6.4M)" in seen
    assert "zoology_attention D=64 at T0 = 64: 1.30M / 1.51M / 1.51M (20%–24%)" in seen
    not_run = text.split("## Cells of Figure 2 not run here")[1].split("## Runs in progress")[0]
    lines = [line for line in not_run.splitlines() if line.startswith("| ") and "`" in line]
    assert len(lines) == 24  # 23 points not run, one run in part
    hyena = rows[("zoology_hyena", "64 (4)", "64")]
    assert (
        "`python src/train.py -m experiment=zoology_figure2 arch=zoology_hyena model.dim=64 "
        "lr=1e-4,4.64e-4,2.15e-3,1e-2 seed=1,2,3`"
    ) in hyena
    attention = rows[("zoology_attention", "64 (4)", "64")]
    assert cells_of(attention)[3:5] == [
        "2.15e-3 (seeds 1, 2, 3)",
        "1e-4, 4.64e-4, 1e-2 (seeds 1, 2, 3)",
    ]
    longest = rows[("deltanet", "256 (16)", "128")].split("`")[1]
    for line in (longest, attention.split("`")[1]):
        check([*shlex.split(line)[2:], f"hydra.sweep.dir={tmp_path}"], CONF)
    progress = text.split("## Runs in progress")[1]
    assert "`python -m longterm.store.archive get runs/zoology_figure2`" in progress
    base_conv = next(cells_of(line) for line in progress.splitlines() if "base_conv" in line)
    record = json.loads(next(ARCHIVE.glob("*base_conv*/result.json")).read_text())
    shown = [record["status"], f"{record['epochs']} of 64", f"{100 * record['best_acc']:.1f}"]
    assert base_conv[1:4] == shown  # what its record says, however far it has trained
    assert base_conv[4] == (
        "`python src/train.py -m experiment=zoology_figure2 arch=zoology_base_conv model.dim=64 "
        "lr=0.00215 seed=1`"
    )


def test_the_learning_rates_say_a_grid_or_a_race(tmp_path: Path):
    for how in ("grid", "race"):
        sweep = tmp_path / how
        for lr in ("2.15e-3", "1e-2"):
            write_run(sweep, "gla", lr, 1)
        if how == "race":
            entry = {"command": f"python -m longterm.experiments.lr_race --sweep-dir {sweep}"}
            (sweep / "sweep.json").write_text(json.dumps([entry]))
        runs = load([sweep])
        assert is_figure2(runs)
        said = learning_rates(runs)
        assert said.startswith("2.15e-3, 1e-2 (a " + how)


def test_a_run_that_has_not_ended_is_listed_with_its_resume_command(tmp_path: Path):
    """Outside the archive its sweep directory is given to the command (not the experiment's
    own); a run started with no record yet is listed too, a finished one not."""
    sweep = tmp_path / "mine"
    write_run(sweep, "gla", "1e-4", 1)
    write_run(sweep, "gla", "1e-2", 1, status="interrupted")
    (write_run(sweep, "deltanet", "1e-2", 2) / "result.json").unlink()
    found = unfinished([sweep]).set_index("status")
    assert list(found.index) == [NO_RECORD, "interrupted"]
    assert found.loc["interrupted", "epochs"] == "13 of 64" and found["get"].isna().all()
    assert found.loc["interrupted", "resume"] == (
        "`python src/train.py -m experiment=zoology_figure2 model=gla model.use_short_conv=true "
        f"model.head=tied model.dim=64 lr=1e-2 seed=1 hydra.sweep.dir={sweep}`"
    )


@pytest.mark.parametrize(
    ("sweep", "doc", "flags"),
    [("runs/recall", "docs/recall.md", []), ("runs/zoology_figure2", "docs/zoology_figure2.md",
      ["--grid", "figure2"])],
)  # fmt: skip
def test_make_collect_writes_the_committed_page(sweep, doc, flags, tmp_path: Path, monkeypatch):
    """The page and its figure, as the Makefile's `collect` writes them from runs/, are the
    committed ones byte for byte (docs/recall.md stays what it was)."""
    if not (ROOT / sweep).is_dir():
        pytest.skip(f"no {sweep} in this checkout")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").symlink_to(ROOT / "runs")
    (tmp_path / "docs").mkdir()
    page([sweep, *flags, "--out", doc])
    assert Path(doc).read_text() == (ROOT / doc).read_text()
    figure = Path(doc).with_suffix("") / "recall_vs_state_size.png"
    assert figure.read_bytes() == (ROOT / figure).read_bytes()
