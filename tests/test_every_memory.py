"""The paper's problems across every memory: the planner's race commands, and the page made from
a tiny race of one memory beside archived Table 1 runs of the paper's network."""

import argparse
import json
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest
from helpers.paths import CONF, ROOT
from helpers.results import refuses_mix
from helpers.runs import forked
from omegaconf import OmegaConf

from longterm.config.command_line import check
from longterm.experiments import command_queue, lr_race
from longterm.experiments.every_memory.page import CPU_T0S, MEMORIES, SWEEP_ROOT, main
from longterm.experiments.every_memory.rule import PLAIN_LOOP, plain_loop, qualified, rises
from longterm.experiments.every_memory.runs import LRS, SETTING, plan
from longterm.experiments.every_memory.runs import main as main_runs
from longterm.store.archive import put

TASKS = ("addition", "multiplication")
TINY_DATA = ["data.batch_size=8", "data.batches_per_epoch=3", "data.val_size=16"]


def races(commands: list[str]) -> list[argparse.Namespace]:
    """Each command's arguments as lr_race reads them (after `python -m ...lr_race`)."""
    return [lr_race.parse(shlex.split(c)[3:]) for c in commands]


def test_the_plan_races_each_memory_at_its_cpu_lengths_short_ones_first():
    commands = plan(list(MEMORIES), None, (1, 2, 3))
    made = [(Path(a.sweep_dir).name, T0) for a in races(commands) for T0 in a.T0]
    order = [m for m in MEMORIES if m in CPU_T0S]  # the table's, the archived ones left out
    assert made == [(m, T0) for T0 in (50, 100) for m in order if T0 in CPU_T0S[m]]
    assert {a.sweep_dir for a in races(commands)} == {str(SWEEP_ROOT / m) for m in CPU_T0S}
    for args in races(commands):
        memory = Path(args.sweep_dir).name
        assert args.overrides[:2] == ["experiment=every_memory", f"model={memory}"]
        assert (args.seeds, args.pools, tuple(args.lrs)) == ([1, 2, 3], ["last"], LRS[memory])
        assert args.max_epochs == SETTING.trainer.max_epochs and args.launcher == "parallel"
    args = races(commands)[0]  # a job of the first race composes (tiny_race runs the others')
    job = ["task=addition", "pool=last", f"T0={args.T0[0]}", "lr=3e-3", "seed=1"]
    check([f"launcher={args.launcher}", *job, *args.overrides], CONF)
    # Chosen parts: the archived paper's network is never run again; a length off the CPU plan.
    (race,) = races(plan(["lstm", "attention"], [500], (1,)))
    assert (race.sweep_dir, race.T0, race.seeds) == (str(SWEEP_ROOT / "lstm"), [500], [1])


def test_under_slurm_one_list_by_length_then_table_order():
    """`--launcher slurm`: every race in one list, the short lengths first, then the table's
    order; each race sends its jobs to SLURM."""
    listed = plan(["gla", "lstm", "feedback", "attention"], [500, 100], (1,), "slurm")
    order = [(Path(a.sweep_dir).name, a.T0, a.launcher) for a in races(listed)]
    assert order == [(m, [T0], "slurm") for T0 in (100, 500) for m in ("lstm", "feedback", "gla")]


def test_every_jobs_overrides_are_checked_before_any_race(capsys):
    """Overrides after `--` go to every job after the planner's own, and a bad one stops the
    planner with one line before it prints or runs a race."""
    main_runs(["--models", "gla", "--T0", "500", "--seeds", "1", "--launcher", "slurm", "--",
               "launcher.partition=gpu"])  # fmt: skip
    (race,) = [c for c in capsys.readouterr().out.splitlines() if not c.startswith("#")]
    assert race.endswith("model=gla launcher.partition=gpu")
    for bad, said in [
        ("model.dim=x", "error: model.dim='x' is invalid: Input should be a valid integer"),
        ("launcher.partiton=gpu", "error: Could not override 'launcher.partiton'"),
    ]:
        with pytest.raises(SystemExit) as stopped:
            main_runs(["--models", "gla", "--launcher", "slurm", "--", bad])
        assert str(stopped.value).startswith(said) and "\n" not in str(stopped.value)
        assert capsys.readouterr().out == ""


