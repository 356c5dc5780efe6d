"""A number out of range on the command line of a tool (the planners, the queue and its planner
of hours, the learning-rate race, the bottleneck measure, the state-size table) fails before
anything runs, in one line naming the flag and what is allowed; nothing is written."""

import importlib
from pathlib import Path

import pytest
from helpers.paths import ROOT

from longterm.analysis import state_sizes
from longterm.experiments import command_queue, lr_race, race_hours
from longterm.experiments.bottleneck import page as bottleneck
from longterm.experiments.claims import runs as claim_runs
from longterm.experiments.every_memory import runs as every_memory_runs
from longterm.experiments.recall import figure2
from longterm.experiments.recall import runs as recall_runs

RACE = ["--sweep-dir", "race", "--T0", "50", "--tasks", "addition", "--pools", "last"]
OUT = ["--out", "measured"]  # where a bottleneck measure that ran would write, not docs/
WHOLE = "is not allowed: give a whole number >= "


@pytest.mark.parametrize(
    ("main", "argv", "line"),
    [
        (command_queue.main, ["queue.txt", "--races", "0"], f"--races: 0 {WHOLE}1"),
        (every_memory_runs.main, ["--races", "-1"], f"--races: -1 {WHOLE}1"),
        (every_memory_runs.main, ["--time", "0"], "--time: 0 is not allowed: give a number > 0"),
        (recall_runs.main, ["--races", "0"], f"--races: 0 {WHOLE}1"),
        (figure2.main, ["--races", "0"], f"--races: 0 {WHOLE}1"),
        (figure2.main, ["--lengths", "8"], f"--lengths: 8 {WHOLE}16"),
        (race_hours.main, ["queue.txt", "--cores", "0"], f"--cores: 0 {WHOLE}1"),
        (claim_runs.main, ["--time", "-3"], f"--time: -3 {WHOLE}1"),
        (bottleneck.main, [*OUT, "--trials", "0"], f"--trials: 0 {WHOLE}1"),
        (bottleneck.main, [*OUT, "--unseen", "1"], f"--unseen: 1 {WHOLE}2"),
        (bottleneck.main, [*OUT, "--seed", "-1"], f"--seed: -1 {WHOLE}0"),
        (state_sizes.main, ["--dim", "0"], f"--dim: 0 {WHOLE}1"),
        (lr_race.main, [*RACE, "--max-epochs", "0"], f"--max-epochs: 0 {WHOLE}1"),
        (lr_race.main, [*RACE, "--max-epochs", "2.5"], "--max-epochs: '2.5' is not a whole number"),
    ],
)
def test_a_number_out_of_range_is_one_line_before_anything_runs(
    main, argv, line, tmp_path: Path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "queue.txt").write_text("true\n")
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: argument {line}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queue.txt"]


def test_a_width_a_model_cannot_take_names_the_model(capsys):
    with pytest.raises(SystemExit, match=r"^error: --dim 2: model=all_attention: heads=4 must"):
        state_sizes.main(["--dim", "2"])
    assert capsys.readouterr().out == ""


def test_race_hours_refuses_a_queue_without_commands(tmp_path: Path):
    queue = tmp_path / "queue.txt"
    queue.write_text("# a planner's note, no command\n\n")
    with pytest.raises(SystemExit, match=f"^error: no command in {queue}$"):
        race_hours.main([str(queue)])


@pytest.mark.parametrize(
    ("main", "args"),
    [
        (recall_runs.main, ["--models", "transformer", "--settings", "32:2", "--dims", "32"]),
        (every_memory_runs.main, ["--models", "lstm", "--T0", "100"]),
    ],
)
def test_a_planners_hint_names_a_flag_it_takes(main, args, capsys):
    """The epoch limit given as an override: refused in one line that names --max-epochs, which
    the planner takes and hands to each race."""
    with pytest.raises(SystemExit) as refused:
        main([*args, "--", "trainer.max_epochs=3"])
    assert str(refused.value.code).startswith("error: give the epoch limit as --max-epochs: ")
    main([*args, "--max-epochs", "3"])
    printed = [line for line in capsys.readouterr().out.splitlines() if "lr_race" in line]
    assert printed and all("--max-epochs 3 " in line for line in printed)


def tools() -> list[str]:
    """The modules of experiments/, analysis/ and store/ that are commands (`python -m ...`)."""
    found = []
    for folder in ("experiments", "analysis", "store"):
        for path in sorted((ROOT / "src" / "longterm" / folder).rglob("*.py")):
            if 'if __name__ == "__main__":' in path.read_text():
                found.append(".".join(path.relative_to(ROOT / "src").with_suffix("").parts))
    return found


@pytest.mark.parametrize("module", tools())
def test_every_tools_help_opens_with_whole_sentences(module, capsys):
    """--help's description (its first paragraph) ends a sentence, never cut at a line's end."""
    with pytest.raises(SystemExit) as done:
        importlib.import_module(module).main(["--help"])
    assert done.value.code == 0
    described = capsys.readouterr().out.split("\n\n")[1].strip()
    assert described.endswith("."), described
