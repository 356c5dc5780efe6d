"""The recall sweep's page (longterm.experiments.recall.page): the table per setting, the published
statements' checks and the figure, from result.json records written here (the sweep's real runs
take hours; test_the_page_from_a_tiny_real_race runs one race through lr_race, marked slow); and
the sweep's commands (longterm.experiments.recall.runs), which compose (marked slow)."""

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
from helpers.paths import CONF

from longterm.analysis.plateau import Cell
from longterm.config.command_line import check
from longterm.experiments import lr_race
from longterm.experiments.recall.checks import (
    CHECKS,
    MARGIN,
    SOLVED,
    attention_solves,
    check_rows,
    complete,
    convolution_needs_width,
    delta_rule_above_additive,
    equal_state,
    fixed_state_below_attention,
    recall_order,
    state_size_tradeoff,
)
from longterm.experiments.recall.page import FIGURE, chances, load, main, plot, points
from longterm.experiments.recall.runs import DIMS, MODELS, SETTINGS, has_span, races

GROWING = ("transformer", "all_attention", "feedback", "hyena")  # the fabricated points' kinds


def write_run(root: Path, model: str, width: int, T0: int, lr: float, acc: float, **more) -> Path:
    """A finished run's result.json in its race's directory, as the sweep lays them out, with
    the fields the collector reads (state size and parameters given or made from the width)."""
    kv = dict(SETTINGS)[T0]
    run = root / f"{model}_d{width}_T{T0}" / f"mqar-{model}-per_step-T{T0}-lr{lr:.0e}-s1"
    run.mkdir(parents=True)
    record = {
        **{"task": "mqar", "pool": "per_step", "model": model, "data": "fixed", "T0": T0},
        **{"lr": lr, "seed": 1, "mask_padding": True, "status": "max_epochs"},
        **{"epoch_solved": None, "epochs": 8, "max_epochs": 8, "updates": 2000},
        **{"best_acc": acc, "final_acc": acc, "diverged_step": None},
        **{"n_params": 1000 * width, "state_size": more.pop("state", 10 * width * T0)},
        **{"val_acc_history": [acc], "wall_time_s": 60.0, "git_commit": "abc123"},
        "machine": {"processor": "x86_64", "cpus": 2, "torch": "2.13.0+cpu", "cuda": None},
        **{"loss": "cross_entropy", "process": f"vm:{width}{T0}:1"},
        **{"started_at": "2026-01-01T00:00:00+00:00", "finished_at": "2026-01-01T00:01:00+00:00"},
        "config": {
            "model": {"name": model, "dim": width, "layers": 2},
            "task": {"name": "mqar", "params": {"vocab": 256, "kv_pairs": kv}},
            "data": {"batch_size": 32, "val_size": 500},
        },
    }
    (run / "result.json").write_text(json.dumps(record | more))
    race = {"command": f"python -m longterm.experiments.lr_race --sweep-dir {run.parent}"}
    (run.parent / "sweep.json").write_text(json.dumps([race]))  # a race's record (lr_race)
    return run


def rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of a page."""
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]


def kind(model: str) -> str:
    return "fixed" if model not in GROWING else "convolution" if model == "hyena" else "attention"


def grid(seeds: int = 3, rises: float = 0.0, **acc: dict[tuple[int, int], float]) -> pd.DataFrame:
    """Points of the checks: model -> {(T0, width): accuracy}, state 10 x width x T0, each point
    `seeds` seeds of that accuracy whose runs rose by `rises` at their cutoff."""
    rows = [
        {
            "T0": T0,
            "kv": dict(SETTINGS)[T0],
            "model": m,
            "width": w,
            "acc": a,
            "state": 10 * w * T0,
            "kind": kind(m),
            "cell": Cell(m, (a,) * seeds, (rises,) * seeds, 2000),
        }  # fmt: skip
        for m, cells in acc.items()
        for (T0, w), a in cells.items()
    ]
    return pd.DataFrame(rows)


def everywhere(a: float) -> dict[tuple[int, int], float]:
    return {(T0, w): a for T0, _ in SETTINGS for w in DIMS}


HYENA_NEEDS_WIDTH = {(64, 32): 0.9, (64, 64): 0.95, (128, 32): 0.4, (128, 64): 0.8}


def test_the_checks_hold_on_points_that_bear_them_out():
    p = grid(
        transformer=everywhere(1.0),
        hyena=HYENA_NEEDS_WIDTH,
        mamba=everywhere(0.5),
        deltanet={(T0, w): 0.7 for T0, _ in SETTINGS for w in DIMS},
        gla={(T0, w): 0.6 for T0, _ in SETTINGS for w in DIMS},
    )
    for test in (attention_solves, convolution_needs_width, fixed_state_below_attention):
        assert test(p).verdict == "holds", test(p).why
    assert delta_rule_above_additive(p).verdict == "holds"
    assert "deltanet 70.0%, gla 60.0%" in delta_rule_above_additive(p).why


def test_the_checks_fail_on_points_that_contradict_them():
    p = grid(
        feedback={**everywhere(1.0), (128, 32): SOLVED - 0.01},
        hyena=everywhere(0.9),  # no fall with length, no rise with width
        deltanet=everywhere(1.0),  # a fixed state as good as attention
        gla=everywhere(1.0),
    )
    assert attention_solves(p).verdict == "does not hold"
    assert "feedback D=32 at T0 = 128: 98.0 / 98.0 / 98.0%" in attention_solves(p).why
    assert convolution_needs_width(p).verdict == "does not hold"
    assert fixed_state_below_attention(p).verdict == "does not hold"
    assert delta_rule_above_additive(p).verdict == "does not hold"  # a tie within MARGIN
    flat = grid(mamba={(64, 32): 0.9, (64, 64): 0.5}, rnn={(64, 32): 0.2, (64, 64): 0.1})
    assert state_size_tradeoff(flat).verdict == "does not hold"


def test_a_check_without_its_runs_is_not_tested_here():
    short = grid(hyena={(64, 32): 0.9, (64, 64): 0.95}, mamba={(64, 32): 0.5})
    outcome = convolution_needs_width(short)
    assert outcome.verdict == "not tested here" and "only at T0 = 64" in outcome.why
    assert attention_solves(short).verdict == "not tested here"
    assert fixed_state_below_attention(short).verdict == "not tested here"
    assert delta_rule_above_additive(short).verdict == "not tested here"


def test_the_checks_read_only_the_settings_every_model_and_width_ran():
    """T0 = 128 lacks gla at D = 64: left out, and said; the others kept whole."""
    cells = everywhere(0.5)
    p = grid(transformer=everywhere(1.0), gla={k: a for k, a in cells.items() if k != (128, 64)})
    kept, partial, beside = complete(p)
    assert beside == []
    assert sorted(kept.T0.unique()) == [T0 for T0, _ in SETTINGS if T0 != 128]
    assert len(kept) == len(p[p.T0 != 128])
    assert partial == ["T0 = 128, 8 pairs (3 of 4 model-width points)"]


def test_equal_state_takes_each_models_best_point_up_to_the_smaller_largest_state():
    """deltanet's states 640 and 1280, gla's 1280 and 2560 at T0 = 64 (10 x width x T0): S =
    1280, so gla's widest point (2560) is left out."""
    p = grid(deltanet={(64, 1): 0.3, (64, 2): 0.6}, gla={(64, 2): 0.5, (64, 4): 0.99})
    assert equal_state(p, "deltanet", "gla", 64) == (0.6, 0.5, 1280)
    assert equal_state(p, "deltanet", "gla", 128) is None
    assert MARGIN < 0.6 - 0.5 and delta_rule_above_additive(p).verdict == "holds"


def test_equal_state_where_one_model_has_all_the_smaller_states_reads_the_others_narrowest():
    """gla's states 640 and 1280, mamba's 2560 and 5120 at T0 = 64: S = 2560, all of gla's
    points against mamba's narrowest, whichever is named first."""
    p = grid(gla={(64, 1): 0.3, (64, 2): 0.6}, mamba={(64, 4): 0.5, (64, 8): 0.9})
    assert equal_state(p, "gla", "mamba", 64) == (0.6, 0.5, 2560)
    assert equal_state(p, "mamba", "gla", 64) == (0.5, 0.6, 2560)


