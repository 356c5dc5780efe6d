"""Token inputs (`inputs: tokens`, `vocab`): an embedding of width model.dim in front of every
model, the fused paper's model included; the checks before training, the memory estimate, a
short real run of a recurrent and the feed-forward model, and the accuracy at other lengths
(`eval.lengths`) in result.json and the collector's table."""

import pytest
import torch
from helpers.configs import composed
from helpers.paths import CONF
from helpers.presets import TINY, quick
from helpers.results import read_json
from helpers.runs import multirun
from omegaconf import OmegaConf

from longterm.analysis.length_extrapolation import length_markdown, length_table
from longterm.analysis.runs import load_runs
from longterm.choices import FUSED_ENCODER
from longterm.config.command_line import check
from longterm.config.validate import ConfigError
from longterm.models.build import sequence_model
from longterm.models.readouts import AttentionPooling
from longterm.sweeps.pack import packable
from longterm.tasks import default_width
from longterm.training.eval_lengths import accuracy_at
from longterm.training.memory_estimate import GiB, data_bytes, eval_batch, memory_error
from longterm.training.parts import build_model
from longterm.training.run import train


def test_one_hot_models_have_no_embedding():
    """A one-hot task's model is built as before: no embedding, the paper's parameter count."""
    net = build_model(composed()).net
    assert not any(k.startswith("embedding") for k in net.state_dict())
    assert sum(p.numel() for p in net.parameters()) == 10_602


def test_token_model_embeds_to_the_model_width():
    cfg = composed("task=induction_heads", "model=lstm", "pool=last", "model.dim=12")
    net = build_model(cfg).net
    assert tuple(net.embedding.weight.shape) == (16, 12)
    assert net.encoder.layer.input_size == 12
    x = torch.randint(16, (3, 20))
    assert net(x, torch.ones(3, 20, dtype=torch.bool)).shape == (3, 16)


def test_the_fused_model_embeds_then_runs_its_pass():
    """model.impl=fused on token ids equals the reference model with the same parameters, and
    the gradient reaches the embedding."""
    D, V = 6, 11
    torch.manual_seed(0)
    build = lambda impl: sequence_model(  # noqa: E731
        FUSED_ENCODER, D, 3, AttentionPooling(D), D, impl=impl, input_vocab=V
    )
    fused, reference = build("fused"), build("reference")
    reference.load_state_dict(fused.state_dict())
    x = torch.randint(V, (4, 9))
    mask = torch.arange(9)[None, :] < torch.tensor([9, 7, 5, 9])[:, None]
    out = fused(x, mask)
    torch.testing.assert_close(out, reference(x, mask))
    out.square().sum().backward()
    assert fused.embedding.weight.grad is not None and fused.embedding.weight.grad.any()


def test_token_tasks_and_evaluations_at_other_lengths_run_alone_under_packing():
    """launcher=packed packs the paper's network on one-hot inputs only (its stacked members
    carry no embedding), and not a run that evaluates at other lengths after training."""
    assert packable(composed("pool=attention"))
    assert not packable(composed("task=induction_heads", "pool=attention"))
    assert not packable(composed("pool=attention", "eval.lengths=[100]"))


BAD = [
    (["eval.lengths=[0]"], "eval.lengths=[0] is invalid: Input should be a list of sequence"),
    (["eval.lengths=abc"], "eval.lengths='abc' is invalid"),
    (
        ["task=mqar", "pool=per_step", "eval.lengths=[64,16]"],
        "eval.lengths=[64, 16] is invalid: mqar: kv_pairs=8 needs",
    ),
    (["task=mqar", "pool=per_step", "+task.n_features=3"], "task: inputs=tokens needs vocab"),
    (["task=mqar", "pool=per_step", "task.vocab=100"], "task.vocab=100 is invalid: task=mqar's"),
    (["task=addition", "+task.inputs=words"], "task.inputs='words' is invalid"),
]


@pytest.mark.parametrize("args, expected", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_keys_fail_before_training_in_one_line(args, expected):
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value), str(err.value)


def test_the_memory_estimate_counts_token_ids():
    """A step of token ids holds one int64, not vocab features, and a run of mqar fits."""
    cfg = composed("task=mqar", "pool=per_step", "model=lstm", "task.params.vocab=1024")
    data, task = (OmegaConf.to_container(c, resolve=True) for c in (cfg.data, cfg.task))
    tokens = data_bytes(data, 0, True, tokens=True)
    one_hot = data_bytes(data, task["vocab"], True)
    assert tokens[1] * 100 < one_hot[1] and tokens[0] * 100 < one_hot[0]
    assert memory_error(build_model(cfg).net, data, task) is None


TOKEN_RUN = quick(
    "task=mqar",
    "pool=per_step",
    "T0=32",
    "task.params.vocab=64",
    "task.params.kv_pairs=4",
    "eval.lengths=[48,64]",
    "eval.sequences=16",
    "logger=none",
    base=TINY,
)


