"""The model shape of the MAD protocol (Poli et al. 2024, "Mechanistic Design and Scaling of
Hybrid Architectures", arXiv 2403.17844, §3; athms/mad-lab at 0f49a45: mad/model/
language_model.py, auto_encoder.py, layers/mlp.py, and the default `--layers` of train.py and
benchmark.py, [mixer, SwiGLU] x 2 at width 128), around any sequence mixer:

    u_0 = E[x]                                   the framework's token embedding (models/build.py)
    u_l = u_{l-1} + layer_l(Norm(u_{l-1}))       layer_1..4 = mixer, SwiGLU, mixer, SwiGLU
    h   = u_L                                    (B, T, D)
    logits = W Norm(c) + b                       model.head=unembed, mad-lab's `unembed`

with c = h at every step (pool=per_step: mad-lab's LanguageModel) or, for compression, the
bottleneck decoder below (pool=mad_decoder: mad-lab's AutoEncoder). Norm is RMSNorm (eps 1e-5),
LanguageModel's default and the one benchmark.py builds (train.py's MADModelConfig passes
nn.LayerNorm: `norm: layer`). SwiGLU (layers/mlp.py): W_3 (SiLU(W_1 u) ⊙ W_2 u), no biases,
inner width 16 ceil(int(8 D / 3) / 16), 352 at D = 128.

The mixer is a class by import path (`mixer`), built as `Mixer(dim, **own keys)`, u (B, T, D) ->
(B, T, D), causal; its own keys are the model section's other keys, checked against its
`__init__` as an encoder's are (plugins/keys.py), and it gets `impl` if it names it. The built-in
models' mixing layers are such classes (MambaMixer, HyenaMixer, GLAMixer, DeltaNetMixer,
S4DMixer) and so is `RotaryAttention` below, mad-lab's mh-attention. With a step form in every
mixer (models/state.py) the stack has one: its state is the mixers' (SwiGLU and the norms act on
one step).

`init: mad` (models/init.py) is LanguageModel's `_init_weights`: the embedding N(0, 0.02^2),
every linear layer's bias 0 (but those marked `_no_reinit`, Mamba's Δ bias), weights PyTorch's.
"""

import math
from typing import Any, Literal

import torch
from pydantic import PositiveInt
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.mamba import NO_REINIT
from longterm.models.state import has_step_form
from longterm.plugins.keys import plugin_keys
from longterm.plugins.resolve import PluginError, resolve

EPS = 1e-5  # mad-lab's RMSNorm (mad/model/layers/ops/norm/rmsnorm.py)


def make_norm(kind: str, dim: int) -> nn.Module:
    return nn.RMSNorm(dim, eps=EPS) if kind == "rms" else nn.LayerNorm(dim)


