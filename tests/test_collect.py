"""The collector (longterm.analysis.collect) and the learning-rate race
(longterm.experiments.lr_race): the paper's rule on made-up runs, then real sweeps through
src/train.py."""

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from helpers.paths import ROOT
from helpers.presets import FOUR_STEPS, quick
from helpers.results import read_json, refuses_mix, sweep_results
from helpers.runs import forked, train_py
from omegaconf import OmegaConf

from longterm.analysis import provenance
from longterm.analysis.collect import collect
from longterm.analysis.collect import main as collect_main
from longterm.analysis.evaluate import accuracy_by_batch
from longterm.analysis.events import curve
from longterm.analysis.identity import MixedSettingsError
from longterm.analysis.length_extrapolation import length_table
from longterm.analysis.provenance import distinct, launched_by, sweep_commands
from longterm.analysis.runs import epochs_trained, load_runs, varied_settings
from longterm.analysis.seeds import best_over_lrs, cell_text, summarise
from longterm.analysis.variable_length import by_length_markdown, variable_length
from longterm.experiments import lr_race
from longterm.store.continue_run import continue_run

TASKS = ("addition", "multiplication")


def run(lr: float, status: str, epochs: int, final_acc: float, max_epochs: int = 100) -> dict:
    solved = status == "solved"
    return {
        "lr": lr,
        "status": status,
        "epoch_solved": epochs if solved else None,
        "epochs": epochs,
        "max_epochs": max_epochs,
        "final_acc": 1.0 if solved else final_acc,
        "run_dir": f"lr={lr}",
        "wall_time_s": 10.0 * epochs,
    }


def test_the_fewest_epochs_win_and_ties_are_kept():
    runs = pd.DataFrame(
        [
            run(3e-4, "solved", 5, 1.0),
            run(1e-3, "solved", 2, 1.0),
            run(3e-3, "solved", 2, 1.0, max_epochs=2),  # a rival capped at the leader's epochs
            run(1e-2, "diverged", 1, float("nan")),
        ]
    )
    best = best_over_lrs(runs)
    assert (best.solved, best.epochs, best.lrs, best.diverged_lrs) == (
        True,
        2,
        (1e-3, 3e-3),
        (1e-2,),
    )
    assert best.grid_wall_s == 100.0 and best.best_wall_s == 20.0


def test_a_run_continued_to_a_larger_limit_wins_with_its_whole_cost():
    """15 epochs unsolved, then continued to a limit of 30 and solved at 22 (continue_run)."""
    continued = {**run(1e-3, "solved", 22, 1.0, max_epochs=30), "wall_time_s": 70.0}
    runs = pd.DataFrame([run(1e-3, "max_epochs", 15, 0.98, max_epochs=15), continued])
    best = best_over_lrs(runs)
    assert (best.solved, best.epochs, best.lrs, best.limit) == (True, 22, (1e-3,), 30)
    assert best.best_wall_s == 150.0 + 70.0


def test_unsolved_is_the_best_accuracy_at_the_limit_never_a_zero():
    runs = pd.DataFrame(
        [
            run(1e-3, "max_epochs", 100, 0.80),
            run(3e-3, "max_epochs", 100, 0.90),
            run(1e-2, "diverged", 3, float("nan")),
        ]
    )
    best = best_over_lrs(runs)
    assert (best.solved, best.epochs, best.acc, best.lrs) == (False, None, 0.90, (3e-3,))
    seeds = pd.DataFrame([best, best_over_lrs(runs.iloc[:1]), best_over_lrs(runs.iloc[2:])])
    cell = summarise(seeds)
    # The diverged-only seed has no accuracy at all: it is not averaged in as 0.
    assert cell.seeds == 3 and cell.solved_seeds == 0 and cell.diverged_runs == 2
    assert cell_text(cell) == "*85.0% [80.0%–90.0%]*"


def test_cells_give_median_and_range_over_seeds():
    seeds = pd.DataFrame(
        [best_over_lrs(pd.DataFrame([run(1e-3, "solved", e, 1.0)])) for e in (1, 3, 2)]
        + [best_over_lrs(pd.DataFrame([run(1e-3, "max_epochs", 100, 0.5)]))]
    )
    cell = summarise(seeds)
    assert (cell.epochs_median, cell.epochs_min, cell.epochs_max) == (2, 1, 3)
    assert cell_text(cell) == "2 [1–3]; 3/4 solved, *50.0%*"
    assert cell.lr_chosen == "1e-03 ×4" and cell.lrs_run == "1e-03"