def test_an_evaluation_length_too_long_for_one_sequence_is_refused_before_training():
    """The run fits, but scoring one sequence at eval.lengths' T0 would not: the logits alone of
    one sequence of 5.5 million steps at vocab 8192 are 180 GB."""
    cfg = composed("task=mqar", "pool=per_step", "model=lstm", "T0=64")
    data, task = (OmegaConf.to_container(c, resolve=True) for c in (cfg.data, cfg.task))
    net = build_model(cfg).net
    assert memory_error(net, data, task, eval_lengths=[64, 256]) is None
    error = memory_error(net, data, task, eval_lengths=[256, 5_000_000])
    assert error.startswith("eval.lengths: T0=5000000 needs about ") and "\n" not in error
    assert error.endswith("GiB available: use shorter eval.lengths")
    assert (
        float(error.split("one sequence's forward pass: ")[1].split(")")[0])
        > 5_500_000 * 8192 * 4 / GiB
    )


def test_evaluation_batches_are_split_to_fit_and_score_the_same():
    """A batch of 100 sequences of 10,000 steps at vocab 8192 holds 36 GB of logits: scored in
    parts where the memory is short, all at once where it is not; the parts score the same
    sequences with the same accuracy as the whole batch."""
    cfg = composed("task=mqar", "pool=per_step", "model=lstm", "T0=64")
    net, task = build_model(cfg).net, OmegaConf.to_container(cfg.task, resolve=True)
    logits = default_width(10_000) * 8192 * 4
    assert eval_batch(net, task, 10_000, 100, room=1000 * logits) == 100
    parts = eval_batch(net, task, 10_000, 100, room=40 * logits)
    assert 1 <= parts < 40 * 0.8
    assert eval_batch(net, task, 10_000, 100, room=logits // 10) == 1
    # selective copying's 16 answers a sequence score above 0 untrained (chance is 1/14)
    run = composed(
        "task=selective_copying", "pool=per_step", "model=lstm", "T0=40", "eval.sequences=10",
        "data.batch_size=5",
    )  # fmt: skip
    module = build_model(run)
    module.eval()
    whole = accuracy_at(module, run, 48, at_once=5)
    assert whole > 0 and accuracy_at(module, run, 48, at_once=2) == whole
    assert accuracy_at(module, run, 48) == whole


def test_token_runs_train_in_process_and_are_collected_by_length(tmp_path):
    """The run's own path (training/run.py: train) on token ids for a recurrent and the
    feed-forward model, one epoch of 3 tiny batches each, then the accuracy at eval.lengths in
    result.json, and the collector's table of accuracy by length."""
    results = {}
    for model in ("lstm", "feedforward"):
        run_dir = tmp_path / model
        results[model] = train(composed(*TOKEN_RUN, f"model={model}", f"run_dir={run_dir}"))
        assert read_json(run_dir / "result.json")["eval_lengths"] == results[model]["eval_lengths"]
    for r in results.values():
        assert (r["status"], r["updates"], r["vocab"]) == ("max_epochs", 3, 64)
        assert sorted(r["eval_lengths"]) == ["48", "64"] and r["eval_sequences"] == 16
        assert all(0.0 <= acc <= 1.0 for acc in r["eval_lengths"].values())
    table = length_table(load_runs([tmp_path]))
    assert sorted(table.length.unique()) == [48, 64] and (table.seeds == 1).all()
    lstm = results["lstm"]["eval_lengths"]
    row = f"| mqar | lstm | per_step | 32 | 1 | {100 * lstm['48']:.1f} | {100 * lstm['64']:.1f} |"
    assert row in length_markdown(table)


@pytest.mark.slow
def test_token_runs_train_and_record_the_accuracy_at_other_lengths(tmp_path):
    """mqar through src/train.py for a recurrent and the feed-forward model, one epoch of tiny
    batches, then eval.lengths: result.json's eval_lengths, and the collector's table."""
    args = [*TOKEN_RUN, "model=lstm,feedforward"]
    results = {r["model"]: r for r in multirun(tmp_path, *args)}
    assert sorted(results) == ["feedforward", "lstm"]
    for r in results.values():
        assert (r["status"], r["updates"], r["vocab"], r["kv_pairs"]) == ("max_epochs", 3, 64, 4)
        assert sorted(r["eval_lengths"]) == ["48", "64"] and r["eval_sequences"] == 16
        assert all(0.0 <= acc <= 1.0 for acc in r["eval_lengths"].values())
    # the embedding (64 x 100) and the head's 64 outputs are the feed-forward model's parameters
    assert results["feedforward"]["n_params"] == 64 * 100 + 100 * 100 + 100 + 10_100 + 100 * 64 + 64
    table = length_table(load_runs([tmp_path]))
    assert sorted(table.length.unique()) == [48, 64] and (table.seeds == 1).all()
    text = length_markdown(table)
    lstm = results["lstm"]["eval_lengths"]
    assert (
        f"| mqar | lstm | per_step | 32 | 1 | {100 * lstm['48']:.1f} | {100 * lstm['64']:.1f} |"
        in text
    )
