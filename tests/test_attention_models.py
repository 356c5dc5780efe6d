"""The attention models: the joint softmax, parameter counts, causality, the feedback memory and
its in-place buffers, gradients, padding."""

import math

import numpy as np
import pytest
import torch

from longterm.config.builtins import encoder_of, generator_of
from longterm.models import sequence_model
from longterm.models.attention import attend
from longterm.models.feedback import FeedbackEncoder
from longterm.models.readouts import AttentionPooling, LastStep, MeanPooling
from longterm.models.transformer import SelfAttention
from longterm.tasks import generate

pytestmark = pytest.mark.usefixtures("one_thread")  # small tensors (conftest.py)


DEFAULTS = dict(dim=64, heads=4, layers=2, attn_span=64)  # conf/model/*.yaml
OWN = {
    "transformer": dict(d_ff=64, norm="post"),
    "all_attention": dict(n_persistent=64, norm="post"),
    "feedback": dict(d_ff=64, share_kv=True),
}


def model(name: str, in_features: int, out_features: int, readout, **kw) -> torch.nn.Module:
    """Attention model `name` with the config's values for the keys not given."""
    keys = {**DEFAULTS, **OWN[name], **kw}
    return sequence_model(encoder_of(name), in_features, out_features, readout, name=name, **keys)


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def head(D: int, out: int, hidden: int = 100) -> int:
    return D * hidden + hidden + hidden * out + out


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("F, D, H, L, S, N", [(8, 64, 4, 2, 64, 16), (3, 12, 3, 3, 5, 0)])
def test_parameter_counts_follow_the_docstring_formulas(F, D, H, L, S, N, norm):
    kw = dict(dim=D, heads=H, layers=L, attn_span=S)
    encoder = F * D + D
    assert n_params(model("all_attention", F, 4, LastStep(D), n_persistent=N, norm=norm, **kw)) == (
        encoder + L * (4 * D**2 + S * D + 2 * N * D) + head(D, 4)
    )
    assert n_params(model("transformer", F, 4, LastStep(D), d_ff=N + 1, norm=norm, **kw)) == (
        encoder + L * (4 * D**2 + S * D + 2 * D * (N + 1)) + head(D, 4)
    )
    for share_kv, K in [(True, 1), (False, L)]:
        net = model("feedback", F, 4, AttentionPooling(D), d_ff=N + 1, share_kv=share_kv, **kw)
        assert (
            n_params(net)
            == (encoder + L * (2 * D**2 + S * D + 2 * D * (N + 1)) + K * 2 * D**2 + L + 1)
            + head(D, 4)
            + D
            + 1
        )


@pytest.mark.parametrize("N", [16, 64])
def test_persistent_slots_cost_what_the_feed_forward_sublayer_costs(N):
    """With N = d_ff, all-attention and the transformer have the same number of parameters."""
    assert n_params(model("all_attention", 20, 10, LastStep(64), n_persistent=N)) == n_params(
        model("transformer", 20, 10, LastStep(64), d_ff=N)
    )
    assert n_params(model("all_attention", 20, 10, LastStep(64), n_persistent=N)) != n_params(
        model("transformer", 20, 10, LastStep(64), d_ff=N + 1)
    )


def test_context_and_persistent_slots_share_one_softmax():
    """Values of ones everywhere give weights that sum to 1 per query and head; ones on the
    persistent values only give the persistent slots' share of that single softmax."""
    torch.manual_seed(0)
    B, H, T, N, d = 2, 3, 5, 4, 8
    q, k = torch.randn(B, H, T, d), torch.randn(B, H, T, d)
    mem_k = torch.randn(H, N, d)
    bias = torch.randn(B, H, T, T).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    ones, zeros = torch.ones(B, H, T, d), torch.zeros(B, H, T, d)
    total = attend(q, k, ones, bias, mem_k, torch.ones(H, N, d))
    torch.testing.assert_close(total, torch.ones_like(total))
    persistent = attend(q, k, zeros, bias, mem_k, torch.ones(H, N, d))[..., 0]
    context = torch.exp(((q @ k.transpose(-1, -2)) + bias) / math.sqrt(d)).sum(-1)
    slots = torch.exp(torch.einsum("bhtd,hnd->bhtn", q, mem_k) / math.sqrt(d)).sum(-1)
    torch.testing.assert_close(persistent, slots / (context + slots))
    assert persistent.min() > 0 and persistent.max() < 1