def test_rivals_may_run_as_long_as_the_leader_needed():
    results = [
        {
            "task": "addition",
            "pool": "mean",
            "T0": 50,
            "seed": 1,
            "lr": 3e-3,
            "status": "solved",
            "epoch_solved": 4,
        },
        {
            "task": "addition",
            "pool": "mean",
            "T0": 50,
            "seed": 2,
            "lr": 3e-3,
            "status": "max_epochs",
            "epoch_solved": None,
        },
        {
            "task": "addition",
            "pool": "mean",
            "T0": 50,
            "seed": 1,
            "lr": 1e-3,
            "status": "solved",
            "epoch_solved": 2,
        },
    ]
    caps = lr_race.leader_caps(results, leader=3e-3, limit=100)
    assert caps == {("addition", "mean", 50, 1): 4, ("addition", "mean", 50, 2): 100}
    with pytest.raises(ValueError, match="its own --sweep-dir"):
        lr_race.leader_caps([results[0], results[0]], leader=3e-3, limit=100)


def test_a_packs_members_count_once_in_the_time_of_a_sweep():
    """sweeps.md's time in processes: runs of one process that overlap (a pack's members) count
    once, runs of one process in turn add up, and a run with no process recorded counts alone."""
    rows = [  # (process, finished at minute, wall minutes)
        ("host:1:5", 10, 10), ("host:1:5", 5, 5),  # a pack: both from minute 0
        ("host:1:5", 20, 5),  # then the same process's next job, minutes 15-20
        ("host:2:7", 10, 10),  # another process at the same time (another core)
        (None, 20, 2),
    ]  # fmt: skip
    runs = pd.DataFrame(
        [
            {
                "process": p,
                "finished_at": f"2026-12-02T10:{end:02d}:00+00:00",
                "wall_time_s": 60.0 * minutes,
            }
            for p, end, minutes in rows
        ]
    )
    assert provenance.process_minutes(runs) == pytest.approx(10 + 5 + 10 + 2)
    assert provenance.process_minutes(runs.drop(columns="process")) == pytest.approx(32)


