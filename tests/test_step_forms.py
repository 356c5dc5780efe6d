"""Two forms, one function (../shared DESIGN.md, "Models"; models/state.py): every model of
conf/model/*.yaml and every readout of conf/pool/*.yaml, found there and not listed here, has a
step form equal to its training form, in float64, on random inputs and random weights, at a length
that crosses several chunks and attention spans; and the state size it declares is the size of
the state its step form carries, measured, below and above the span. A readout that says it is
not causal (`causal = False`: every c_t reads the last state) has none, and a model read by it
declares no state size."""

import pytest
import torch
from helpers.configs import conf_names
from helpers.paths import CONF, PLUGINS, ROOT
from helpers.runs import contract_py
from omegaconf import OmegaConf
from torch import nn

from longterm.analysis.state_sizes import table as state_size_table
from longterm.config.command_line import composed
from longterm.contract.encoder import encoder_report
from longterm.contract.readout import readout_report
from longterm.models import FusedSequenceModel, SequenceModel, sequence_model
from longterm.models.build import build_encoder, build_readout
from longterm.models.state import has_step_form, run_steps, state_numbers
from longterm.plugins.resolve import reads_causally
from longterm.tasks import default_width
from longterm.training.parts import build_model
from longterm.training.result import measured

F, D, B = 3, 16, 2  # small: the whole file runs in a few seconds
LENGTH = 200  # crosses the 64-step chunks of the linear memory's scan and the attention spans
CUTS = (1, 40, LENGTH)  # state sizes measured here: below and above the built-in spans (64)
NOISE = 0.2  # std of the normal noise added to every parameter
CLOSE = {"rtol": 1e-9, "atol": 1e-10}  # float64: rounding, never a difference of function


def conf(group: str, name: str) -> dict:
    section = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{name}.yaml"))
    section.pop("defaults", None)
    return section


def randomised(module: nn.Module, seed: int) -> nn.Module:
    """The module in float64 with normal noise added to every parameter: weights no
    initialisation gives (a zero bias, the feedback model's uniform layer weights)."""
    module = module.double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * NOISE)
    return module.eval()


def encoder(name: str, dim: int = D, **changes) -> nn.Module:
    keys = conf("model", name) | changes
    path = keys.pop("encoder")
    keys.pop("dim")
    torch.manual_seed(0)
    return randomised(build_encoder(path, F, dim, **keys), seed=1)


def readout(name: str, dim: int = D) -> nn.Module:
    torch.manual_seed(0)
    return randomised(build_readout(conf("pool", name), dim), seed=1)


def steps_in_pieces(module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, dict[int, int]]:
    """The step form over x (B, T, ...) in pieces ending at CUTS below T and at T, each
    continuing from the state the last left: the outputs (B, T, ...) and the numbers in the
    state after each piece."""
    outputs, sizes, state, start = [], {}, None, 0
    for cut in sorted({c for c in CUTS if c < x.shape[1]} | {x.shape[1]}):
        y, state = run_steps(module, x[:, start:cut], state)
        outputs.append(y)
        sizes[cut] = state_numbers(state)
        start = cut
    return torch.cat(outputs, dim=1), sizes


