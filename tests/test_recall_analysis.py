"""The recall sweep's page (longterm.analysis.recall): the table per setting, the published
statements' checks and the figure, from result.json records written here (the sweep's real runs
take hours; test_the_page_from_a_tiny_real_race runs one race through lr_race, marked slow); and
the sweep's commands (longterm.experiments.recall_runs), which compose (marked slow)."""

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
from conftest import CONF

from longterm.analysis.recall import FIGURE, load, main, plot, points
from longterm.analysis.recall_checks import (
    ATTENTION,
    CHECKS,
    MARGIN,
    SOLVED,
    attention_solves,
    complete,
    convolution_needs_width,
    delta_rule_above_additive,
    equal_state,
    fixed_state_below_attention,
    recall_order,
    state_size_tradeoff,
)
from longterm.config.command_line import check
from longterm.experiments import lr_race
from longterm.experiments.recall_runs import DIMS, MODELS, SETTINGS, races


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
    return run


def rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of a page."""
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]


def grid(**acc: dict[tuple[int, int], float]) -> pd.DataFrame:
    """Points of the checks: model -> {(T0, width): accuracy}, state 10 x width x T0."""
    rows = [
        {"T0": T0, "kv": dict(SETTINGS)[T0], "model": m, "width": w, "acc": a, "state": 10 * w * T0}
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
    assert "feedback D=32 at T0 = 128: 98.0%" in attention_solves(p).why
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
    kept, partial = complete(p)
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
    write_run(runs, "deltanet", 32, 128, 1e-3, 0.21, state=8484)
    p = points(load([runs]))
    assert len(p) == 2 * 2 * 2 + 2 and set(p.runs) == {1, 2}
    hyena = p[(p.model == "hyena") & (p.T0 == 128) & (p.width == 32)].iloc[0]
    assert (hyena.acc, hyena.lr, hyena.state) == (0.4, "3e-3", 10 * 32 * 128)
    out = tmp_path / "docs" / "recall.md"
    out.parent.mkdir()
    main([str(tmp_path), "--out", str(out)])
    text = out.read_text()
    table = rows(text)
    assert ["deltanet", "32", "4,242", "32,000", "42.0", "1e-3", "2,000", "1", "1"] in table
    assert ["hyena", "32", "40,960", "32,000", "40.0", "3e-3", "2,000", "1", "2"] in table
    assert ["transformer (attention)", "64", "81,920", "64,000", "100.0", "3e-3", "500"] in [
        r[:7] for r in table
    ]
    verdicts = [line for line in text.splitlines() if line.startswith("| [")]
    assert len(verdicts) == len(CHECKS)
    assert "**holds**: all 4 attention points at T0 = 64, 128 reach 99.0%" in verdicts[0]
    assert "**holds**: D=32: 90.0% at T0 = 64 → 40.0% at 128" in verdicts[1]
    assert "**not tested here**: no setting where deltanet and gla both have points" in verdicts[4]
    assert ["vocabulary", "256", "8,192"] in table and ["widths D", "32, 64"] in [
        r[:2] for r in table
    ]
    assert "1e-3, 3e-3 (a race)" in text and "18 runs in 10 race(s)" in text
    assert f"python -m longterm.analysis.recall {tmp_path} --out {out}" in text
    figure = out.parent / "recall" / FIGURE
    first = figure.read_bytes()
    assert first[:4] == b"\x89PNG" and len(first) < 100_000
    plot(p, tmp_path / "again.png")
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
        assert args.get("model.attn_span") == (str(T0) if model in ATTENTION else None)
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