def test_a_race_led_by_an_earlier_races_rival_is_refused_before_any_job(tmp_path, capsys):
    """Seed 1's cell ran under a race led by 3e-3, with 1e-2 a rival capped at 16 epochs. A race
    led by 1e-2 over that seed would train 1e-2 again beside it: refused on one line, nothing
    launched and nothing recorded; led by 3e-3 it is the same race as before."""
    cell = {"task": "addition", "pool": "mean", "T0": 5000, "seed": 1, "status": "solved"}
    runs = {
        "lr3e-3": {**cell, "lr": 3e-3, "max_epochs": 100, "epoch_solved": 16},
        "lr1e-2,trainer.max_epochs=16": {**cell, "lr": 1e-2, "max_epochs": 16, "epoch_solved": 13},
    }
    for name, result in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.json").write_text(json.dumps(result))
    grid = ["--T0", "5000", "--tasks", "addition", "--pools", "mean", "--seeds", "1", "2"]
    argv = ["--sweep-dir", str(tmp_path), *grid, "--lrs", "1e-2", "3e-3", "3e-4", "1e-3"]
    assert lr_race.main(argv) == 2
    line = capsys.readouterr().err
    assert line == (
        "error: --lrs 0.01 ...: seed 1 of addition/mean/T0=5000 already ran lr=0.01 as a rival "
        "capped at 16 epochs by an earlier race (led by lr=0.003); lead that seed with the same "
        "rate as before (a race per seed set), or give this race its own --sweep-dir\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(runs)  # no job, no sweep.json
    args = lr_race.parse([*argv[:-5], "--lrs", "3e-3", "1e-2", "3e-4", "1e-3"])
    assert lr_race.leader_conflict(lr_race.read_results(tmp_path), args, 100) is None


def test_a_race_takes_its_epoch_limit_from_the_composed_config(tmp_path, capsys):
    """An experiment's own limit (recall's 8 epochs) is the race's: its leader, run to that limit
    and unsolved, is the leader again when the race is run a second time, not a capped rival."""
    grid = ["--sweep-dir", str(tmp_path), "--T0", "64", "--tasks", "mqar"]
    grid += ["--pools", "per_step", "--seeds", "1", "--lrs", "3e-3", "1e-3", "--"]
    args = lr_race.parse([*grid, "experiment=recall", "model=gla"])
    assert args.default_limit == 8
    assert lr_race.parse(grid).default_limit == 100  # conf/trainer's
    cell = {"task": "mqar", "pool": "per_step", "T0": 64, "seed": 1, "status": "max_epochs"}
    leader = [{**cell, "lr": 3e-3, "max_epochs": 8, "epoch_solved": None}]
    assert lr_race.leader_conflict(leader, args, args.default_limit) is None
    with pytest.raises(SystemExit):
        lr_race.parse([*grid, "experiment=nope"])
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert "experiment" in line and "nope" in line


def test_a_race_through_the_real_entry_point(tmp_path: Path):
    """A leader that solves at epoch 1 (threshold 0 makes any accuracy count) caps its rivals
    at 1 epoch; all three tie, and the collector names all three."""
    argv = ["--sweep-dir", str(tmp_path), "--T0", "50", "--tasks", "addition", "--pools", "mean"]
    argv += ["--seeds", "1", "--lrs", "3e-3", "1e-3", "1e-2", "--max-epochs", "3"]
    argv += ["--launcher", "local", "--"]  # each stage in one process (tests/test_launchers.py)
    argv += quick(
        "data.val_size=50",
        "callbacks.stop_when_solved.threshold=0",
        drop=("trainer.max_epochs",),  # the race sets it
        base=FOUR_STEPS,
    )
    assert lr_race.main(argv, runner=forked) == 0
    results = {r["lr"]: r for r in sweep_results(tmp_path)}
    assert {lr: (r["max_epochs"], r["epochs"]) for lr, r in results.items()} == {
        3e-3: (3, 1),
        1e-3: (1, 1),
        1e-2: (1, 1),
    }
    (record,) = read_json(tmp_path / "sweep.json")
    assert record["command"].startswith("python -m longterm.experiments.lr_race --sweep-dir")
    assert len(record["launched"]) == 2 and "lr=0.001,0.01" in record["launched"][1]
    collect([str(tmp_path)], tmp_path / "out")
    cells = pd.read_csv(tmp_path / "out" / "table1.csv")
    assert cells.lr_chosen.tolist() == ["1e-03, 3e-03, 1e-02"]
    assert "python -m longterm.experiments.lr_race" in (tmp_path / "out" / "sweeps.md").read_text()
    # The same command again trains nothing: every job is already finished.
    assert lr_race.main(argv, runner=forked) == 0
    assert len(read_json(tmp_path / "sweep.json")) == 2


def test_collector_on_a_small_real_sweep(tmp_path: Path, caplog):
    """Two tasks x two seeds, plus masked runs in a second sweep; one result.json corrupt, one
    missing. Each seed gets its own directory and its own data."""
    sweep, masked = tmp_path / "sweep", tmp_path / "masked"
    args = ["-m", "task=addition,multiplication", "seed=1,2", *FOUR_STEPS]
    assert train_py(*args, f"hydra.sweep.dir={sweep}").returncode == 0
    args = ["-m", "task=addition", "seed=1,2", "pool.mask_padding=true", *FOUR_STEPS]
    assert train_py(*args, f"hydra.sweep.dir={masked}").returncode == 0
    dirs = sorted(p.parent.name for p in sweep.glob("*/result.json"))
    rest = (
        "data.batches_per_epoch=4,data.val_size=100,model.impl=reference,"
        "trainer.log_every_n_steps=1,trainer.max_epochs=2"
    )
    job = {(s, t): sweep / f"{t}-attention-T50-lr1e-3-s{s},{rest}" for s in (1, 2) for t in TASKS}
    assert dirs == sorted(j.name for j in job.values())
    seed1, seed2 = (read_json(job[s, "addition"] / "result.json") for s in (1, 2))
    assert seed1["seed"] != seed2["seed"]
    losses = [curve(job[s, "addition"], "train/loss").tolist() for s in (1, 2)]
    assert len(losses[0]) == 8 and losses[0] != losses[1]  # each seed its own data and weights

    corrupt = job[1, "multiplication"] / "result.json"
    corrupt.write_text(corrupt.read_text()[:100])
    missing = job[2, "multiplication"]
    (missing / "result.json").unlink()
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, logger="longterm.analysis.collect"):
        runs = collect([str(sweep), str(masked)], out)
    warnings = [r.getMessage() for r in caplog.records]
    assert any(str(corrupt) in w and "corrupt" in w for w in warnings), warnings
    assert any(str(missing) in w and "no result.json" in w for w in warnings), warnings
    assert len(runs) == 4 and set(runs.task) == {"addition"}
    assert len(pd.read_csv(out / "runs.csv")) == 4

    cells = pd.read_csv(out / "table1.csv")  # the masked runs are not Table 1's
    assert cells[["task", "pool", "T0", "seeds", "solved_seeds"]].values.tolist() == [
        ["addition", "attention", 50, 2, 0]
    ]
    accs = sorted(r["final_acc"] for r in runs[~runs.mask_padding].to_dict("records"))
    assert cells.unsolved_acc_min[0] == accs[0] and cells.unsolved_acc_max[0] == accs[1]
    table = (out / "table1.md").read_text()
    assert "| addition | attention | *" in table and "not run (3)" in table  # T0=10000: paper's 3
    assert (
        "lr_race --sweep-dir outputs/table1 --T0 50 100 500 1000 5000 10000 --seeds 1 2 3" in table
    )
    masking = (out / "masking.md").read_text()
    assert "| addition | attention | 50 | 1e-03 | 2 | *" in masking
    for name in ("epochs_vs_T0.png", "learning_curves.png", "sweeps.md"):
        assert (out / name).stat().st_size > 0
    assert (
        "python src/train.py -m task=addition seed=1,2 pool.mask_padding=true"
        in (out / "sweeps.md").read_text()
    )


