"""The claims report (longterm.experiments.claims.page): its verdict rule (claims/verdicts.py) on
made-up numbers, and the report from a tiny real sweep of the claims experiment (one update a
run)."""

import json
import math

import pytest
from helpers.paths import CONF, ROOT
from helpers.results import refuses_mix
from helpers.runs import train_py

from longterm.config.command_line import check
from longterm.experiments.claims.page import FEEDBACK, TRANSFORMER, load, main
from longterm.experiments.claims.runs import (
    BITS_PER_PARAMETER,
    KNOWLEDGE,
    KNOWLEDGE_MODELS,
    LARGE,
    claims_config,
    commands,
    knowledge_vocab,
    shared_parameters,
)
from longterm.experiments.claims.verdicts import Comparison, Stats, combine, compare
from longterm.tasks.knowledge import CLASSES, LARGE_VOCAB
from longterm.training.parts import build_model


def stats(name: str, *accs: float) -> Stats:
    return Stats(name, accs, 1000)


@pytest.mark.parametrize(
    "a, b, kind, verdict",
    [
        ((0.9, 0.95, 0.97), (0.3, 0.4, 0.5), "better", "holds"),
        ((0.3, 0.4, 0.5), (0.9, 0.95, 0.97), "better", "does not hold"),
        ((0.5, 0.7, 0.9), (0.4, 0.6, 0.8), "better", "inconclusive"),  # overlap, A's mean higher
        ((0.4, 0.6, 0.8), (0.5, 0.7, 0.9), "better", "inconclusive"),  # overlap: a tie
        ((0.5, 0.7, 0.9), (0.4, 0.6, 0.8), "no_loss", "holds"),
        ((0.3, 0.4, 0.5), (0.9, 0.95, 0.97), "no_loss", "does not hold"),
        ((0.9, 0.95), (0.3, 0.4, 0.5), "better", "inconclusive"),  # two seeds
        ((0.13, 0.14, 0.15), (0.11, 0.12, 0.12), "better", "inconclusive"),  # near chance 0.12
    ],
)
def test_the_verdict_rule(a, b, kind, verdict):
    got, why = compare(Comparison("A", "B", kind), stats("A", *a), stats("B", *b), 0.12)
    assert got == verdict, why


def test_runs_still_rising_or_too_few_seeds_give_no_verdict():
    """The checks pages' rule (analysis/plateau.py): a comparison whose values say *does not
    hold* on runs still rising reads *not reproduced within N updates*; one that says *holds*
    reads *inconclusive*; seeds listed one by one."""
    rising = Stats("A", (0.3, 0.4, 0.5), 1000, (0.0, 0.05, 0.0), 2000)
    flat = Stats("B", (0.9, 0.95, 0.97), 1000, (0.0, 0.0, 0.0), 2000)
    got, why = compare(Comparison("A", "B"), rising, flat, 0.12)
    assert got == "not reproduced within 2,000 updates"
    assert "A +0.0 / +5.0 / +0.0" in why
    got, why = compare(Comparison("B", "A"), flat, rising, 0.12)
    assert got == "inconclusive" and "The values say *holds*" in why
    assert combine([("holds", ""), ("not reproduced within 2,000 updates", "")])[0] == (
        "not reproduced within 2,000 updates"
    )
    assert flat.span() == "90.0 / 95.0 / 97.0"


def test_a_claim_holds_only_when_every_comparison_holds():
    holds, no, unsure = ("holds", "x"), ("does not hold", "y"), ("inconclusive", "z")
    assert combine([holds, holds])[0] == "holds"
    assert combine([holds, unsure])[0] == "inconclusive"
    assert combine([unsure, no])[0] == "does not hold"
    missing = compare(Comparison("A", "B"), None, stats("B", 0.5, 0.5, 0.5), None)
    assert missing == ("inconclusive", "no runs of A")


def test_every_claims_command_composes():
    for command in commands():
        check(command.split()[2:], CONF)


TINY_CLAIMS = [
    "T0=12",
    "data.batch_size=4",
    "data.batches_per_epoch=1",
    "data.val_size=8",
    "trainer.max_epochs=1",
]