@pytest.mark.parametrize("name", conf_names("model"))
def test_an_encoder_s_step_form_is_its_training_form(name):
    enc = encoder(name)
    assert has_step_form(enc), f"model={name} has no step form"
    x = torch.randn(B, LENGTH, F, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    with torch.no_grad():
        h = enc(x)
        stepped, sizes = steps_in_pieces(enc, x)
    torch.testing.assert_close(stepped, h, **CLOSE)
    assert sizes == {t: enc.state_size(t) for t in CUTS}


@pytest.mark.parametrize(
    "name, changes",
    [
        ("transformer", {"norm": "pre", "attn_span": 16}),
        ("all_attention", {"norm": "pre", "n_persistent": 0, "attn_span": 1}),
        ("feedback", {"share_kv": False, "layers": 3, "attn_span": 16}),
        ("gla", {"use_short_conv": True}),
        ("gla", {"use_short_conv": True, "conv_size": 2, "impl": "reference"}),
        ("deltanet", {"use_short_conv": True}),
        ("deltanet", {"use_short_conv": True, "conv_size": 3, "impl": "reference"}),
    ],
)
def test_the_variants_the_keys_select_step_as_they_run(name, changes):
    """What the conf files do not choose: pre-norm layers, attention alone over its own step,
    one key/value projection per layer; spans far shorter than the sequence; the short
    convolutions on q, k and v of GLA and DeltaNet (their last inputs carried, below and above
    the kernel's width)."""
    enc = encoder(name, **changes)
    x = torch.randn(B, 50, F, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    with torch.no_grad():
        stepped, sizes = steps_in_pieces(enc, x)
        torch.testing.assert_close(stepped, enc(x), **CLOSE)
    assert sizes == {t: enc.state_size(t) for t in (1, 40, 50)}


@pytest.mark.parametrize("name", conf_names("pool"))
def test_a_readout_s_step_form_is_its_training_form(name):
    """c_t of the step form is what `forward` gives for the states 0..t (the per-step readout:
    its output at t)."""
    pool = readout(name)
    if not reads_causally(pool):  # c_t reads later states: no step form can give it
        assert not has_step_form(pool), f"pool={name} says causal = False yet has a step form"
        return
    assert has_step_form(pool), f"pool={name} has no step form"
    T = 50
    h = torch.randn(B, T, D, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    with torch.no_grad():
        stepped, sizes = steps_in_pieces(pool, h)
        if pool.per_step:
            expected = pool(h)
        else:
            expected = torch.stack([pool(h[:, : t + 1]) for t in range(T)], dim=1)
    torch.testing.assert_close(stepped, expected, **CLOSE)
    assert sizes == {t: pool.state_size(t) for t in (1, 40, T)}


@pytest.mark.parametrize("name", conf_names("model"))
def test_a_model_s_step_form_is_the_encoder_s_then_the_readout_s_then_the_head(name):
    """SequenceModel, with every readout: y_t is the model's output on steps 0..t (per step: at
    t), and its state size is the encoder's plus the readout's, as measured (none with a
    readout that has no step form)."""
    keys, dim, hidden, T = conf("model", name), 8, 5, 12
    path = keys.pop("encoder")
    own = {k: v for k, v in keys.items() if k not in ("dim", "hidden", "impl")}
    x = torch.randn(B, T, F, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    for pool_name in conf_names("pool"):
        torch.manual_seed(0)
        net = sequence_model(path, F, 2, readout(pool_name, dim), dim, hidden, **own)
        if not has_step_form(net.readout):  # a readout without one: the model declares none
            assert net.state_size(T) is None, pool_name
            continue
        net = randomised(net, seed=3)
        with torch.no_grad():
            stepped, state = run_steps(net, x)
            if net.readout.per_step:
                expected = net(x)
            else:
                expected = torch.stack([net(x[:, : t + 1]) for t in range(T)], dim=1)
        torch.testing.assert_close(stepped, expected, **CLOSE, msg=f"pool={pool_name}")
        declared = net.encoder.state_size(T) + net.readout.state_size(T)
        assert net.state_size(T) == declared == state_numbers(state), pool_name


@pytest.mark.parametrize("pool_name", ["attention", "mean"])
def test_the_fused_model_steps_as_the_reference_does(pool_name):
    """FusedSequenceModel (the paper's network computed in one pass) has the reference's step
    form and state size: its encoder, readout and head are the reference's modules."""
    pool = build_readout(conf("pool", pool_name), D)
    torch.manual_seed(0)
    fused = sequence_model("longterm.models.feedforward.StepEncoder", F, 1, pool, D, impl="fused")
    reference = SequenceModel(fused.encoder, fused.readout, fused.head)
    assert type(fused) is FusedSequenceModel
    x = torch.randn(B, 30, F, dtype=torch.float64)
    fused, reference = fused.double(), reference.double()
    with torch.no_grad():
        assert torch.equal(run_steps(fused, x)[0], run_steps(reference, x)[0])
    assert fused.state_size(30) == reference.state_size(30) == pool.state_size(30)


def test_a_model_whose_encoder_has_no_step_form_declares_no_state_size(monkeypatch):
    """A user's encoder need not have the step form (tests/plugins/leaky.py has none): the model
    then declares no state size, rather than a wrong one."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    net = sequence_model("leaky.Leaky", F, 1, readout("last"), D)
    assert not has_step_form(net.encoder) and net.state_size(10) is None


def test_the_contract_check_holds_a_user_s_step_form_as_a_built_in_s(lab, monkeypatch):
    """The example's GRU and gated pooling (examples/mylab) have the step form: the contract
    check holds their two forms equal and their declared state sizes to the measured ones; a
    step form that drifts from its training form, or carries more than it declares
    (tests/plugins/drifting.py), fails those checks and no other."""
    monkeypatch.syspath_prepend(str(lab))
    monkeypatch.syspath_prepend(str(PLUGINS))
    gru = encoder_report("mylab.gru.GRU", 2, 8, {"layers": 2})
    gated = readout_report({**conf_in(lab, "pool", "gated"), "mask_padding": True}, 8)
    for report in (gru, gated):
        assert report.ok and "state_size is the step form's state" in report.checks[-1].what
    assert "declared 16, 16, 16" in gru.checks[-1].what  # layers * D
    understated = encoder_report("drifting.Understated", 2, 8, {})
    assert [c.ok for c in understated.checks][-2:] == [True, False], str(understated)
    assert "declared 8, 8, 8, carried 9, 9, 9" in understated.checks[-1].what


def conf_in(lab, group: str, name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(lab / "mylab" / "conf" / group / f"{name}.yaml"))


def test_the_contract_command_fails_a_step_form_that_drifts(lab):
    """src/contract.py, as a user runs it with a conf directory of their own: the drifting
    model passes every check of its training form and fails the step form's."""
    args = ["--config-dir", str(PLUGINS / "conf"), "model=drifting", "task=addition"]
    out = contract_py(*args, cwd=lab, env={"PYTHONPATH": str(PLUGINS)})
    assert out.returncode == 1, out.stdout + out.stderr
    failed = [line for line in out.stdout.splitlines() if "FAIL" in line]
    assert len(failed) == 1 and "step form equals training form" in failed[0], out.stdout
    assert "state_size is the step form's state, measured" in out.stdout  # its sizes are right
    assert out.stdout.endswith("contract: failed for model=drifting\n")


SPAN = "model.attn_span=256"  # longer than the batches: the cache holds every step


@pytest.mark.parametrize(
    "overrides, width",
    [
        (["arch=transformer", SPAN, "T0=100"], default_width(100)),  # fixed: the padded width
        (["arch=transformer", SPAN, "data=variable", "data.max_length=70"], 70),  # the longest
    ],
)
def test_a_run_records_its_state_size_at_the_width_of_its_batches(overrides, width):
    """result.json's and HPARAMS' `state_size` (training/result.py: measured): the model's
    declared state size after as many steps as its training batches are wide."""
    cfg = composed(overrides, CONF)
    module = build_model(cfg)
    sizes = measured(cfg, module)
    assert sizes["state_size"] == module.net.state_size(width) == 2 * 2 * 64 * width
    assert sizes["n_params"] == sum(p.numel() for p in module.parameters())


def test_the_state_size_table_in_the_docs_is_the_generated_one():
    """docs/models.md, "State size": the output of `python -m longterm.analysis.state_sizes
    --dim 64`, with a row for every model and readout of conf/ (rerun it when one is added)."""
    text = (ROOT / "docs" / "models.md").read_text()
    assert state_size_table(64) in text, "rerun python -m longterm.analysis.state_sizes --dim 64"