def test_commands_at_once_run_no_more_than_asked_and_all_despite_a_failure(tmp_path: Path):
    """command_queue.run_at_once: every command runs, never more than `at_once` at the same time,
    and a failure is reported after the others have run."""
    count = (
        "import os, sys, time; d = sys.argv[1]; mine = os.path.join(d, sys.argv[2]); "
        "open(mine, 'w').close(); n = len([f for f in os.listdir(d) if f.startswith('r')]); "
        "open(os.path.join(d, 'seen' + sys.argv[2]), 'w').write(str(n)); time.sleep(0.2); "
        "os.remove(mine); sys.exit(sys.argv[2] == 'r3')"
    )
    commands = [f"python -c {shlex.quote(count)} {tmp_path} r{i}" for i in range(6)]
    with pytest.raises(SystemExit) as stopped:
        command_queue.run_at_once(commands, at_once=2)
    assert "1 of 6 commands failed" in str(stopped.value) and "r3" in str(stopped.value)
    seen = [int((tmp_path / f"seenr{i}").read_text()) for i in range(6)]
    assert all(1 <= n <= 2 for n in seen)  # every command ran, at most 2 at once


def test_a_process_takes_the_next_command_when_its_own_ends(tmp_path: Path):
    """`python -m longterm.experiments.command_queue FILE`: the commands come from one queue, so
    while the first runs long the other process runs all the rest; the first ends only once the
    last has started (two fixed halves would wait for each other forever), and each runs on one
    thread."""
    wait_for_last = (  # one line, as a planner's commands are
        "import os, sys, time; p = os.path.join(sys.argv[1], 'r3'); t = time.time() + 60; "
        "[time.sleep(0.05) for _ in iter(lambda: os.path.exists(p) or time.time() > t, True)]; "
        "sys.exit(not os.path.exists(p))"
    )
    mark = (
        "import os, sys; "
        "open(os.path.join(sys.argv[1], sys.argv[2]), 'w').write(os.environ['OMP_NUM_THREADS'])"
    )
    commands = [f"python -c {shlex.quote(wait_for_last)} {tmp_path}"]
    commands += [f"python -c {shlex.quote(mark)} {tmp_path} r{i}" for i in (1, 2, 3)]
    listed = tmp_path / "queue.txt"  # as a planner prints them, a note first
    listed.write_text("# 2 at a time under --run\n" + "\n".join(commands) + "\n\n")
    command_queue.main([str(listed), "--races", "2"])
    assert [(tmp_path / f"r{i}").read_text() for i in (1, 2, 3)] == ["1"] * 3
    listed.write_text("# a note, no command\n")
    with pytest.raises(SystemExit, match=f"error: no command in {listed}"):
        command_queue.main([str(listed)])


def test_the_experiments_sweep_directory_is_the_planners():
    """`src/train.py -m experiment=every_memory model=gla` sweeps where the planner's race does."""
    sweep = OmegaConf.to_container(SETTING.hydra.sweep, resolve=False)
    assert sweep["dir"] == f"{SWEEP_ROOT}/${{model.name}}"


def tiny_race(sweep: Path, seeds: tuple[str, ...] = ("1", "2"), lrs: tuple[str, ...] = ("3e-3",)):
    """The rnn's race on addition at T0 = 20 through lr_race, these seeds and learning rates,
    three updates a run; the sweep's result.json records."""
    argv = ["--sweep-dir", str(sweep), "--T0", "20", "--seeds", *seeds, "--tasks", "addition"]
    argv += ["--pools", "last"]
    argv += ["--lrs", *lrs, "--max-epochs", "1", "--launcher", "local"]
    argv += ["--", "experiment=every_memory", "model=rnn", *TINY_DATA]
    assert lr_race.main(argv, runner=forked) == 0
    return [json.loads(p.read_text()) for p in sorted(sweep.glob("*/result.json"))]


