"""Every model on every task through the real entry point, src/train.py, for a few updates."""

import math

import pytest
from conftest import read_json, train_py

TASKS = (
    "addition",
    "multiplication",
    "xor",
    "xor_classification",
    "temporal_order",
    "temporal_order3",
    "variable_tracking",
    "associative_recall",
)
CLASSES = {"xor_classification": 2, "temporal_order": 4, "temporal_order3": 8}
# A few updates on short sequences: enough to run forward, backward and Adam on every model.
TINY = [
    "T0=20",
    "data.batch_size=8",
    "data.batches_per_epoch=3",
    "data.val_size=16",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=1",
]
ARCHS = {  # arch= preset: model, readout, parameters on temporal_order (F=8, 4 classes)
    "attention": ("feedforward", "attention", 8 * 100 + 100 + 101 + 10_504),
    "mean": ("feedforward", "mean", 8 * 100 + 100 + 10_504),
    "rnn": ("rnn", "last", 100 * (8 + 100 + 2) + 10_504),
    "lstm": ("lstm", "last", 4 * 100 * (8 + 100 + 2) + 10_504),
    "linear_memory": ("linear_memory", "last", 100 * (8 + 2) + 10_504),
}


@pytest.mark.parametrize("arch", ARCHS)
def test_every_model_trains_on_every_task(tmp_path, arch):
    """The reference implementation throughout (the fused one compiles per process; below)."""
    out = train_py(
        "-m",
        f"arch={arch}",
        f"task={','.join(TASKS)}",
        "model.impl=reference",
        *TINY,
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    results = {
        r["config"]["task"]["name"] + r["loss"]: r
        for r in map(read_json, tmp_path.glob("*/result.json"))
    }
    assert len(results) == len(TASKS)
    model, pool, n_params = ARCHS[arch]
    for r in results.values():
        assert (r["model"], r["pool"], r["status"], r["updates"]) == (model, pool, "max_epochs", 3)
        assert 0.0 <= r["best_acc"] <= 1.0 and r["diverged_step"] is None
    assert results["temporal_ordercross_entropy"]["n_params"] == n_params
    assert (
        results["xormse"]["n_params"] != results["xorcross_entropy"]["n_params"]
    )  # 1 vs 2 outputs
    assert results["associative_recallcross_entropy"]["k"] == 4


# Attention models, D = 64, two layers, span 64, d_ff = N = 64, on variable tracking (F = 20,
# 10 classes); the head is 64 * 100 + 100 + 100 * 10 + 10.
ATTENTION_ARCHS = {
    "transformer": 20 * 64 + 64 + 2 * (4 * 64**2 + 64 * 64 + 2 * 64 * 64) + 7510,
    "all_attention": 20 * 64 + 64 + 2 * (4 * 64**2 + 64 * 64 + 2 * 64 * 64) + 7510,
    "feedback": 20 * 64 + 64 + 2 * (2 * 64**2 + 64 * 64 + 2 * 64 * 64) + 2 * 64**2 + 3 + 7510,
}


def test_attention_models_train(tmp_path):
    """The three attention models through src/train.py, read at their last real step."""
    out = train_py(
        "-m",
        f"arch={','.join(ATTENTION_ARCHS)}",
        "task=variable_tracking",
        *TINY,
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    results = {r["model"]: r for r in map(read_json, tmp_path.glob("*/result.json"))}
    assert sorted(results) == sorted(ATTENTION_ARCHS)
    for name, r in results.items():
        assert (r["pool"], r["status"], r["updates"]) == ("last", "max_epochs", 3)
        assert r["n_params"] == ATTENTION_ARCHS[name] and 0.0 <= r["best_acc"] <= 1.0
        assert r["diverged_step"] is None


def test_fused_feedforward_on_a_classification_task(tmp_path):
    out = train_py("arch=attention", "task=temporal_order", *TINY, f"hydra.run.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert result["config"]["model"]["impl"] == "fused" and result["loss"] == "cross_entropy"
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
    quick = [a for a in TINY if not a.startswith(("data.val_size", "T0"))]
    if "data=variable" in args:
        quick.append("data.val_batches=2")
    out = train_py(*quick, "task=temporal_order", f"hydra.run.dir={tmp_path}", *args)
    assert out.returncode == 0, out.stderr
    result = read_json(tmp_path / "result.json")
    assert {k: result[k] for k in expected} == expected and result["updates"] == 3
    assert math.isfinite(result["best_acc"])


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["model=gru"],
            "model='gru' is invalid: choose one of all_attention, feedback, feedforward, "
            "linear_memory, lstm, rnn, transformer",
        ),
        (["task.loss=hinge"], "task.loss='hinge' is invalid"),
        (
            ["task=temporal_order", "task.n_outputs=1"],
            "task: loss=cross_entropy needs n_outputs >= 2",
        ),
        (["task=addition", "task.n_outputs=2"], "task: loss=mse needs n_outputs = 1"),
        (
            ["task=associative_recall", "task.params.k=8", "T0=12"],
            "task.params={'k': 8} is invalid: associative_recall: k=8 needs length >= 17, got 12",
        ),
        (
            ["task=addition", "+task.params.k=2"],
            "task.params={'k': 2} is invalid: generate_marked()",
        ),
        (["model=rnn", "model.impl=fused"], "model.impl=fused is invalid for model=rnn"),
        (["pool=last"], "model.impl=fused is invalid with pool=last"),
        (["arch=gpt"], "arch='gpt' is invalid: choose one of all_attention, attention"),
        (["model=feedback", "model.heads=3"], "model: heads=3 must divide dim=64"),
    ],
)
def test_bad_model_and_task_overrides_fail_with_one_line(tmp_path, args, message):
    out = train_py(*args, cwd=tmp_path)
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and lines[0].startswith(f"error: {message}"), (
        out.stderr
    )
