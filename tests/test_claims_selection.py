"""The Mamba paper's rows of the claims page (longterm.experiments.claims.selection): their verdicts
from small sets of run records made from the experiment's own composed configs, the comparison at
a tested length, and missing runs; the commands in conf/experiment/selection.yaml compose."""

import re

import pandas as pd
import pytest
from helpers.configs import composed
from helpers.paths import CONF
from omegaconf import OmegaConf

from longterm.config.command_line import check
from longterm.experiments.claims.page import model_name, report, task_name
from longterm.experiments.claims.selection import (
    ATTENTION,
    HYENA,
    LONGEST,
    MAMBA,
    S4D,
    at_length,
    copying_row,
    induction_row,
)
from longterm.experiments.claims.verdicts import NUMBERS

COPYING = ["experiment=selection", "task=selective_copying", "pool=per_step", "T0=128"]
INDUCTION = ["experiment=selection", "task=induction_heads", "pool=last", "T0=64"]
MODELS = {
    MAMBA: ["model=mamba"],
    S4D: ["model=s4d"],
    HYENA: ["model=hyena"],
    ATTENTION: ["model=transformer", "model.attn_span=1024"],
}
LENGTHS = (128, 256, 512, 1024)


@pytest.fixture(scope="module")
def configs() -> dict[tuple[str, str], dict]:
    """Each (task, model) of the experiment as result.json's `config` holds it (the sections the
    claims read), composed from conf/ as the sweep's commands compose it."""
    found = {}
    for task, common, names in (
        ("selective_copying", COPYING, (MAMBA, S4D, HYENA)),
        ("induction_heads", INDUCTION, (MAMBA, ATTENTION)),
    ):
        for name in names:
            cfg = composed(*common, *MODELS[name])
            found[task, name] = {
                k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("task", "data", "model")
            }
    return found


def records(configs, task: str, name: str, best: tuple, **extra) -> list[dict]:
    """One run record per seed (a column of analysis.runs.load_runs each), seeds 1, 2, ..."""
    config = configs[task, name]
    assert (task_name(config), model_name(config)) == (task, name)
    return [
        {
            "task": task,
            "name": name,
            "seed": seed,
            "finished_at": f"2026-01-0{seed}T00:00:00+00:00",
            "best_acc": acc,
            "n_params": 1000 + len(name),
            "state_size": extra.get("state_size"),
            "eval_lengths": extra["lengths"][seed - 1] if "lengths" in extra else None,
            "T0": config["data"]["T0"],
            "loss": config["task"]["loss"],
            "config": config,
        }
        for seed, acc in enumerate(best, start=1)
    ]