def test_the_recall_order_holds_fails_or_waits_for_its_models():
    """deltanet and gla above mamba above hyena at equal state, pair by pair."""
    order = {"deltanet": 0.7, "gla": 0.6, "mamba": 0.5, "hyena": 0.3}
    p = grid(**{m: {(64, 2): a} for m, a in order.items()})
    assert recall_order(p).verdict == "holds", recall_order(p).why
    assert "T0 = 64, state ≤ 1,280: mamba 50.0%, hyena 30.0%" in recall_order(p).why
    tied = grid(**{m: {(64, 2): a} for m, a in (order | {"mamba": 0.595}).items()})
    assert recall_order(tied).verdict == "does not hold"
    assert recall_order(tied).why.endswith("; gla not above mamba at T0 = 64")
    without_hyena = grid(**{m: {(64, 2): a} for m, a in order.items() if m != "hyena"})
    outcome = recall_order(without_hyena)
    assert outcome.verdict == "not tested here" and "mamba and hyena" in outcome.why


def test_the_page_from_run_records(tmp_path: Path):
    """Two learning rates a race: the winner is the better one, with its rate; the table has a
    row per model and width at each setting, the checks' verdicts and the figure."""
    runs = tmp_path / "recall"
    for T0 in (64, 128):
        for w in DIMS:
            write_run(runs, "transformer", w, T0, 3e-3, 1.0, status="solved", updates=500)
            write_run(runs, "transformer", w, T0, 1e-3, 0.97, max_epochs=2, updates=500)
            for lr, acc in ((3e-3, HYENA_NEEDS_WIDTH[(T0, w)]), (1e-3, 0.3)):
                write_run(runs, "hyena", w, T0, lr, acc)
    write_run(runs, "deltanet", 32, 64, 1e-3, 0.42, state=4242)
    write_run(runs, "deltanet", 32, 128, 1e-3, 0.21, state=4242)  # a fixed state
    p = points(load([runs]))
    assert len(p) == 2 * 2 * 2 + 2 and set(p.runs) == {1, 2}
    hyena = p[(p.model == "hyena") & (p.T0 == 128) & (p.width == 32)].iloc[0]
    assert (hyena.acc, hyena.lr, hyena.state) == (0.4, "3e-3", 10 * 32 * 128)
    out = tmp_path / "docs" / "recall.md"
    out.parent.mkdir()
    main([str(tmp_path), "--out", str(out)])
    text = out.read_text()
    table = rows(text)
    assert ["deltanet", "32", "4,242", "32,000", "42.0", "0.0", "1e-3", "2,000", "1", "1"] in table
    assert ["hyena", "32", "40,960", "32,000", "40.0", "0.0", "3e-3", "2,000", "1", "2"] in table
    assert ["transformer (attention)", "64", "81,920", "64,000", "100.0", "0.0", "3e-3", "500"] in [
        r[:8] for r in table
    ]
    verdicts = [line for line in text.splitlines() if line.startswith("| [")]
    assert len(verdicts) == len(CHECKS)
    # one seed a point: what the values say, read as inconclusive (plateau.py)
    assert (
        "**inconclusive**: all 4 attention points (transformer) at T0 = 64, 128 reach"
        in (verdicts[0])
    )
    assert (
        "The values say *holds*, but of the 4 cells it reads, 4 with fewer than 3" in (verdicts[0])
    )
    assert "**inconclusive**: D=32: 90.0% at T0 = 64 → 40.0% at 128" in verdicts[1]
    assert "**not tested here**: no setting where deltanet and gla both have points" in verdicts[4]
    assert ["vocabulary", "256", "8,192"] in table and ["widths D", "32, 64"] in [
        r[:2] for r in table
    ]
    assert "1e-3, 3e-3 (a race; the best shown)" in text and "18 runs in 10 race(s)" in text
    assert f"python -m longterm.experiments.recall.page {tmp_path} --out {out}" in text
    figure = out.parent / "recall" / FIGURE
    first = figure.read_bytes()
    assert first[:4] == b"\x89PNG" and len(first) < 100_000
    plot(p, tmp_path / "again.png", chances(load([runs]), p))
    assert (tmp_path / "again.png").read_bytes() == first  # the same points, the same bytes


def test_the_page_without_runs_says_so(tmp_path: Path):
    out = tmp_path / "recall.md"
    main([str(tmp_path / "none"), "--out", str(out)])
    text = out.read_text()
    assert text.count("**not tested here**: no runs") == len(CHECKS)
    assert "No finished runs" in text and not (tmp_path / "recall").exists()