def section(text: str, task: str, memory: str) -> list[str]:
    """The cells of `memory`'s row in `task`'s table: memory, parameters, state size, limit,
    then one per T0."""
    table = text.split(f"## {task}\n")[1].split("\n## ")[0]
    line = next(x for x in table.splitlines() if x.startswith(f"| {memory} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_page_from_a_tiny_race_and_archived_table1_runs(tmp_path: Path):
    table1 = tmp_path / "table1"  # the archive's attention runs at T0 = 50, as they are
    for run in sorted((ROOT / "runs" / "table1").glob("*-attention-T50-*")):
        shutil.copytree(run, table1 / run.name)
    shutil.copy(ROOT / "runs" / "table1" / "sweep.json", table1)
    rnn = tiny_race(tmp_path / "every_memory" / "rnn")
    assert len(rnn) == 2 and {r["status"] for r in rnn} == {"max_epochs"}
    out = tmp_path / "docs" / "every_memory.md"
    out.parent.mkdir()
    main([str(tmp_path / "every_memory"), str(table1), "--out", str(out)])
    text = out.read_text()
    # an unsolved cell: the accuracy at the limit, median [range] over the seeds, 0 of 2 solved
    acc = pd.Series([r["final_acc"] for r in rnn])
    expected = f"{acc.median():.1%}" + (
        "" if acc.min() == acc.max() else f" [{acc.min():.1%}–{acc.max():.1%}]"
    )
    addition, multiplication = (section(text, task, "rnn") for task in TASKS)
    assert addition[1:4] == [f"{rnn[0]['n_params']:,}", f"{rnn[0]['state_size']:,}", "1"]
    assert addition[4:] == [f"*{expected}* (0/2) †", *["not run"] * 6]  # T0 = 20, the paper's
    assert multiplication[1:] == ["", "", "", *["not run"] * 7]  # no run of the rnn on it
    # solved cells from Table 1's archived runs: each seed's fewest epochs, the paper's protocol
    records = [json.loads(p.read_text()) for p in sorted(table1.glob("*/result.json"))]
    for task in TASKS:
        epochs = pd.Series(
            [
                min(
                    r["epoch_solved"]
                    for r in records
                    if r["task"] == task and r["seed"] == s and r["status"] == "solved"
                )
                for s in (1, 2, 3)
            ]
        )
        low, high = epochs.min(), epochs.max()
        median = f"{epochs.median():g}" + ("" if low == high else f" [{low}–{high}]")
        assert section(text, task, "attention")[3:6] == ["100", "not run", f"{median} (3/3)"]
        # recorded before result.json held it: the streamed softmax's D + 2 (docs/models.md)
        assert section(text, task, "attention")[2] == f"{records[0]['config']['model']['dim'] + 2}"
        assert section(text, task, "mean")[4:] == ["not run"] * 7  # no run given, T0 = 20 too
    # the race ran 2 seeds, Table 1 3: the verdict says so
    assert (
        "attention: every seed at T0 = 50. rnn: no seed at T0 = 20 (*inconclusive*: 2 seeds run, "
        "fewer than 3). Not run: mean, lstm" in text
    )
    assert (
        "**multiplication** (solved: 100% validation accuracy within the epoch limit). "
        "attention: every seed at T0 = 50. Not run: mean, rnn, lstm" in text
    )
    assert "| rnn | 50, 100 | 500, 1000, 5000, 10000 |  |" in text
    assert "| feedback | 50 | 100, 500, 1000 | 5000, 10000 |" in text
    assert f"--sweep-dir {tmp_path / 'every_memory' / 'rnn'} --T0 20" in text  # its command
    assert text.count("† no paper value: 3 updates an epoch, 16 validation sequences") == 1
    figure = out.parent / "every_memory" / "solved.png"  # beside the page, which shows it
    assert "![which memory solves which problem at which T0](every_memory/solved.png)" in text
    drawn = figure.read_bytes()
    assert drawn.startswith(b"\x89PNG")
    main([str(tmp_path / "every_memory"), str(table1), "--out", str(out)])  # nothing random
    assert out.read_text() == text and figure.read_bytes() == drawn
    put([tmp_path / "every_memory"], tmp_path / "runs")  # the folder of sweeps, each one's record
    main([str(tmp_path / "runs" / "every_memory"), str(table1), "--out", str(out)])
    assert out.read_text().split("## Commands")[0] == text.split("## Commands")[0]
    assert f"--sweep-dir {tmp_path / 'every_memory' / 'rnn'} --T0 20" in out.read_text()
    assert "‡" not in text  # every seed ran the one rate of the grid


def test_a_seed_read_at_fewer_learning_rates_than_the_grid_is_marked(tmp_path: Path):
    """A race stopped after seed 1's rival: seed 2 has only its leader, so its cell is the best
    so far and the page says so (‡), in the verdict and under the table."""
    races = tmp_path / "every_memory"
    tiny_race(races / "rnn")
    runs = tiny_race(races / "rnn", seeds=("1",), lrs=("3e-3", "1e-3"))
    assert sorted((r["seed"], r["lr"]) for r in runs) == [(1, 1e-3), (1, 3e-3), (2, 3e-3)]
    out = tmp_path / "every_memory.md"
    main([str(races), "--out", str(out)])
    text = out.read_text()
    assert section(text, "addition", "rnn")[4].endswith("(0/2) † ‡")
    assert "Read at fewer learning rates than the memory's grid (‡ below): rnn at T0 = 20." in text
    assert (
        "‡ seeds read at the best of fewer learning rates than their memory's grid (a race "
        "still running, or a grid cut for cost): rnn at T0 = 20, seed 2 (1 of 2 rates)." in text
    )
    tiny_race(races / "rnn", seeds=("2",), lrs=("3e-3", "1e-3"))  # the race finished
    main([str(races), "--out", str(out)])
    assert "‡" not in out.read_text()


def test_the_page_without_runs_says_so_and_keeps_the_plan(tmp_path: Path):
    out = tmp_path / "every_memory.md"
    main([str(tmp_path / "none"), "--out", str(out)])
    text = out.read_text()
    verdict = text.split("## Verdict")[1].split("## Plan")[0]
    assert verdict.startswith("\n\n**Rule.** A cell reads *solved*")
    assert "No run has finished yet." in verdict
    assert "| rnn | 50, 100 | 500, 1000, 5000, 10000 |  |" in text  # the plan, whole
    assert not (tmp_path / "every_memory").exists()  # no figure without cells


def test_unsolved_seeds_still_rising_are_not_solved_within_their_updates():
    """The checks pages' rule (analysis/plateau.py) on this page: a cell none of whose seeds
    solved, with a run still rising at its cutoff, reads *not solved within N updates* with each
    seed's rise; one at its plateau reads *no seed*."""
    runs = pd.DataFrame(
        {
            "run_dir": ["a", "b", "c", "d"],
            "history": [[0.1, 0.1, 0.1, 0.2], [0.1, 0.1, 0.1, 0.1], [0.5, 0.5, 1.0], [0.1] * 4],
            "status": ["max_epochs", "max_epochs", "solved", "max_epochs"],
            "updates": [4000, 4000, 3000, 4000],
        }
    )
    seeds = pd.DataFrame(
        {
            "memory": ["lstm", "lstm", "gla", "rnn"],
            "T0": [50, 50, 50, 50],
            "seed": [1, 2, 1, 1],
            "solved": [False, False, True, False],
            "run_dirs": [("a",), ("b",), ("c",), ("d",)],
        }
    )
    cells = rises(seeds, runs, ["memory", "T0"]).set_index("memory")
    assert cells.loc["lstm"].rises == (0.1, 0.0) and cells.loc["lstm"].updates == 4000
    assert cells.loc["gla"].rises == (0.0,)  # solved: at its plateau
    said = qualified("no seed", list(cells.reset_index().itertuples()))
    assert said[0][0] == "no seed" and [c.memory for c in said[0][1]] == ["gla", "rnn"]
    assert said[1][0] == (
        "not solved within 4,000 updates, still rising (points gained over the last 2 epochs, "
        "each seed: +10.0 / +0.0)"
    )


def test_the_plain_loop_is_read_from_its_record(tmp_path: Path):
    """What scripts/plain_lstm_addition.py wrote beside the page, said on it (not typed)."""
    assert plain_loop(tmp_path) == ""
    curve = [{"update": u, "val_acc": a} for u, a in ((1000, 0.146), (2000, 0.149))]
    record = {
        "command": "python scripts/plain_lstm_addition.py --T0 50",
        "commit": "0123456789abcdef",
        "machine": "x86_64, 1 thread",
        "model": "nn.LSTM(2, 100)",
        "runs": [{"T0": 50, "curve": curve, "constant_predictor_acc": 0.154}],
    }
    (tmp_path / PLAIN_LOOP).write_text(json.dumps(record))
    said = plain_loop(tmp_path)
    assert "at T0 = 50, 14.6–14.9% over 2,000 updates (every 1,000: 14.6, 14.9" in said
    assert "the constant predictor 15.4%" in said and "commit 0123456789ab" in said
    assert "stays within 5.0 points of the constant predictor at every length it ran" in said


def test_a_cell_never_joins_runs_of_other_settings(tmp_path: Path):
    """The archived race of gla on addition at T0 = 50 (three seeds, the rivals capped at the
    epochs their leader needed) is one cell; a rival capped elsewhere than where its leader
    solved, a seed raced under another epoch limit, or a run of another batch is refused in one
    line naming the setting that differs."""
    archived = sorted((ROOT / "runs" / "every_memory" / "gla").glob("addition-gla-last-T50-*"))

    def copy(into: Path, changed: dict[tuple[float, int], dict] | None = None) -> Path:
        for run in archived:
            record = json.loads((run / "result.json").read_text())
            record |= (changed or {}).get((record["lr"], record["seed"]), {})
            (into / "gla" / run.name).mkdir(parents=True)
            (into / "gla" / run.name / "result.json").write_text(json.dumps(record))
        return into

    out = tmp_path / "every_memory.md"
    main([str(copy(tmp_path / "race")), "--out", str(out)])
    assert section(out.read_text(), "addition", "gla")[3] == "5"  # the race's epoch limit
    for i, (changed, named) in enumerate(
        [
            ({(1e-3, 2): {"max_epochs": 4}}, "max_epochs: 4, 5"),  # its leader solved at 3
            ({(3e-3, 3): {"max_epochs": 8}}, "max_epochs: 5, 8"),  # seed 3's race at 8 epochs
            ({(1e-3, 1): {"batch_size": 50}}, "batch_size: 50, 100"),
        ]
    ):
        mixed = copy(tmp_path / f"mixed{i}", changed)
        argv = [str(mixed), "--out", str(tmp_path / "mixed.md")]
        refuses_mix(main, argv, "task=addition, memory=gla, T0=50", named)
    assert not (tmp_path / "mixed.md").exists()
