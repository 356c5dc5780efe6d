"""Every model on every task through the real entry point, src/train.py, for a few updates."""

import math

import pytest
from helpers.configs import conf_names
from helpers.presets import TINY, quick
from helpers.results import read_json
from helpers.runs import multirun, train_py

TASKS = conf_names("task", labels="sequence")

CLASSES = {"xor_classification": 2, "temporal_order": 4, "temporal_order3": 8}
ARCHS = {  # arch= preset: model, readout, parameters on temporal_order (F=8, 4 classes)
    "attention": ("feedforward", "attention", 8 * 100 + 100 + 101 + 10_504),
    "mean": ("feedforward", "mean", 8 * 100 + 100 + 10_504),
    "rnn": ("rnn", "last", 100 * (8 + 100 + 2) + 10_504),
    "lstm": ("lstm", "last", 4 * 100 * (8 + 100 + 2) + 10_504),
    "linear_memory": ("linear_memory", "last", 100 * (8 + 2) + 10_504),
}


@pytest.fixture(scope="module")
def every_model(tmp_path_factory) -> dict[str, list[dict]]:
    """One sweep of every arch= preset on every task (one process for all), its results by arch;
    the reference implementation throughout (the fused one compiles per process; below)."""
    sweep = tmp_path_factory.mktemp("every_model")
    args = [f"arch={','.join(ARCHS)}", f"task={','.join(TASKS)}", "model.impl=reference", *TINY]
    results = multirun(sweep, *args)
    arch = {(model, pool): name for name, (model, pool, _) in ARCHS.items()}
    return {name: [r for r in results if arch[r["model"], r["pool"]] == name] for name in ARCHS}


@pytest.mark.parametrize("arch", ARCHS)
def test_every_model_trains_on_every_task(every_model, arch):
    results = {r["task"]: r for r in every_model[arch]}
    assert len(results) == len(every_model[arch]) and sorted(results) == sorted(TASKS)
    model, pool, n_params = ARCHS[arch]
    for r in results.values():
        assert (r["model"], r["pool"], r["status"], r["updates"]) == (model, pool, "max_epochs", 3)
        assert 0.0 <= r["best_acc"] <= 1.0 and r["diverged_step"] is None
    assert results["temporal_order"]["n_params"] == n_params
    assert results["xor"]["n_params"] != results["xor_classification"]["n_params"]  # 1 vs 2 outputs
    assert results["associative_recall"]["k"] == 4


# Attention models, D = 64, two layers, span 64, d_ff = N = 64, on variable tracking (F = 20,
# 10 classes); the head is 64 * 100 + 100 + 100 * 10 + 10.
ATTENTION_ARCHS = {
    "transformer": 20 * 64 + 64 + 2 * (4 * 64**2 + 64 * 64 + 2 * 64 * 64) + 7510,
    "all_attention": 20 * 64 + 64 + 2 * (4 * 64**2 + 64 * 64 + 2 * 64 * 64) + 7510,
    "feedback": 20 * 64 + 64 + 2 * (2 * 64**2 + 64 * 64 + 2 * 64 * 64) + 2 * 64**2 + 3 + 7510,
}


# The sequence mixers on models/stack.py, D = 64, two layers, on the same task: the input
# projection 20 * 64 + 64, per layer the mixer and its LayerNorm 2 * 64, the final LayerNorm, then
# the head (the formulas of models/s4d.py and models/hyena.py).
HYENA_FILTER = 16 * 64 + 64 + 2 * (64**2 + 64) + 3 * 64 + 64 * 128  # K = 8, W = 64, N = 2
MIXER_LAYER = {
    "s4d": 2 * 64**2 + 2 * 64 * 64 + 4 * 64,  # d_state N = 64
    "hyena": 3 * (64**2 + 64) + 3 * 64 * 4 + HYENA_FILTER + 2 * 64 + 64**2 + 64,  # k = 3
}
MIXER_MODELS = {
    name: 20 * 64 + 64 + 2 * (n + 2 * 64) + 2 * 64 + 7510 for name, n in MIXER_LAYER.items()
}


def test_attention_models_and_sequence_mixers_train(tmp_path):
    """The three attention models and the sequence mixers through src/train.py, read at their
    last real step (model=, whose conf files choose pool=last as the arch= presets do)."""
    expected = {**ATTENTION_ARCHS, **MIXER_MODELS}
    args = [f"model={','.join(expected)}", "task=variable_tracking", *TINY]
    results = {r["model"]: r for r in multirun(tmp_path, *args)}
    assert sorted(results) == sorted(expected)
    for name, r in results.items():
        assert (r["pool"], r["status"], r["updates"]) == ("last", "max_epochs", 3)
        assert r["n_params"] == expected[name] and 0.0 <= r["best_acc"] <= 1.0
        assert r["diverged_step"] is None


def test_fused_feedforward_on_a_classification_task(tmp_path):
    out = train_py("arch=attention", "task=temporal_order", *TINY, f"hydra.run.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["config"]["model"]["impl"] == "auto" and result["loss"] == "cross_entropy"
    assert result["updates"] == 3 and result["n_params"] == ARCHS["attention"][2]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["model=lstm", "task=associative_recall", "task.params.k=2"], {"pool": "last", "k": 2}),
        (["model=rnn", "pool=attention", "pool.mask_padding=true"], {"pool": "attention"}),
        (["arch=linear_memory", "data.lengths=per_batch"], {"lengths": "per_batch"}),
        (
            ["arch=lstm", "data=variable", "data.min_length=20", "data.max_length=40"],
            {"data": "variable", "model": "lstm"},
        ),
    ],
)
def test_new_tasks_with_other_data_and_readouts(tmp_path, args, expected):
    short = quick(drop=("T0",), base=TINY)
    if "data=variable" in args:  # validation batches instead of a validation set
        short = [*quick(drop=("data.val_size",), base=short), "data.val_batches=2"]
    out = train_py(*short, "task=temporal_order", f"hydra.run.dir={tmp_path}", *args)
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert {k: result[k] for k in expected} == expected and result["updates"] == 3
    assert math.isfinite(result["best_acc"])