def runs_of(*groups: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([r for g in groups for r in g])


def verdict(row: dict) -> str:
    return re.match(r"\*\*(.+?)\*\*", row["verdict"]).group(1)


def test_selective_copying_holds_when_mamba_beats_both_time_invariant_mixers(configs):
    copying = "selective_copying"
    mamba = records(configs, copying, MAMBA, (0.95, 0.97, 0.99), state_size=4864)
    s4d = records(configs, copying, S4D, (0.30, 0.35, 0.40), state_size=8192)
    hyena = records(configs, copying, HYENA, (0.50, 0.55, 0.60))  # no step form: no state
    row = copying_row(runs_of(mamba, s4d, hyena))
    assert verdict(row) == "holds", row["verdict"]
    numbers = row[NUMBERS].split("<br>")
    assert (
        numbers[0] == f"{MAMBA}: 95.0 / 97.0 / 99.0, 3 seeds, 1,009 parameters, state 4,864 numbers"
    )
    assert numbers[1].endswith("state 8,192 numbers") and "state" not in numbers[2]
    chance = float(numbers[3].removeprefix("chance "))
    assert 100 / 14 - 2 < chance < 100 / 14 + 2  # the most frequent of 14 data tokens (vocab 16)

    overlapping = records(configs, copying, HYENA, (0.90, 0.96, 0.98))
    row = copying_row(runs_of(mamba, s4d, overlapping))
    assert verdict(row) == "inconclusive" and "ranges overlap" in row["verdict"]
    better = records(configs, copying, HYENA, (0.995, 0.996, 0.999))
    assert verdict(copying_row(runs_of(mamba, s4d, better))) == "does not hold"


def lengths(*per_seed: tuple[float, ...]) -> list[dict[str, float]]:
    return [dict(zip(map(str, LENGTHS), accs, strict=True)) for accs in per_seed]


def test_induction_heads_compares_at_the_longest_tested_length(configs):
    induction = "induction_heads"
    mamba = records(
        configs,
        induction,
        MAMBA,
        (1.0, 1.0, 0.99),
        state_size=4864,
        lengths=lengths((1, 1, 0.99, 0.98), (1, 1, 1, 0.97), (0.99, 0.98, 0.96, 0.95)),
    )
    attention = records(
        configs,
        induction,
        ATTENTION,
        (1.0, 1.0, 1.0),
        state_size=18176,
        lengths=lengths((0.9, 0.4, 0.1, 0.07), (0.95, 0.5, 0.2, 0.08), (0.8, 0.3, 0.1, 0.06)),
    )
    row = induction_row(runs_of(mamba, attention))
    assert verdict(row) == "holds", row["verdict"]
    assert f"{MAMBA} {at_length(LONGEST)} beats {ATTENTION} {at_length(LONGEST)}" in row["verdict"]
    lines = row[NUMBERS].split("<br>")
    assert lines[1].startswith(f"{MAMBA}: 3 seeds, 1,009 parameters, state 4,864 numbers; ")
    assert "T = 64 (trained, best val) 100.0 / 100.0 / 99.0" in lines[1]
    assert "T = 1024 98.0 / 97.0 / 95.0" in lines[1]
    assert [f"T = {t} " in lines[2] for t in LENGTHS] == [True] * len(LENGTHS)
    assert "T = 1024 7.0 / 8.0 / 6.0" in lines[2] and "state 18,176 numbers" in lines[2]
    assert lines[3] == "chance 6.7 (a constant answer: 1/(vocab − 1))"  # vocab 16

    # the transformer at 1024 better: does not hold, though mamba's best validation is lower
    pairs = list(zip(mamba, attention, strict=True))
    weaker = [{**m, "eval_lengths": a["eval_lengths"]} for m, a in pairs]
    swapped = [{**a, "eval_lengths": m["eval_lengths"]} for m, a in pairs]
    assert verdict(induction_row(runs_of(weaker, swapped))) == "does not hold"
    # both near chance at 1024 (1/15 + 5 points): nothing tested
    low = lengths((1, 1, 0.5, 0.10), (1, 1, 0.5, 0.09), (1, 1, 0.5, 0.11))
    near = [{**r, "eval_lengths": e} for r, e in zip(mamba, low, strict=True)]
    row = induction_row(runs_of(near, attention))
    assert verdict(row) == "inconclusive" and "is above chance (6.7%)" in row["verdict"]
    # a transformer that never learned the task at its training length tests no extrapolation
    unlearned = [{**a, "best_acc": 0.08} for a in attention]
    row = induction_row(runs_of(mamba, unlearned))
    assert verdict(row) == "inconclusive", row["verdict"]
    why = f"{ATTENTION} (best 8.0%) did not learn the task at its training length"
    assert why in row["verdict"]
    # the transformer trained only at 1e-3, not at the paper's 2e-4: no verdict, and it says so
    at_1e3 = [{**r, "lr": 1e-3} for r in [*mamba, *attention]]
    row = induction_row(runs_of(at_1e3))
    assert verdict(row) == "inconclusive", row["verdict"]
    assert "the transformer trained only at 1e-3, where the Mamba paper says" in row["verdict"]
    assert "(it reports 2e-4)" in row["verdict"]
    assert row[NUMBERS].split("<br>")[-1] == f"learning rates: {MAMBA} 1e-3; {ATTENTION} 1e-3"
    at_paper = [{**r, "lr": 2e-4} for r in [*mamba, *attention]]
    assert verdict(induction_row(runs_of(at_paper))) == "holds"


def test_missing_runs_make_the_rows_inconclusive(configs):
    for row in (copying_row(pd.DataFrame()), induction_row(pd.DataFrame())):
        assert row[NUMBERS] == "no runs" and verdict(row) == "inconclusive"
    copying = records(configs, "selective_copying", MAMBA, (0.9, 0.9, 0.9))
    row = copying_row(runs_of(copying))
    assert row["verdict"].endswith("no runs of s4d L=2; no runs of hyena L=2")
    # runs not tested at other lengths: the best validation accuracy shows, the comparison has none
    untested = records(configs, "induction_heads", MAMBA, (1.0, 1.0, 1.0))
    attention = records(configs, "induction_heads", ATTENTION, (0.9, 0.9))
    row = induction_row(runs_of(copying, untested, attention))
    assert "T = 64 (trained, best val) 100.0 / 100.0 / 100.0" in row[NUMBERS]
    assert "no runs of mamba L=2 at T = 1024, transformer L=2 at T = 1024" in row["verdict"]
    tested = records(
        configs, "induction_heads", ATTENTION, (0.9, 0.9), lengths=lengths((1,) * 4, (1,) * 4)
    )
    row = induction_row(runs_of(untested, tested))
    assert "no runs of mamba L=2 at T = 1024" in row["verdict"]
    page = report(pd.DataFrame(), [], None)
    assert page.count("| Gu & Dao 2023 (Mamba), §4.1.") == 2


def test_the_experiment_commands_compose():
    """Every command in conf/experiment/selection.yaml's header passes the command-line check
    (for one seed: the seeds compose alike, and each job costs a composition)."""
    header = (CONF / "experiment" / "selection.yaml").read_text().split("\nT0:")[0]
    lines = " ".join(line.lstrip("# ").rstrip("\\") for line in header.splitlines())
    commands = re.findall(r"python src/train.py -m (.+?)(?= python |\(|$)", lines)
    assert len(commands) == 5  # seeds 1-3 of the three, then 4-6 of induction heads' two
    for command in commands:
        check(re.sub(r"seed=[\d,]+", "seed=1", command).split(), CONF)
