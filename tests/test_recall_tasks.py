"""The three recall tasks of token inputs (longterm.tasks: mqar, selective_copying,
induction_heads): mqar equal to zoology's generator for the same seed, and each task's shapes,
labels and chance level."""

import json

import numpy as np
import pytest
from helpers.configs import composed
from helpers.paths import SHARED
from omegaconf import OmegaConf

from longterm.contract.task import task_report
from longterm.tasks import NO_TARGET, default_width, induction_heads, mqar, selective_copying

ZOOLOGY = SHARED / "fixtures" / "mqar_zoology_reference.npz"


def zoology_cases():
    if not ZOOLOGY.exists():
        pytest.skip(f"{ZOOLOGY} is absent (../shared)")
    data = np.load(ZOOLOGY)
    return data, json.loads(str(data["meta"]))


def draw_like_zoology(case: dict, random_non_queries: bool):
    T = case["input_seq_len"]
    rng = np.random.RandomState(case["seed"])
    return mqar(
        rng,
        T,
        case["num_examples"],
        T,  # zoology's sequences are unpadded
        vocab=case["vocab_size"],
        kv_pairs=case["num_kv_pairs"],
        power_a=case.get("power_a", 0.01),
        random_non_queries=random_non_queries,
    )


def test_mqar_equals_zoology():
    """Tokens and labels equal zoology's multiquery_ar for np.random.seed(seed), every case."""
    data, cases = zoology_cases()
    for i, case in enumerate(cases):
        X, y, mask = draw_like_zoology(case, random_non_queries=False)
        np.testing.assert_array_equal(X, data[f"inputs{i}"])
        np.testing.assert_array_equal(y, data[f"labels{i}"])
        assert mask.all()


def test_mqar_random_non_queries_change_only_the_filler():
    """With random_non_queries the keys, values, queries and labels are zoology's; the filler
    steps hold tokens uniform on the vocabulary, drawn last from the same rng."""
    data, cases = zoology_cases()
    case = cases[2]
    X, y, _ = draw_like_zoology(case, random_non_queries=True)
    reference = data["inputs2"]
    kept = reference != 0
    np.testing.assert_array_equal(X[kept], reference[kept])
    np.testing.assert_array_equal(y, data["labels2"])
    noise = X[~kept]
    assert noise.min() >= 0 and noise.max() < case["vocab_size"] and (noise != 0).mean() > 0.9


def test_mqar_layout_and_labels():
    """Pairs first; every key queried once after them; a query's label is its pair's value."""
    T, k, vocab = 64, 8, 256
    X, y, mask = mqar(np.random.RandomState(3), T, 50, None, vocab=vocab, kv_pairs=k)
    width = default_width(T)
    assert X.shape == y.shape == mask.shape == (50, width) and X.dtype == y.dtype == np.int64
    assert mask[:, :T].all() and not mask[:, T:].any() and not X[:, T:].any()
    keys, values = X[:, 0 : 2 * k : 2], X[:, 1 : 2 * k : 2]
    assert ((keys >= 1) & (keys < vocab // 2)).all() and (values >= vocab // 2).all()
    assert all(len(set(row)) == k for row in keys) and all(len(set(row)) == k for row in values)
    for row in range(50):
        steps = np.flatnonzero(y[row] != NO_TARGET)
        assert len(steps) == k and steps.min() >= 2 * k and steps.max() < T
        pairs = dict(zip(keys[row], values[row], strict=True))
        assert [pairs[q] for q in X[row, steps]] == list(y[row, steps])


def test_selective_copying_layout_and_labels():
    """The data tokens, read in order among the noise, are the labels of the marker steps."""
    T, M, vocab = 40, 6, 10
    X, y, mask = selective_copying(
        np.random.RandomState(0), T, 30, None, vocab=vocab, data_tokens=M
    )
    assert X.shape == y.shape == (30, default_width(T)) and mask[:, :T].all()
    assert (X[:, T - M : T] == vocab - 1).all() and not X[:, T:].any()
    for row in range(30):
        data = X[row, : T - M][X[row, : T - M] != 0]
        assert len(data) == M and ((data >= 1) & (data <= vocab - 2)).all()
        np.testing.assert_array_equal(y[row, T - M : T], data)
        assert (np.delete(y[row], np.arange(T - M, T)) == NO_TARGET).all()


def test_induction_heads_layout_and_target():
    """The special token once before the last step, and last; the target follows the first."""
    T, vocab = 30, 8
    X, y, mask = induction_heads(np.random.RandomState(0), T, 200, None, vocab=vocab)
    special = vocab - 1
    assert X.shape == (200, default_width(T)) and y.shape == (200,) and mask[:, :T].all()
    assert (X[:, T - 1] == special).all() and ((X[:, : T - 1] == special).sum(1) == 1).all()
    first = np.argmax(X[:, : T - 1] == special, axis=1)  # noqa: SIM300
    np.testing.assert_array_equal(y, X[np.arange(200), first + 1])
    assert (y < special).all()


@pytest.mark.parametrize(
    "task, pool, chance",
    [("mqar", "per_step", 2 / 512), ("selective_copying", "per_step", 1 / 14)]
    + [("induction_heads", "last", 1 / 15)],
)
def test_each_task_passes_its_contract_at_its_chance(task, pool, chance):
    """The conf file's section against its generator (contract/task.py: task_report),
    and the best constant answer near the task's chance level (docs/tasks.md); mqar at a
    vocabulary of 512, which draws faster than its 8192."""
    vocab = ["task.params.vocab=512"] if task == "mqar" else []
    cfg = composed(f"task={task}", f"pool={pool}", "T0=64", *vocab)
    report = task_report(OmegaConf.to_container(cfg.task, resolve=True), 64)
    assert report.ok, str(report)
    measured = float(report.facts["chance"].split()[0])
    assert chance <= measured < chance + 0.03, (measured, chance)


@pytest.mark.parametrize(
    "generator, params, error",
    [
        (mqar, {"kv_pairs": 20}, "length >= 80"),
        (mqar, {"vocab": 16, "kv_pairs": 8}, "vocab=16"),
        (selective_copying, {"data_tokens": 40}, "length >= 80"),
        (induction_heads, {"vocab": 2}, "vocab=2"),
    ],
)
def test_bad_parameters_are_refused(generator, params, error):
    with pytest.raises(ValueError, match=error):
        generator(np.random.RandomState(0), 64, 2, None, **params)