def direct_attention(m: SelfAttention, x: torch.Tensor) -> torch.Tensor:
    """SelfAttention written as a loop over queries and heads: scores q_i·(k_j + p_{i-j}) on
    steps i - span < j <= i and q_i·m^k_n on the persistent slots, one softmax."""
    B, T, D = x.shape
    H, S, d = m.n_heads, m.span, D // m.n_heads
    q, k, v = (p.view(B, T, H, d) for p in m.qkv(x).chunk(3, -1))
    mem_k, mem_v = m.persistent()
    out = torch.zeros(B, T, H, d, dtype=x.dtype)
    for i in range(T):
        for h in range(H):
            steps = range(max(0, i - S + 1), i + 1)
            scores = [(q[:, i, h] * (k[:, j, h] + m.pos[h, i - j])).sum(-1) for j in steps]
            scores += [q[:, i, h] @ mem_k[h, n] for n in range(mem_k.shape[1])]
            values = [v[:, j, h] for j in steps] + [
                mem_v[h, n].expand(B, d) for n in range(mem_k.shape[1])
            ]
            a = torch.softmax(torch.stack(scores, -1) / math.sqrt(d), -1)
            out[:, i, h] = torch.einsum("bj,jbd->bd", a, torch.stack(values))
    return m.out(out.flatten(2))


@pytest.mark.parametrize("span, N, T", [(3, 2, 8), (5, 0, 12), (20, 3, 7)])
def test_attention_equals_the_direct_sum_with_gradients(span, N, T):
    """Blocks of queries (span < T), the span limit, positions and persistent slots."""
    torch.manual_seed(0)
    m = SelfAttention(8, 2, span, N).double()
    x = torch.randn(3, T, 8, dtype=torch.float64)
    y, expected = m(x), direct_attention(m, x)
    torch.testing.assert_close(y, expected)
    params = [p for p in m.parameters() if p.numel()]
    grads = torch.autograd.grad(y.square().sum(), params)
    for g, e in zip(grads, torch.autograd.grad(expected.square().sum(), params), strict=True):
        torch.testing.assert_close(g, e)
    assert all(g.abs().sum() > 0 for g in grads)  # positions and persistent slots included


def encoders(F: int = 6):
    small = dict(dim=16, heads=2, layers=2, attn_span=8, hidden=8)
    pre = dict(small, norm="pre")
    return {
        "transformer": model("transformer", F, 3, LastStep(16), d_ff=8, **small).encoder,
        "all_attention": model(
            "all_attention", F, 3, LastStep(16), n_persistent=4, **small
        ).encoder,
        "feedback": model("feedback", F, 3, LastStep(16), d_ff=8, **small).encoder,
        "transformer norm=pre": model("transformer", F, 3, LastStep(16), d_ff=8, **pre).encoder,
        "all_attention norm=pre": model(
            "all_attention", F, 3, LastStep(16), n_persistent=4, **pre
        ).encoder,
    }


def test_persistent_slots_are_reparametrised_to_unit_scale():
    """Stored as N(0, 1/d_h) keys and N(0, 1/N) values, used at unit variance (Sukhbaatar et
    al. 2019b, §4)."""
    torch.manual_seed(0)
    m = SelfAttention(256, 4, 8, n_persistent=400)  # d_h = 64
    keys, values = m.persistent()
    assert m.mem_k.std().item() == pytest.approx(1 / 8, rel=0.02)
    assert m.mem_v.std().item() == pytest.approx(1 / 20, rel=0.02)
    assert keys.std().item() == pytest.approx(1, rel=0.02)
    assert values.std().item() == pytest.approx(1, rel=0.02)


def test_post_norm_layers_end_in_a_layer_norm_and_pre_norm_ones_do_not():
    """Post-norm (the default): every layer's output is normalised per step,
    h <- LN(h + f(h)); pre-norm leaves the residual stream unnormalised until the final LN."""
    torch.manual_seed(0)
    x = torch.randn(3, 10, 16) * 5
    for name in ("transformer", "all_attention"):
        post, pre = encoders()[name].layers[0], encoders()[f"{name} norm=pre"].layers[0]
        h, h_pre = post(x), pre(x)
        torch.testing.assert_close(h.mean(-1), torch.zeros(3, 10), atol=1e-5, rtol=0)
        torch.testing.assert_close(h.var(-1, unbiased=False), torch.ones(3, 10), atol=1e-3, rtol=0)
        assert (h_pre.var(-1, unbiased=False) - 1).abs().min() > 1  # the residual keeps x's scale


@pytest.mark.parametrize("name", list(encoders()))
def test_no_step_sees_its_future(name):
    """Changing step s changes no state before s (exactly) and the states from s on."""
    torch.manual_seed(0)
    encoder = encoders()[name]
    x = torch.randn(3, 20, 6)
    for s in (0, 7, 13, 19):
        changed = x.clone()
        changed[:, s] += 1.0
        h, h_changed = encoder(x), encoder(changed)
        assert torch.equal(h[:, :s], h_changed[:, :s])
        assert (h[:, s] - h_changed[:, s]).abs().max() > 1e-4


