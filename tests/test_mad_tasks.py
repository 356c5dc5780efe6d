"""The MAD tasks (longterm.tasks.mad): `dataset` equal to mad-lab's own output for every task at
its baseline (../shared/fixtures/mad_tasks_reference.npz; skipped when ../shared is absent),
numpy's global state untouched, the protocol's settings, a harder setting of each task, and the
framework's generators (conf/task/mad_*.yaml) against their contract."""

import json
import subprocess
import sys

import numpy as np
import pytest
from helpers.configs import composed
from helpers.paths import SHARED
from omegaconf import OmegaConf

from longterm.contract.task import task_report
from longterm.tasks import NO_TARGET, mad
from longterm.tasks.mad import SETTINGS, TASKS, dataset

REFERENCE = SHARED / "fixtures" / "mad_tasks_reference.npz"
# The length of an instance at each task's baseline: recall inputs are seq_len - 1 steps
# (shifted by one), fuzzy recall pads to seq_len, the others are seq_len.
BASELINE_LENGTH = {
    "in-context-recall": 127,
    "noisy-in-context-recall": 127,
    "fuzzy-in-context-recall": 128,
    "selective-copying": 256,
    "compression": 32,
    "memorization": 32,
}


def reference():
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE} is absent (../shared)")
    data = np.load(REFERENCE)
    return data, json.loads(str(data["meta"]))["cases"]


def test_dataset_equals_mad_lab_for_every_task():
    data, cases = reference()
    assert sorted(case["task"] for case in cases) == sorted(TASKS)
    for case in cases:
        task = case["task"]
        out = dataset(task, case["seed"], case["n_train"], case["n_test"], **case["kwargs"])
        for split in ("train", "test"):
            for array, name in zip(out[split], ("inputs", "targets"), strict=True):
                expected = data[f"{task}/{split}/{name}"]
                assert array.dtype == np.int64, (task, split, name)
                np.testing.assert_array_equal(array, expected, err_msg=f"{task} {split} {name}")


def test_the_baselines_are_the_fixtures_settings():
    """SETTINGS[task][0] is the baseline mad-lab's run used (its kwargs in the fixture)."""
    _, cases = reference()
    for case in cases:
        baseline = dict(SETTINGS[case["task"]][0])
        assert (baseline.pop("n_train"), baseline.pop("n_test")) == (
            256 if case["task"] == "memorization" else 12_800,
            1_280,
        )
        assert baseline == case["kwargs"], case["task"]