def test_the_sweep_is_one_race_per_setting_width_and_model():
    listed = [shlex.split(c) for c in races()]
    assert len(listed) == len(SETTINGS) * len(DIMS) * len(MODELS) == 66
    seen = []
    for r in listed:
        args = dict(o.split("=", 1) for o in r[r.index("--") + 1 :])
        T0, kv, width, model = (int(r[r.index("--T0") + 1]), int(args["task.params.kv_pairs"]),
                                int(args["model.dim"]), args["model"])  # fmt: skip
        assert r[r.index("--sweep-dir") + 1] == f"outputs/recall/{model}_d{width}_T{T0}"
        assert (T0, kv) in SETTINGS and args["experiment"] == "recall"
        assert args.get("model.attn_span") == (str(T0) if has_span(model) else None)
        assert r[r.index("--lrs") + 1 : r.index("--launcher")] == ["3e-3", "1e-3"]
        assert r[r.index("--seeds") + 1 : r.index("--lrs")] == ["1"]
        seen.append((T0, width, model))
    # in the order they start: settings first, then widths, then models
    assert seen == [(T0, d, m) for T0, _ in SETTINGS for d in DIMS for m in MODELS]


def test_under_slurm_the_same_races_in_one_list_by_setting():
    """`--launcher slurm`: the CPU's 66 races in its order, the settings in order, each sending
    its jobs to SLURM (command_queue.run starts them `--races` at a time)."""
    listed = races(launcher="slurm")
    assert listed == [c.replace("--launcher local", "--launcher slurm") for c in races()]
    parsed = [shlex.split(c) for c in listed]
    T0s = [int(r[r.index("--T0") + 1]) for r in parsed]
    assert T0s == sorted(T0s) and {r[r.index("--launcher") + 1] for r in parsed} == {"slurm"}


def test_more_seeds_for_chosen_points_go_to_the_same_races():
    """`--seeds 2 3` (more seeds where points are close): the same sweep directories, so the
    page reads every seed of a point together."""
    more = [shlex.split(c) for c in races(models=("gla",), seeds=(2, 3))]
    one = [shlex.split(c) for c in races(models=("gla",))]
    assert [r[r.index("--seeds") + 1 : r.index("--lrs")] for r in more] == [["2", "3"]] * 6
    dirs = sorted(r[r.index("--sweep-dir") + 1] for r in more)
    assert dirs == sorted(r[r.index("--sweep-dir") + 1] for r in one)


@pytest.mark.slow
def test_every_race_composes(tmp_path: Path):
    """The jobs each race starts (its leader at the longer setting and the narrower width)
    compose and validate, for every model (about 1 s a model)."""
    for command in races(settings=SETTINGS[-1:], dims=DIMS[-1:]):
        race = shlex.split(command)
        T0 = race[race.index("--T0") + 1]
        job = ["-m", "task=mqar", "pool=per_step", f"T0={T0}", "lr=3e-3", "seed=1"]
        check([*job, *race[race.index("--") + 1 :], f"hydra.sweep.dir={tmp_path}"], CONF)


@pytest.mark.slow
def test_the_page_from_a_tiny_real_race(tmp_path: Path):
    """One race of real runs (two learning rates, one update each, tiny sizes) through lr_race
    and src/train.py, then the page: the table holds the runs' state size and parameters."""
    sweep = tmp_path / "recall" / "gla_d8_T16"
    tiny = ["data.batch_size=4", "data.batches_per_epoch=1", "data.val_size=8"]
    args = ["--sweep-dir", str(sweep), "--T0", "16", "--tasks", "mqar", "--pools", "per_step"]
    args += ["--seeds", "1", "--lrs", "3e-3", "1e-3", "--launcher", "local", "--max-epochs", "1"]
    args += ["--", "experiment=recall", "model=gla", "model.dim=8", "task.params.kv_pairs=2"]
    assert lr_race.main([*args, *tiny]) == 0
    runs = load([tmp_path])
    assert sorted(runs.lr) == [1e-3, 3e-3]
    out = tmp_path / "recall.md"
    main([str(tmp_path), "--out", str(out)])
    text = out.read_text()
    state, params = int(runs.state_size.iloc[0]), int(runs.n_params.iloc[0])
    assert ["gla", "8", f"{state:,}", f"{params:,}"] in [r[:4] for r in rows(text)]
    assert "--sweep-dir " + str(sweep) in text