def test_feedback_memory_starts_as_the_mean_of_all_layers():
    torch.manual_seed(0)
    encoder = encoders()["feedback"]
    assert torch.equal(encoder.layer_weights, torch.zeros(3))
    states = [torch.randn(4, 16) for _ in range(3)]
    torch.testing.assert_close(encoder.memory(states), torch.stack(states).mean(0))


def first_layer_outputs(encoder: FeedbackEncoder, x: torch.Tensor) -> torch.Tensor:
    """x_t^1 for every step t, (B, T, D), read with a hook on the first layer."""
    seen = []
    hook = encoder.layers[0].register_forward_hook(lambda m, args, out: seen.append(out))
    encoder(x)
    hook.remove()
    return torch.stack(seen, dim=1)


def test_the_first_layer_of_step_t_reads_the_top_layer_of_earlier_steps():
    """A change to the top layer's feed-forward weights cannot reach the first layer of step t
    except through the memories of steps < t: the first layer's output at step 0 (no memory yet)
    stays the same, at every later step it changes. A memory of the embedding alone, or of the
    first layer, would leave all of them unchanged."""
    torch.manual_seed(0)
    encoder = encoders()["feedback"]
    x = torch.randn(3, 10, 6)
    before = first_layer_outputs(encoder, x)
    with torch.no_grad():  # not a constant: the LayerNorm of the memory would remove it
        encoder.layers[-1].ff[-1].weight.add_(torch.randn(16, 8))
    after = first_layer_outputs(encoder, x)
    assert torch.equal(before[:, 0], after[:, 0])
    assert ((before[:, 1:] - after[:, 1:]).abs().amax(dim=(0, 2)) > 1e-4).all()


class StackedWindow:
    """The same windows as SlidingWindow from a list of slots and torch.stack (plain autograd)."""

    def __init__(self, batch, n_heads, steps, span, d_h, like):
        self.span, self.slots = span, [like.new_zeros(batch, n_heads, d_h)] * span

    def window(self, t, written):
        if written is not None:
            self.slots.append(written)
        return torch.stack(self.slots[t : t + self.span], dim=2)


@pytest.mark.parametrize("share_kv", [True, False])
@pytest.mark.parametrize("span", [3, 30])
def test_in_place_buffers_give_the_gradients_of_plain_autograd(share_kv, span):
    torch.manual_seed(0)
    encoder = FeedbackEncoder(5, 8, 2, 3, span, 6, share_kv).double()
    with torch.no_grad():
        encoder.layer_weights.normal_()  # every layer's weight in the memory differs
    x = torch.randn(4, 11, 5, dtype=torch.float64)
    h, expected = encoder(x), encoder(x, window=StackedWindow)
    torch.testing.assert_close(h, expected)
    w, params = torch.randn_like(h), list(encoder.parameters())
    grads = torch.autograd.grad((h * w).sum(), params)
    for g, e in zip(grads, torch.autograd.grad((expected * w).sum(), params), strict=True):
        torch.testing.assert_close(g, e)
    assert all(g.abs().sum() > 0 for g in grads)


def test_gradients_reach_persistent_slots_positions_and_layer_weights():
    torch.manual_seed(0)
    models = encoders()
    x = torch.randn(2, 12, 6)
    for encoder in models.values():
        encoder(x).square().sum().backward()
    attn = models["all_attention"].layers[0].attn
    for p in (attn.mem_k, attn.mem_v, attn.pos, models["feedback"].layer_weights):
        assert p.grad is not None and p.grad.abs().sum() > 0


@pytest.mark.parametrize("name", OWN)
@pytest.mark.parametrize("readout", [LastStep, AttentionPooling, MeanPooling])
def test_padding_never_changes_the_output(name, readout):
    """Real steps then any padding: the output equals that of the unpadded sequence."""
    torch.manual_seed(0)
    net = model(name, 8, 4, readout(16, mask_padding=True), dim=16, attn_span=16)
    x, _, mask = generate(generator_of("temporal_order"), np.random.RandomState(0), 30, 4)
    x, mask = torch.from_numpy(x).float(), torch.from_numpy(mask)
    padded = torch.cat([x, torch.randn(4, 9, 8)], dim=1)  # garbage on 9 more padded steps
    padded_mask = torch.cat([mask, torch.zeros(4, 9, dtype=torch.bool)], dim=1)
    torch.testing.assert_close(net(padded, padded_mask), net(x, mask))
    one = [net(x[i : i + 1, : int(mask[i].sum())]) for i in range(4)]  # each alone, no padding
    torch.testing.assert_close(torch.cat(one), net(x, mask))


@pytest.mark.parametrize("name", OWN)
def test_heads_must_divide_the_width(name):
    with pytest.raises(ValueError, match="heads=3 must divide dim=16"):
        model(name, 8, 4, LastStep(16), dim=16, heads=3)