def test_the_report_from_a_tiny_sweep(tmp_path):
    """Feedback and the 2-layer transformer, three seeds, on the algorithmic task; all-attention
    with N = 0 and 64 on the fixed-knowledge task, one seed: the numbers are the runs', the
    comparisons that lack a model or seeds are inconclusive, the commands and commits listed."""
    common = ["experiment=claims", *TINY_CLAIMS, f"hydra.sweep.dir={tmp_path}"]
    for jobs in (
        ["model=feedback,transformer", "seed=1,2,3"],
        ["model=all_attention", "model.n_persistent=0,64", "seed=1", "task=fixed_knowledge"],
    ):
        out = train_py(*common, *jobs, env={"OMP_NUM_THREADS": "1"})  # as the sweep runs
        assert out.returncode == 0, out.stderr
    runs = load([tmp_path])
    assert sorted(set(runs.name)) == [
        "all_attention N=0 L=2",
        "all_attention N=64 L=2",
        FEEDBACK,
        TRANSFORMER,
    ]
    out = tmp_path / "claims.md"
    main([str(tmp_path), "--out", str(out)])
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 11  # the header, then one row per claim
    feedback = runs[runs.name == FEEDBACK].sort_values("seed").best_acc
    cell = " / ".join(f"{100 * a:.1f}" for a in feedback)  # each seed, not their mean
    fan = next(r for r in rows if r.startswith("| Fan et al."))
    assert f"{FEEDBACK}: {cell}, 3 seeds" in fan and "chance " in fan
    assert "**inconclusive**" in fan and "no runs of transformer L=4" in fan
    knowledge = next(r for r in rows if "N = 64 slots" in r and "fixed_knowledge" in r)
    assert "no runs of transformer L=2" in knowledge
    assert "neither all_attention N=64 L=2 nor all_attention N=0 L=2 is above chance" in text
    assert "model=all_attention model.n_persistent=0,64 seed=1 task=fixed_knowledge" in text
    assert f"python -m longterm.experiments.claims.page {tmp_path} --out {out}" in text
    assert "- commits: " in text and "- machine: " in text


def test_the_large_table_is_the_smallest_the_embedding_and_head_cannot_hold():
    """LARGE_VOCAB is what knowledge_vocab derives: at V tokens the table's V^2 log2(8) bits are
    more than 2 bits per parameter of every compared model's embedding and head, at V - 1 not;
    the transformer's feed-forward sublayers add more parameters than the table has entries."""
    assert knowledge_vocab() == LARGE_VOCAB
    for model in KNOWLEDGE_MODELS:
        for vocab, fits in ((LARGE_VOCAB, False), (LARGE_VOCAB - 1, True)):
            bits = vocab**2 * math.log2(CLASSES)
            assert (bits <= BITS_PER_PARAMETER * shared_parameters(model, vocab)) == fits
    ff = build_model(claims_config([KNOWLEDGE, LARGE, "model=transformer"])).net.encoder.layers
    assert sum(p.numel() for layer in ff for p in layer.ff.parameters()) > LARGE_VOCAB**2


def test_a_seed_run_at_several_learning_rates_counts_at_its_best():
    """The papers report the best of their rates: a seed run at two rates counts with the one of
    its best validation accuracy, a rate run twice with its latest run; every rate is listed."""
    import pandas as pd

    from longterm.experiments.claims.verdicts import stats as seed_stats

    def run(seed: int, lr: float, best: float, finished: str) -> dict:
        return {"task": "induction_heads", "name": "transformer L=2", "seed": seed, "lr": lr} | {
            "best_acc": best,
            "finished_at": finished,
            "n_params": 10,
            "status": "max_epochs",
            "history": [best],
            "updates": 4000,
        }

    runs = pd.DataFrame(
        [
            run(2, 1e-3, 0.50, "1"),
            run(1, 1e-3, 0.10, "2"),
            run(1, 2e-4, 0.90, "3"),
            run(2, 2e-4, 0.20, "4"),
            run(2, 2e-4, 0.30, "5"),  # the same rate again: its latest run
        ]
    )
    s = seed_stats(runs, "induction_heads", "transformer L=2")
    assert s.accs == (0.90, 0.50) and s.lrs == (2e-4, 1e-3)


def test_a_model_on_a_task_never_joins_runs_of_other_settings(tmp_path):
    """The archived feedback and transformer runs on the algorithmic task: a seed run again at
    another learning rate joins its model's row; a run of another budget or another task key
    under the same names is refused in one line naming the setting that differs."""

    def copy(into, runs="algorithmic-*-T50-lr1e-3-s?", **changed):
        for run in sorted((ROOT / "runs" / "claims").glob(runs)):
            record = json.loads((run / "result.json").read_text()) | changed
            (into / run.name).mkdir(parents=True)
            (into / run.name / "result.json").write_text(json.dumps(record))

    archived = tmp_path / "claims"
    copy(archived)
    other_rate = tmp_path / "rate"
    copy(other_rate, "algorithmic-feedback-*-s1", lr=3e-3, best_acc=0.99)
    out = tmp_path / "claims.md"
    main([str(archived), str(other_rate), "--out", str(out)])
    assert f"{FEEDBACK}: 99.0 / " in out.read_text()  # seed 1 at its better rate
    out.unlink()
    for changed, named in [
        ({"max_epochs": 20}, "max_epochs: 10, 20"),  # twice the updates
        ({"statements": 16}, "statements: 8, 16"),  # the task's own key
    ]:
        other = tmp_path / named.split(":")[0]
        copy(other, "algorithmic-feedback-*-s1", seed=4, **changed)
        refuses_mix(
            main,
            [str(archived), str(other), "--out", str(out)],
            f"task=algorithmic, name={FEEDBACK}",
            named,
        )
    assert not out.exists()