def test_variable_length_accuracy_by_length(tmp_path: Path):
    """Each validation batch has one length; the mean over them is the run's final val/acc."""
    lengths = ["data=variable", "data.min_length=20", "data.max_length=80", "data.val_batches=4"]
    lengths += ["data.val_batch_size=5", "data.batches_per_epoch=4", "model.impl=reference"]
    two_epochs = quick(*lengths, drop=("data.val_size",))  # data=variable has none
    one_epoch = quick("trainer.max_epochs=1", base=two_epochs)
    out = train_py(*one_epoch, f"hydra.run.dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr
    by_length = accuracy_by_batch(tmp_path / "run")
    assert by_length.length.tolist() == [20, 40, 60, 80] and set(by_length.n) == {5}
    final = read_json(tmp_path / "run" / "result.json")["final_acc"]
    assert by_length.acc.mean() == pytest.approx(final)
    # Continued to 2 epochs: the collector counts the chain once, at its longest.
    continue_run(tmp_path / "run", tmp_path / "longer" / "run")
    assert train_py(*two_epochs, f"hydra.run.dir={tmp_path / 'longer' / 'run'}").returncode == 0
    collect([str(tmp_path / "run"), str(tmp_path / "longer")], tmp_path / "out")
    assert (
        "| addition | attention | 1 | 1e-03 | 2 |"
        in (tmp_path / "out" / "variable_length.md").read_text()
    )
    assert len(pd.read_csv(tmp_path / "out" / "accuracy_by_length.csv")) == 4
    assert (
        "| addition | attention | 1e-03 |"
        in (tmp_path / "out" / "variable_length.md")
        .read_text()
        .split("## Accuracy by test length")[1]
    )
    assert (tmp_path / "out" / "variable_length_curves.png").stat().st_size > 0


def test_variable_length_rows_are_per_learning_rate():
    """Two learning rates of one task and pool are two rows, never one averaged over both."""
    rows = [
        {**run(lr, "max_epochs", 100, acc), "data": "variable", "model": "feedforward"}
        for lr, acc in ((1e-3, 0.99), (3e-3, 0.80))
    ]
    common = {"task": "addition", "pool": "attention", "seed": 1, "mask_padding": False}
    runs = pd.DataFrame(
        [{**r, **common, "best_acc": r["final_acc"], "epochs_trained": 100} for r in rows]
    )
    v = variable_length(runs)
    assert v.lr.tolist() == ["1e-03", "3e-03"]
    assert v.final_acc_mean.tolist() == [0.99, 0.80] and v.seeds.tolist() == [1, 1]


def test_accuracy_by_length_halves_are_means_over_lengths_then_seeds():
    rows = [
        {"task": "addition", "pool": "mean", "lr": 1e-3, "seed": seed, "length": n, "acc": acc}
        for seed, accs in ((1, (1.0, 0.8, 0.4, 0.2)), (2, (0.8, 0.8, 0.2, 0.0)))
        for n, acc in zip((20, 40, 60, 80), accs, strict=True)
    ]
    text = by_length_markdown(pd.DataFrame(rows))
    assert "| task | pool | lr | lengths 20–40 | lengths 60–80 |" in text
    assert "| addition | mean | 1e-03 | 85.0% | 20.0% |" in text


def test_load_runs_names_a_missing_sweep(tmp_path: Path, caplog):
    with caplog.at_level(logging.WARNING, logger="longterm.analysis.collect"):
        assert load_runs([tmp_path / "nowhere"]).empty
    assert "nowhere: no such sweep directory" in caplog.text


def test_jobs_not_made_by_the_last_command_are_listed_with_their_own_overrides(tmp_path: Path):
    """multirun.yaml keeps only the last command in a directory; earlier jobs still show."""
    task = ["task=addition,multiplication", "lr=1e-3", "trainer.max_epochs=30"]
    hydra = ["hydra.sweep.dir=outputs/long", "hydra.mode=MULTIRUN"]
    multirun = {"hydra": {"overrides": {"task": task, "hydra": hydra}}}
    OmegaConf.save(multirun, tmp_path / "multirun.yaml")
    jobs = {
        "made": ["task=multiplication", "lr=0.001", "trainer.max_epochs=30"],
        "earlier": ["task=multiplication", "lr=0.001", "trainer.max_epochs=15"],
    }
    for name, own in jobs.items():
        (tmp_path / name / ".hydra").mkdir(parents=True)
        OmegaConf.save(OmegaConf.create(own), tmp_path / name / ".hydra" / "overrides.yaml")
    assert sweep_commands(tmp_path, [tmp_path / "made", tmp_path / "earlier"]) == [
        "python src/train.py -m " + " ".join(task) + " hydra.sweep.dir=outputs/long",
        "python src/train.py -m " + " ".join(jobs["earlier"]) + " hydra.sweep.dir=outputs/long",
    ]
    assert launched_by(["experiment=variable_length", "pool=mean"], ["experiment=variable_length"])


def test_jobs_from_before_the_command_record_keep_their_commands(tmp_path):
    """A sweep directory whose command record (commands.json) began after some of its jobs were
    made: those jobs show as commands of their own, before the recorded ones, also where a
    recorded command would have made a job like them but for a key they do not set."""
    recorded = "python src/train.py -m experiment=claims task=fixed_knowledge task.params.vocab=95"
    (tmp_path / "commands.json").write_text(json.dumps([{"command": recorded}]))
    jobs = {
        "old": ["experiment=claims", "task=fixed_knowledge"],
        "new": ["experiment=claims", "task=fixed_knowledge", "task.params.vocab=95"],
    }
    for name, own in jobs.items():
        (tmp_path / name / ".hydra").mkdir(parents=True)
        OmegaConf.save(OmegaConf.create(own), tmp_path / name / ".hydra" / "overrides.yaml")
    assert sweep_commands(tmp_path, [tmp_path / "old", tmp_path / "new"]) == [
        "python src/train.py -m experiment=claims task=fixed_knowledge",
        recorded,
    ]


def test_a_command_run_again_shows_once_with_its_count():
    """A race rerun to resume or fill in (the same command line, invoked three times) is one
    command on the pages, with how many times it ran; the others keep their order."""
    race, other = "python -m longterm.experiments.lr_race --T0 50", "python src/train.py -m T0=100"
    assert distinct([race, other, race, race]) == [f"{race}  # 3 invocations", other]
    assert distinct([other]) == [other]


def test_a_resumed_run_counts_only_the_epochs_of_its_last_process():
    record = {"epochs": 20, "updates": 20_000, "resumed_at_update": 3_000}
    assert epochs_trained(record) == 17
    assert epochs_trained({**record, "resumed_at_update": None}) == 20


def test_the_sweeps_page_adds_the_time_of_a_resumed_runs_earlier_processes():
    runs = pd.DataFrame(
        {
            "epochs": [5, 5, 5],
            "epochs_trained": [2, 4, 5],
            "resumed_at_update": [3_000, 1_000, None],
            "earlier_wall_time_s": [600.0, None, None],  # the second resumed before it was kept
        }
    )
    (line,) = provenance.resumed_line(runs)
    assert line == (
        "- resumed from a checkpoint: 2 runs (after 3, 1 epochs); a wall time counts only the "
        "process that finished the run; the processes before it: 10.0 min more (1 of the 2 runs "
        "record them)"
    )
    assert provenance.resumed_line(runs.drop(columns="earlier_wall_time_s")) == [
        line.split("; the processes")[0]
    ]


def test_a_cell_never_joins_runs_of_other_settings(tmp_path: Path):
    """The archived race of Table 1's attention on addition at T0 = 50 (three seeds, four
    learning rates, the rivals capped at the epoch their leader solved) collects; a seed raced
    under another epoch limit, or a run of another epoch length, is refused in one line naming
    the setting that differs, before anything collected before is touched."""
    archived = sorted((ROOT / "runs" / "table1").glob("addition-attention-T50-*"))

    def copy(into: Path, changed: dict[tuple[float, int], dict] | None = None) -> Path:
        for run in archived:
            record = json.loads((run / "result.json").read_text())
            record |= (changed or {}).get((record["lr"], record["seed"]), {})
            (into / run.name).mkdir(parents=True)
            (into / run.name / "result.json").write_text(json.dumps(record))
        return into

    out = tmp_path / "out"
    collect([str(copy(tmp_path / "race"))], out)
    cells = pd.read_csv(out / "table1.csv")
    assert cells[["seeds", "solved_seeds", "limit"]].values.tolist() == [[3, 3, 100]]
    table = (out / "table1.md").read_text()
    for i, (changed, named) in enumerate(
        [
            ({(3e-3, 2): {"max_epochs": 50}}, "max_epochs: 50, 100"),  # seed 2's race at 50
            ({(1e-3, 3): {"batches_per_epoch": 500}}, "batches_per_epoch: 500, 1000"),
        ]
    ):
        refuses_mix(
            collect_main,
            [str(copy(tmp_path / f"mixed{i}", changed)), "--out", str(out)],
            "task=addition, pool=attention, T0=50",
            named,
        )
    assert (out / "table1.md").read_text() == table  # the earlier collection, untouched


def test_the_variable_length_and_length_tables_refuse_runs_of_other_settings():
    """A row of the variable-length table is one task, pool and learning rate over seeds: a seed
    with the padding masked beside unmasked ones is refused; so is a cell of the length table
    (task, model, pool, T0 over seeds) that joins two learning rates."""

    def row(seed: int, masked: bool = False, lr: float = 1e-3) -> dict:
        common = {"task": "addition", "pool": "attention", "model": "feedforward", "T0": 50}
        settings = {**common, "lr": lr, "seed": seed, "mask_padding": masked, "max_epochs": 100}
        return {
            **run(lr, "max_epochs", 100, 0.9),
            **common,
            **{"data": "variable", "seed": seed, "mask_padding": masked, "best_acc": 0.9},
            **{"epochs_trained": 100, "eval_lengths": {"100": 0.5}, "settings": settings},
        }

    runs = pd.DataFrame([row(1), row(2)])
    assert variable_length(runs).seeds.tolist() == [2]
    assert length_table(runs).seeds.tolist() == [2]
    with pytest.raises(MixedSettingsError, match=r"0.001\) differ in mask_padding: False, True"):
        variable_length(pd.DataFrame([row(1), row(2, masked=True)]))
    with pytest.raises(MixedSettingsError, match="differ in lr: 0.001, 0.003:"):
        length_table(pd.DataFrame([row(1), row(2, lr=3e-3)]))


def test_runs_csv_tells_apart_runs_of_other_settings():
    """A setting that is no column of runs.csv (the width, a task's vocabulary) becomes one where
    runs differ in it; one every run shares is left out."""
    runs = pd.DataFrame(
        {
            "T0": [50, 50],
            "settings": [
                {"T0": 50, "dim": 32, "vocab": 64, "seed": 1},
                {"T0": 50, "dim": 64, "vocab": 64, "seed": 1},
            ],
        }
    )
    assert varied_settings(runs) == {"dim": [32, 64]}
    assert varied_settings(runs.iloc[:0]) == {}