def test_verdicts_say_what_the_runs_can_show():
    """A verdict stands on 3 agreeing seeds at a plateau; with fewer seeds it is inconclusive,
    and a failing one on runs still rising is not reproduced within their updates."""
    cells = {"transformer": everywhere(1.0), "deltanet": everywhere(0.5)}
    assert attention_solves(grid(**cells)).verdict == "holds"
    one = attention_solves(grid(seeds=1, **cells))
    assert one.verdict == "inconclusive" and "fewer than 3 seeds" in one.why
    low = {"transformer": everywhere(0.5), "deltanet": everywhere(0.5)}
    rising = attention_solves(grid(rises=0.05, **low))
    assert rising.verdict == "not reproduced within 2,000 updates"
    assert "still rising at 2,000 updates" in rising.why and "+5.0 / +5.0 / +5.0" in rising.why
    split = grid(**cells)
    split.loc[0, "cell"] = Cell("transformer", (0.957, 0.997, 0.394), (0, 0, 0), 2000)
    outcome = attention_solves(split)
    assert outcome.verdict == "inconclusive" and "95.7 / 99.7 / 39.4" in outcome.why


ARCHIVE = Path(__file__).resolve().parents[1] / "runs" / "recall"


def user_run(root: Path, model: str, span: int, T0: int = 64, seed: int = 1) -> Path:
    """A run of a model of the user's own (a sliding-window attention: the transformer's encoder
    with its own span) at one length, as its race lays it out."""
    encoder = {"encoder": "longterm.models.transformer.Transformer", "heads": 4, "d_ff": 32}
    config = {"model": {"name": model, "dim": 32, "layers": 2, "attn_span": span, **encoder},
              "task": {"name": "mqar", "inputs": "tokens",
                       "params": {"vocab": 256, "kv_pairs": dict(SETTINGS)[T0]}},
              "data": {"batch_size": 32, "val_size": 500}}  # fmt: skip
    return write_run(root, model, 32, T0, 1e-3, 0.9, config=config, seed=seed,
                     state=2 * 2 * 32 * min(T0, span - 1))  # fmt: skip


@pytest.mark.skipif(not ARCHIVE.is_dir(), reason="the archived recall runs")
def test_a_users_model_at_one_length_sits_beside_the_archived_grid(tmp_path: Path):
    """A sliding-window attention of the user's own at T0 = 64 beside the archived grid: every
    built-in verdict as without it, its points in the table (†) and the figure, and its kind
    read from what it declares (a window of 16 steps: a fixed state; one of 4,096: attention)."""
    mine = tmp_path / "mine"
    user_run(mine, "my_window", 16)
    user_run(mine, "my_attention", 4096)
    alone = points(load([ARCHIVE]))
    beside = points(load([ARCHIVE, mine]))
    verdicts = [r["verdict"] for r in check_rows(complete(alone)[0])]
    assert [r["verdict"] for r in check_rows(complete(beside)[0])] == verdicts
    assert not any("not tested here" in v for v in verdicts)
    kinds = dict(zip(beside.model, beside.kind, strict=False))
    assert kinds["my_window"] == "fixed" and kinds["my_attention"] == "attention"
    assert kinds["transformer"] == "attention" and kinds["mamba"] == "fixed"
    assert complete(beside)[2] == ["my_attention (run at T0 = 64 only)",
                                   "my_window (run at T0 = 64 only)"]  # fmt: skip
    out = tmp_path / "recall.md"
    main([str(ARCHIVE), str(mine), "--out", str(out)])
    text = out.read_text()
    assert ["my_window †", "32"] in [r[:2] for r in rows(text)]
    assert ["my_attention (attention) †", "32"] in [r[:2] for r in rows(text)]
    assert "Beside the grid, in the tables (†) and the figure but read by no check" in text
    assert (tmp_path / "recall" / FIGURE).exists()


