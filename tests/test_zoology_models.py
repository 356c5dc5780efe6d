"""zoology's Figure-2 models (models/zoology.py, arch=zoology_*) against zoology's own code
(../shared/fixtures/zoology_*_reference.npz: its LanguageModel in float64 with its state dict,
input ids and logits; skipped when ../shared is absent): the logits, the parameter counts of its
Figure-2 table through the framework's build path, the tied head's and max_positions' checks
before training, and the model defined for max_positions steps on a padded batch."""

import json
import math

import numpy as np
import pytest
import torch
from helpers.configs import composed
from helpers.paths import SHARED

from longterm.choices import head_error
from longterm.config.validate import ConfigError, validate
from longterm.models.zoology import ZoologyAttention, from_zoology
from longterm.training.parts import build_model

pytestmark = pytest.mark.usefixtures("one_thread")  # small tensors (conftest.py)

FIXTURES = SHARED / "fixtures"
# fixture -> the arch whose conf builds the same model as it is (Figure 2's mixers at 2 layers,
# as the fixtures and their tables are), with no override
ARCHES = {
    "zoology_lm_reference.npz": ("zoology_attention", []),
    "zoology_hyena_reference.npz": ("zoology_hyena", []),
    "zoology_base_conv_reference.npz": ("zoology_base_conv", []),
}


def fixture(name: str) -> tuple[dict, dict, np.ndarray, np.ndarray]:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"reference fixtures not found at {path} (../shared is absent)")
    z = np.load(path)
    state_dict = {k.removeprefix("sd/"): z[k] for k in z.files if k.startswith("sd/")}
    return json.loads(str(z["meta"])), state_dict, z["input_ids"], z["logits"]


def n_params(net: torch.nn.Module) -> int:
    """Parameters counted once each (the tied matrix once, as zoology counts)."""
    return sum(p.numel() for p in net.parameters())


@pytest.mark.parametrize("name", ARCHES)
def test_from_zoology_gives_zoology_s_logits(name):
    meta, state_dict, ids, logits = fixture(name)
    net = from_zoology(meta, state_dict)
    with torch.no_grad():
        got = net(torch.from_numpy(ids))
    assert got.dtype == torch.float64 and got.shape == logits.shape
    assert np.abs(got.numpy() - logits).max() < 1e-10
    assert n_params(net) == meta["n_params"]
    assert net.head.weight is net.embedding.weight  # tied, as zoology's lm_head


@pytest.mark.parametrize("name", ARCHES)
def test_the_arch_builds_zoology_s_parameter_count_at_every_width_and_length(name):
    """Through the framework's build path at vocab 8192 (task=mqar), every entry of zoology's
    table: d_model in 64..512, length in 64..512."""
    meta, *_ = fixture(name)
    arch, overrides = ARCHES[name]
    for key, expected in meta["n_params_figure2_vocab8192"].items():
        dim, length = map(int, key.split(","))
        cfg = composed(f"arch={arch}", "task=mqar", f"model.dim={dim}", f"T0={length}", *overrides)
        assert cfg.model.max_positions == length
        with torch.device("meta"):  # counts only
            net = build_model(cfg).net
        assert n_params(net) == expected, (arch, key)


def test_zoology_s_mamba_has_the_parameters_of_zoology_s_mamba_block():
    """No fixture (mamba_ssm needs CUDA): the count of zoology's code read off its modules, per
    MambaBlock with E = 2D, N = 16, R = ceil(D / 16), conv 4: in_proj 2E D (no bias), conv1d
    4E + E, x_proj E (R + 2N), dt_proj R E + E, A_log E N, D E, out_proj E D (no bias), RMSNorm
    D; 2 blocks; then ln_f 2D and the tied embedding V D."""
    for dim in (64, 128, 256, 512):
        E, N, R = 2 * dim, 16, math.ceil(dim / 16)
        block = 2 * E * dim + 5 * E + E * (R + 2 * N) + R * E + E + E * N + E + E * dim + dim
        cfg = composed("arch=zoology_mamba", "task=mqar", f"model.dim={dim}")
        with torch.device("meta"):
            net = build_model(cfg).net
        assert n_params(net) == 8192 * dim + 2 * block + 2 * dim
        assert net.encoder.layers[0].mixer.dt_rank == R


def test_an_unknown_mixer_is_refused_in_one_line():
    with pytest.raises(ValueError, match="^sequence_mixer='zoology.mixers.rwkv.RWKV' has no equal"):
        from_zoology({"sequence_mixer": "zoology.mixers.rwkv.RWKV"}, {})


def test_the_tied_head_needs_token_inputs_and_one_output_per_token():
    with pytest.raises(ConfigError) as e:
        validate(composed("arch=zoology_attention", "task=addition"))
    assert str(e.value).startswith("model.head=tied is invalid with one-hot inputs")
    assert "\n" not in str(e.value)
    assert head_error("tied", "tokens", 10, 256).startswith(
        "model.head=tied is invalid with task.n_outputs=10"
    )
    assert head_error("mlp", "onehot", 10, None) is None
    assert validate(composed("model=lstm", "task=mqar", "model.head=tied")).model.head == "tied"


def test_a_sequence_beyond_max_positions_is_refused_before_training():
    validate(composed("arch=zoology_hyena", "task=mqar", "T0=64", "task.params.kv_pairs=4"))
    with pytest.raises(ConfigError, match=r"^eval.lengths=128 is invalid with model.max_posit"):
        validate(composed("arch=zoology_attention", "task=mqar", "T0=64", "eval.lengths=[128]"))
    with pytest.raises(ConfigError, match=r"^T0=64 is invalid with model.max_positions=32"):
        validate(
            composed("model=zoology_base_conv", "task=mqar", "T0=64", "model.max_positions=32")
        )


def test_padded_steps_beyond_max_positions_are_run_as_the_first_max_positions():
    """The framework pads a batch of T0 steps to int(ceil(1.1 T0)): the model runs on its first
    max_positions steps (causal: the real steps' states are the same) and gives zeros after."""
    torch.manual_seed(0)
    enc = ZoologyAttention(8, 8, max_positions=16).double().eval()
    x = torch.randn(2, 18, 8, dtype=torch.float64)
    mask = torch.arange(18)[None] < torch.tensor([[16], [12]])
    with torch.no_grad():
        h = enc(x, mask)
        torch.testing.assert_close(h[:, :16], enc(x[:, :16]))
        assert not h[:, 16:].any()
        with pytest.raises(ValueError, match="^17 steps are more than model.max_positions=16"):
            enc(x, torch.arange(18)[None] < torch.tensor([[17], [12]]))