@pytest.mark.parametrize("task", TASKS)
def test_dataset_leaves_numpy_global_state_alone(task):
    """A call neither reads nor moves numpy's global generator (selective copying draws its
    blanks' positions from a private RandomState where mad-lab uses the global one)."""
    np.random.seed(99)
    before = np.random.get_state()
    first = dataset(task, 5, **{**SETTINGS[task][0], "n_train": 2, "n_test": 2})
    after = np.random.get_state()
    assert before[0] == after[0] and all(
        np.array_equal(a, b) for a, b in zip(before[1:], after[1:], strict=True)
    )
    np.random.seed(7)
    again = dataset(task, 5, **{**SETTINGS[task][0], "n_train": 2, "n_test": 2})
    for split in ("train", "test"):
        for a, b in zip(first[split], again[split], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("task", TASKS)
def test_baseline_shapes_and_targets(task):
    settings = {**SETTINGS[task][0], "n_train": 3, "n_test": 2}
    out = dataset(task, 0, **settings)
    vocab = settings["vocab_size"]
    for split, n in (("train", 3), ("test", 2)):
        inputs, targets = out[split]
        assert inputs.shape == targets.shape == (n, BASELINE_LENGTH[task])
        assert inputs.dtype == targets.dtype == np.int64
        assert inputs.min() >= 0 and inputs.max() < vocab
        labelled = targets[targets != NO_TARGET]
        assert labelled.size and labelled.min() >= 0 and labelled.max() < vocab


def test_settings_are_the_baseline_then_one_change_at_a_time():
    counts = {task: len(settings) for task, settings in SETTINGS.items()}
    assert counts == {
        "in-context-recall": 11,
        "noisy-in-context-recall": 14,
        "fuzzy-in-context-recall": 11,
        "selective-copying": 13,
        "compression": 11,
        "memorization": 6,
    }
    for task, (baseline, *changed) in SETTINGS.items():
        assert baseline["n_test"] == 1_280
        for setting in changed:
            assert sum(setting[k] != baseline[k] for k in baseline) == 1, (task, setting)


# One harder setting of each task (a `changes` value of mad-lab's configs/tasks/*.yml) and the
# instance length it gives.
HARDER = [
    ("in-context-recall", {"vocab_size": 128}, 127),
    ("noisy-in-context-recall", {"frac_noise": 0.8}, 127),
    ("fuzzy-in-context-recall", {"seq_len": 256}, 256),
    ("selective-copying", {"num_tokens_to_copy": 96}, 256),
    ("compression", {"seq_len": 256}, 256),
    ("memorization", {"vocab_size": 8192}, 32),
]


@pytest.mark.parametrize("task, change, length", HARDER, ids=[h[0] for h in HARDER])
def test_a_harder_setting_runs(task, change, length):
    setting = next(s for s in SETTINGS[task] if all(s[k] == v for k, v in change.items()))
    out = dataset(task, 1, **{**setting, "n_train": 3, "n_test": 2})
    assert out["train"][0].shape == out["train"][1].shape == (3, length)
    assert out["test"][0].shape == out["test"][1].shape == (2, length)
    assert (out["test"][1] != NO_TARGET).any()


def test_recall_training_targets_are_the_next_token_and_hold_the_test_ones():
    """mad-lab's two kinds of target on the same inputs: the next token at every step in
    training, the probed values at test (in-context recall draws the same tokens for both)."""
    X, train, mask = mad.in_context_recall(np.random.RandomState(3), 51, 20, is_training=True)
    X2, test, _ = mad.in_context_recall(np.random.RandomState(3), 51, 20, is_training=False)
    np.testing.assert_array_equal(X, X2)
    steps = mask[0].sum()
    assert steps == 51 and mask.sum(1).min() == steps
    np.testing.assert_array_equal(train[:, : steps - 1], X[:, 1:steps])
    probed = test != NO_TARGET
    assert probed.any() and (train != NO_TARGET)[:, :steps].all()
    np.testing.assert_array_equal(train[probed], test[probed])


def test_memorization_keeps_one_map_across_batches():
    pairs = set()
    for seed in (0, 1):
        X, y, _ = mad.memorization(np.random.RandomState(seed), 32, 50, vocab_size=64)
        keys, values = X[:, 0:32:2], y[:, 1:32:2]
        pairs |= set(zip(keys.ravel().tolist(), values.ravel().tolist(), strict=True))
    assert len(pairs) == len({key for key, _ in pairs})  # one value per key


@pytest.mark.parametrize(
    "name, T0, chance",
    [
        ("in_context_recall", 51, 1 / 8),
        ("noisy_in_context_recall", 51, 1 / 8),
        ("fuzzy_in_context_recall", 64, 1 / 8),
        ("selective_copying", 64, 1 / 14),
        ("compression", 32, 1 / 16),
        ("memorization", 32, 1 / 127),
    ],
)
def test_each_conf_passes_its_contract_at_its_chance(name, T0, chance):
    cfg = composed(f"task=mad_{name}", f"T0={T0}")
    report = task_report(OmegaConf.to_container(cfg.task, resolve=True), T0)
    assert report.ok, str(report)
    measured = float(report.facts["chance"].split()[0])
    assert chance <= measured < chance + 0.03, (measured, chance)


@pytest.mark.parametrize(
    "generator, params, error",
    [
        (mad.selective_copying, {"num_tokens_to_copy": 40}, "seq_len=64 > 81"),
        (mad.noisy_in_context_recall, {"frac_noise": 1.0}, "frac_noise=1.0"),
        (mad.in_context_recall, {"frac_noise": 0.5}, "needs noise_vocab_size"),
        (mad.fuzzy_in_context_recall, {"vocab_size": 6}, "too few"),
    ],
)
def test_bad_parameters_are_refused(generator, params, error):
    with pytest.raises(ValueError, match=error):
        generator(np.random.RandomState(0), 64, 2, None, **params)


def test_one_length_per_batch_that_recall_cannot_hit_is_one_line():
    """In-context recall has an odd number of steps; a batch of one even length is refused."""
    with pytest.raises(ValueError, match="gives 65 steps"):
        mad.in_context_recall(np.random.RandomState(0), 64, 2, 64)
    X, _, mask = mad.in_context_recall(np.random.RandomState(0), 63, 2, 63)
    assert X.shape == (2, 63) and mask.all()


def test_the_mad_modules_load_neither_torch_nor_pydantic():
    code = "import sys, longterm.tasks.mad\n"
    code += "print(sorted(m for m in ('torch', 'pydantic', 'omegaconf') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