def test_the_settings_table_reads_every_difference_from_the_runs(tmp_path: Path):
    """Keys recorded by newer runs (optimizer, schedule, stop, head, fillers, short convolutions,
    dt_rank) are read from the configs; an older run without them reads as their defaults."""
    runs = tmp_path / "recall"
    newer = {"optim": {"name": "adamw", "weight_decay": 0.1, "schedule": "cosine"},
             "callbacks": {"stop_when_solved": {"threshold": 0.99}}}  # fmt: skip
    for T0 in (64, 128):
        config = {
            "model": {"name": "gla", "dim": 32, "layers": 2, "head": "linear",
                      "use_short_conv": True},
            "task": {"name": "mqar",
                     "params": {"vocab": 8192, "kv_pairs": dict(SETTINGS)[T0],
                                "random_non_queries": False}},
            "data": {"batch_size": 64, "val_size": 3000}, **newer,
        }  # fmt: skip
        write_run(runs, "gla", 32, T0, 1e-3, 0.5, config=config, state=256)
        old = {"model": {"name": "mamba", "dim": 32, "layers": 2, "dt_rank": 4},
               "task": {"name": "mqar", "params": {"vocab": 256, "kv_pairs": dict(SETTINGS)[T0]}},
               "data": {"batch_size": 32, "val_size": 500}}  # fmt: skip
        write_run(runs, "mamba", 32, T0, 1e-3, 0.5, config=old, state=2432)
    out = tmp_path / "recall.md"
    main([str(runs), "--out", str(out)])
    table = {r[0]: r[1] for r in rows(out.read_text())}
    assert table["optimizer"] == "adam, adamw, weight decay 0, 0.1, gradient clipping none"
    assert table["schedule"] == "cosine, none"
    assert table["stop"] == "at 99% validation accuracy, else at the epoch limit"
    assert table["random fillers (`random_non_queries`)"] == "false, true"
    assert table["short convolutions (gla, deltanet)"] == "with"
    assert table["head"].startswith("linear, mlp")
    assert table["Mamba's dt_rank"] == "4 (zoology's ceil(D / 16) would be 2 at D = 32)"
    assert table["seeds"] == "1 a point"


def test_the_settings_table_says_zoologys_strict_stop_and_tied_head(tmp_path: Path):
    """Runs of experiment=zoology_figure2 (stop above 99%, the head tied to the embeddings)."""
    runs = tmp_path / "figure2"
    for T0 in (64, 128):
        config = {
            "model": {"name": "zoology_attention", "dim": 64, "layers": 2, "head": "tied"},
            "task": {"name": "mqar", "params": {"vocab": 8192, "kv_pairs": dict(SETTINGS)[T0]}},
            "data": {"batch_size": 512, "val_size": 3000},
            "callbacks": {"stop_when_solved": {"threshold": 0.99, "strict": True}},
        }
        write_run(runs, "zoology_attention", 64, T0, 2.15e-3, 0.995, config=config)
    out = tmp_path / "figure2.md"
    main([str(runs), "--out", str(out)])
    table = {r[0]: r[1] for r in rows(out.read_text())}
    assert table["stop"] == "above 99% validation accuracy, else at the epoch limit"
    assert table["head"] == "tied to the token embeddings (logits = h Eᵀ)"


def test_a_point_never_joins_runs_of_other_settings(tmp_path: Path):
    """A point is the runs of one setting but their learning rates and seeds: a run at another
    vocabulary, or of a race with a smaller budget (a 200-update run beside the 2,000-update
    point), is refused in one line naming the settings that differ. Within a race the slower
    learning rate's epoch limit is capped below the leader's: one point."""
    race = tmp_path / "race"
    write_run(race, "gla", 32, 64, 3e-3, 0.9)
    write_run(race, "gla", 32, 64, 1e-3, 0.5, max_epochs=4)  # capped by the race
    assert len(points(load([race]))) == 1
    vocab = tmp_path / "vocab"
    run = write_run(vocab, "gla", 32, 64, 3e-3, 0.2)
    record = json.loads((run / "result.json").read_text())
    record["config"]["task"]["params"]["vocab"] = 64
    (run / "result.json").write_text(json.dumps(record))
    short = tmp_path / "short"
    write_run(short, "gla", 32, 64, 3e-3, 0.1, max_epochs=1, epochs=1, updates=250)
    for other, named in [(vocab, "vocab: 64, 256"), (short, "max_epochs: 1, 8")]:
        with pytest.raises(SystemExit) as stopped:
            main([str(race), str(other), "--out", str(tmp_path / "recall.md")])
        line = str(stopped.value.code)
        assert line.startswith("error: runs of other settings in one point (T0=64, kv=4, ")
        assert named in line and "\n" not in line, line
    assert not (tmp_path / "recall.md").exists()