class SwiGLU(nn.Module):
    """u (..., D) -> W_3 (SiLU(W_1 u) ⊙ W_2 u), mad-lab's SwiGLU (no biases, multiple_of 16)."""

    def __init__(self, dim: int, multiple_of: int = 16):
        super().__init__()
        inner = multiple_of * -(-int(2 * dim * 4 / 3) // multiple_of)
        self.w1, self.w2 = nn.Linear(dim, inner, bias=False), nn.Linear(dim, inner, bias=False)
        self.w3 = nn.Linear(inner, dim, bias=False)

    def forward(self, u: Tensor) -> Tensor:
        return self.w3(F.silu(self.w1(u)) * self.w2(u))

    def step(self, u_t: Tensor, state: Any) -> tuple[Tensor, tuple]:
        return self(u_t), ()

    def state_size(self, length: int) -> int:
        return 0


def rotate(x: Tensor, positions: Tensor, rotary_dim: int, base: float) -> Tensor:
    """Rotary position embedding (GPT-NeoX's, flash_attn's rotary_emb_interleaved=False) on the
    first rotary_dim features of x (..., T, d) at `positions` (T,): the pairs (i, i + r/2)
    turned by the angle t base^(-2i/r)."""
    half = rotary_dim // 2
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=x.dtype) * 2 / rotary_dim)
    angle = positions.to(x.dtype)[:, None] * inv_freq  # (T, r/2)
    cos, sin = angle.cos(), angle.sin()
    x1, x2, rest = x[..., :half], x[..., half:rotary_dim], x[..., rotary_dim:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


class RotaryAttention(nn.Module):
    """u (B, T, D) -> (B, T, D): causal softmax attention of D / head_dim heads with rotary
    positions on the first `rotary_dim` features of each head's queries and keys, mad-lab's
    mh-attention (configs/layers/mh-attention.yml: 16 heads at D = 128, so of width 8,
    rotary_emb_dim 8, flash_attn's MHA with biased Wqkv and out_proj). The heads are given by
    their width, so that the conf file's keys hold at every width D that head_dim divides (16
    heads at mad-lab's 128, 8 at 64). Step form: the rotated keys and the values of every past
    step, 2 D t numbers after t steps."""

    def __init__(self, dim: int, head_dim: PositiveInt = 8, rotary_dim: int = 8,
                 rotary_base: float = 10_000.0):  # fmt: skip
        super().__init__()
        if dim % head_dim or rotary_dim % 2 or rotary_dim > head_dim:
            raise ValueError(
                f"head_dim={head_dim} must divide dim={dim}, and rotary_dim={rotary_dim} be even "
                f"and at most head_dim"
            )
        self.heads, self.rotary_dim, self.rotary_base = dim // head_dim, rotary_dim, rotary_base
        self.Wqkv = nn.Linear(dim, 3 * dim)  # noqa: N815  flash_attn's name
        self.out_proj = nn.Linear(dim, dim)

    def qkv(self, u: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, T, D) -> q, k rotated, v: (B, H, T, d)."""
        q, k, v = (
            t.unflatten(-1, (self.heads, -1)).transpose(1, 2) for t in self.Wqkv(u).chunk(3, -1)
        )
        turn = lambda x: rotate(x, positions, self.rotary_dim, self.rotary_base)  # noqa: E731
        return turn(q), turn(k), v

    def forward(self, u: Tensor) -> Tensor:
        q, k, v = self.qkv(u, torch.arange(u.shape[1], device=u.device))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(y.transpose(1, 2).flatten(2))

    def step(self, u_t: Tensor, state: tuple[int, Tensor, Tensor] | None):
        """u_t (B, D), (steps so far, keys, values (B, H, t, d)) -> y_t (B, D), the new state."""
        t = 0 if state is None else state[0]
        q, k, v = self.qkv(u_t[:, None], torch.tensor([t], device=u_t.device))
        if state is not None:
            k, v = torch.cat([state[1], k], dim=2), torch.cat([state[2], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v)  # every key is in the past
        return self.out_proj(y.flatten(1)), (t + 1, k, v)

    def state_size(self, length: int) -> int:
        return 2 * self.out_proj.in_features * length


class Residual(nn.Module):
    """u + layer(Norm(u)), mad-lab's `x = x + layer(x)` around nn.Sequential(norm, layer)."""

    def __init__(self, norm: nn.Module, layer: nn.Module):
        super().__init__()
        self.norm, self.layer = norm, layer

    def forward(self, u: Tensor) -> Tensor:
        return u + self.layer(self.norm(u))

    def step(self, u_t: Tensor, state: Any) -> tuple[Tensor, Any]:
        y, state = self.layer.step(self.norm(u_t), state)
        return u_t + y, state

    def state_size(self, length: int) -> int:
        return self.layer.state_size(length)


def mixer_class(path: str) -> type:
    cls = resolve(path, "model.mixer")
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise PluginError(f"model.mixer={path} is invalid: {cls!r} is not an nn.Module class")
    return cls


class MAD(nn.Module):
    """x (B, T, F) or embedded tokens (B, T, D) -> h (B, T, D): `layers` x [mixer, SwiGLU],
    each pre-norm residual (the module docstring); `channel_mixer: none` leaves SwiGLU out."""

    causal = True  # the mixers are causal (a mixer of one's own must be); the rest acts per step

    def __init__(
        self,
        in_features: int,
        dim: int,
        mixer: str,
        layers: PositiveInt = 2,
        norm: Literal["rms", "layer"] = "rms",
        channel_mixer: Literal["swiglu", "none"] = "swiglu",
        impl: str = "auto",
        init: str = "mad",
        **mixer_keys: Any,
    ):
        super().__init__()
        cls = mixer_class(mixer)
        section = {"name": f"the mixer {cls.__name__}", **mixer_keys}
        keys = plugin_keys(cls, section, ("name",), "model", ("dim",), ("impl",), {"impl": impl})
        keys.pop("name", None)
        self.embed = nn.Identity() if in_features == dim else nn.Linear(in_features, dim)
        blocks: list[nn.Module] = []
        for _ in range(layers):
            blocks.append(Residual(make_norm(norm, dim), cls(dim, **keys)))
            if channel_mixer == "swiglu":
                blocks.append(Residual(make_norm(norm, dim), SwiGLU(dim)))
        self.blocks = nn.ModuleList(blocks)
        if init == "mad":
            zero_biases_(self)
        if not all(has_step_form(b.layer) for b in self.blocks):  # no step form of its own
            self.step = self.state_size = None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        u = self.embed(x)
        for block in self.blocks:
            u = block(u)
        return u

    def step(self, x_t: Tensor, state: list[Any] | None) -> tuple[Tensor, list[Any]]:
        """x_t (B, F), the blocks' states (None before the first step) -> h_t (B, D), states."""
        u, new = self.embed(x_t), []
        for block, s in zip(self.blocks, state or [None] * len(self.blocks), strict=True):
            u, s = block.step(u, s)
            new.append(s)
        return u, new

    def state_size(self, length: int) -> int:
        return sum(block.state_size(length) for block in self.blocks)


def zero_biases_(module: nn.Module) -> nn.Module:
    """Every linear layer's bias 0 but those marked `_no_reinit` (LanguageModel._init_weights)."""
    for m in module.modules():
        if isinstance(m, nn.Linear) and m.bias is not None and not getattr(m.bias, NO_REINIT, 0):
            nn.init.zeros_(m.bias)
    return module


def sincos_positions(length: int, dim: int, device: torch.device | None = None) -> Tensor:
    """mad-lab's posemb_sincos_1d (fairseq's): (length, dim), sin then cos of t e^(-i ln(1e4) /
    (dim/2 - 1)), i < dim/2, a zero column for an odd dim."""
    half = dim // 2
    freq = torch.exp(torch.arange(half, device=device) * -(math.log(10000) / (half - 1)))
    angle = torch.arange(length, device=device)[:, None] * freq[None]
    out = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    return F.pad(out, (0, dim % 2))


class BottleneckDecoder(nn.Module):
    """h (B, T, D) -> c (B, T, D): mad-lab's AutoEncoder decoder (auto_encoder.py, global_pool
    `last`): the last real step's state e, then per step t (e + P_t) through
    Norm, Linear, GELU, Norm, Linear, GELU, with P mad-lab's fixed sin-cos positions. Every c_t
    reads the whole sequence (it is no causal readout: for MAD's compression, whose targets are
    the inputs); its linear layers N(0, 0.02^2), biases 0, as the AutoEncoder's."""

    per_step = True  # c (B, T, D): the head gives one output per step
    causal = False  # every c_t reads the last state, so no step form either

    def __init__(self, dim: int, mask_padding: bool = True, norm: Literal["rms", "layer"] = "rms"):
        super().__init__()
        self.mask_padding = mask_padding
        layers = [make_norm(norm, dim), nn.Linear(dim, dim), nn.GELU()]
        self.decoder = nn.Sequential(*layers, make_norm(norm, dim), nn.Linear(dim, dim), nn.GELU())
        for m in self.decoder:
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        B, T, D = h.shape
        last = torch.full((B,), T - 1, device=h.device)
        if mask is not None and self.mask_padding:
            last = mask.sum(1) - 1
        e = h[torch.arange(B, device=h.device), last]  # (B, D)
        return self.decoder(e[:, None] + sincos_positions(T, D, h.device).to(h.dtype))
