"""zoology's language model of its Figure 2 (Arora et al. 2023, "Zoology: Measuring and Improving
Recall in Efficient Language Models", arXiv 2312.04927, §3-4; HazyResearch/zoology d88d6f5,
zoology/model.py `LanguageModel`, the configs of experiments/iclr24_zoology_figure2), equal to
its code (tests/test_zoology_models.py holds the logits to zoology's to 1e-10 in float64).

    u^0 = E[x] (+ P[0..T-1])          the framework's token embedding (models/build.py), and for
                                      attention learned absolute positions P (max_positions, D)
    blocks, residual stream r (TransformerBlock, with the Identity state mixer):
        r = drop_l(h) + r             drop_0: embed_dropout on u^0; then resid_dropout; r = 0 first
        r = drop(mixer(LN_1(r))) + r
        h = LN_2(r)                   (the norm the state mixer would read: added in again next)
    Mamba's blocks (zoology/mixers/mamba.py, MambaBlock): r = h + r;  h = mixer(RMSNorm(r))
    out = LN_f(drop(h) + r)           (B, T, D)
    logits = out E^T                  model.head=tied: zoology's lm_head, no bias

The encoders here are the blocks and LN_f after the embedding (and P); `arch=zoology_*` puts the
framework's embedding before them and the tied head after (pool=per_step). A one-hot task
(in_features F != D) enters by W_in x without bias, the word embedding of one-hot rows.
Mixers: MHA and Hyena (models/zoology_mixers.py), BaseConv (models/base_conv.py), Mamba
(models/mamba.py's block, dt_rank ceil(D / 16)). `init: zoology` is zoology's _init_weights
(models/init.py); dropout acts while training, as zoology's.

`from_zoology(meta, state_dict)` builds the model of a zoology config and loads its state dict.
"""

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import torch
from pydantic import NonNegativeFloat, PositiveInt
from torch import Tensor, nn

from longterm.models.base_conv import BaseConvMixer
from longterm.models.bounded import longer_than, within
from longterm.models.head import TiedHead
from longterm.models.init import init_linear_, zoology_init_
from longterm.models.mamba import MambaMixer
from longterm.models.readouts import PerStep
from longterm.models.sequence import SequenceModel
from longterm.models.zoology_mixers import MHA, Hyena

EPS = 1e-5  # zoology's layer_norm_epsilon and its blocks' LayerNorm and RMSNorm


class TransformerBlock(nn.Module):
    """zoology's TransformerBlock with the Identity state mixer: (h, r) -> (h, r), (B, T, D)."""

    def __init__(self, mixer: nn.Module, dim: int, dropout_in: float, dropout_out: float):
        super().__init__()
        self.sequence_mixer = mixer
        self.dropout1, self.dropout2 = nn.Dropout(dropout_in), nn.Dropout(dropout_out)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, h: Tensor, r: Tensor | None) -> tuple[Tensor, Tensor]:
        r = self.dropout1(h) if r is None else self.dropout1(h) + r
        r = self.dropout2(self.sequence_mixer(self.norm1(r))) + r
        return self.norm2(r), r

    def step(self, h: Tensor, r: Tensor | None, state: Any) -> tuple[Tensor, Tensor, Any]:
        r = self.dropout1(h) if r is None else self.dropout1(h) + r
        y, state = self.sequence_mixer.step(self.norm1(r), state)
        r = self.dropout2(y) + r
        return self.norm2(r), r, state

    def state_size(self, length: int) -> int:
        return self.sequence_mixer.state_size(length)


class MambaBlock(nn.Module):
    """zoology's MambaBlock: r = h + r, h = mixer(RMSNorm(r)):  (h, r) -> (h, r), (B, T, D)."""

    def __init__(self, mixer: nn.Module, dim: int):
        super().__init__()
        self.mixer, self.norm = mixer, nn.RMSNorm(dim, eps=EPS)

    def forward(self, h: Tensor, r: Tensor | None) -> tuple[Tensor, Tensor]:
        r = h if r is None else h + r
        return self.mixer(self.norm(r)), r

    def step(self, h: Tensor, r: Tensor | None, state: Any) -> tuple[Tensor, Tensor, Any]:
        r = h if r is None else h + r
        y, state = self.mixer.step(self.norm(r), state)
        return y, r, state

    def state_size(self, length: int) -> int:
        return self.mixer.state_size(length)


class ZoologyStack(nn.Module):
    """x (B, T, F) or embedded tokens (B, T, D) -> h (B, T, D): (positions,) the blocks, LN_f
    (the module docstring). `max_positions`: the longest sequence it is defined for (None: any),
    the rows of P where `positions`."""

    causal = True  # every mixer is causal; the rest acts on one step

    def __init__(
        self,
        in_features: int,
        dim: int,
        blocks: list[nn.Module],
        max_positions: int | None,
        positions: bool,
        resid_dropout: float,
        init: str,
    ):
        super().__init__()
        self.embed = nn.Identity() if in_features == dim else nn.Linear(in_features, dim, False)
        self.positions = nn.Embedding(max_positions, dim) if positions else None
        self.layers = nn.ModuleList(blocks)
        self.drop_f, self.ln_f = nn.Dropout(resid_dropout), nn.LayerNorm(dim, eps=EPS)
        self.max_positions = max_positions
        if init == "zoology":
            zoology_init_(self, len(blocks))
        elif isinstance(self.embed, nn.Linear):
            init_linear_(self.embed, init)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return within(self.run, x, mask, self.max_positions)

    def run(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        h, r = self.embed(x), None
        if self.positions is not None:
            h = h + self.positions.weight[: x.shape[1]]
        for block in self.layers:
            h, r = block(h, r)
        return self.ln_f(self.drop_f(h) + r)

    def step(self, x_t: Tensor, state: tuple[int, list] | None) -> tuple[Tensor, tuple]:
        """x_t (B, F), (steps so far, the mixers' states) -> h_t (B, D), the new state."""
        t, states = (0, [None] * len(self.layers)) if state is None else state
        if self.max_positions is not None and t >= self.max_positions:
            raise ValueError(longer_than(t + 1, self.max_positions))
        h, r, new = self.embed(x_t), None, []
        if self.positions is not None:
            h = h + self.positions.weight[t]
        for block, s in zip(self.layers, states, strict=True):
            h, r, s = block.step(h, r, s)
            new.append(s)
        return self.ln_f(self.drop_f(h) + r), (t + 1, new)

    def state_size(self, length: int) -> int:
        return sum(block.state_size(length) for block in self.layers)


def transformer_blocks(
    make: Callable[[int], nn.Module], dim: int, layers: int, embed: float, resid: float
) -> list[nn.Module]:
    """`layers` TransformerBlocks around make(layer index); the first's input dropout is
    embed_dropout, every other's resid_dropout, as zoology's."""
    return [
        TransformerBlock(make(i), dim, embed if i == 0 else resid, resid) for i in range(layers)
    ]


class ZoologyAttention(ZoologyStack):
    """zoology's attention model (arch=zoology_attention): learned positions, `layers` blocks of
    MHA with `heads` heads and attention dropout `attn_dropout`."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: PositiveInt = 2,
        heads: PositiveInt = 1,
        max_positions: PositiveInt = 512,
        attn_dropout: NonNegativeFloat = 0.1,
        embed_dropout: NonNegativeFloat = 0.1,
        resid_dropout: NonNegativeFloat = 0.0,
        init: str = "zoology",
    ):
        mha = lambda i: MHA(dim, heads, attn_dropout)  # noqa: E731
        blocks = transformer_blocks(mha, dim, layers, embed_dropout, resid_dropout)
        super().__init__(in_features, dim, blocks, max_positions, True, resid_dropout, init)


class ZoologyHyena(ZoologyStack):
    """zoology's Hyena model (arch=zoology_hyena): no positions, `layers` blocks of Hyena with
    filters of `max_positions` steps (zoology's l_max)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: PositiveInt = 2,
        max_positions: PositiveInt = 512,
        embed_dropout: NonNegativeFloat = 0.1,
        resid_dropout: NonNegativeFloat = 0.0,
        init: str = "zoology",
    ):
        hyena = lambda i: Hyena(dim, max_positions)  # noqa: E731
        blocks = transformer_blocks(hyena, dim, layers, embed_dropout, resid_dropout)
        super().__init__(in_features, dim, blocks, max_positions, False, resid_dropout, init)


class ZoologyBaseConv(ZoologyStack):
    """zoology's BaseConv model (arch=zoology_base_conv): no positions, a block per entry of
    `kernels` (k > 0: a short convolution of k taps; -1: the implicit long convolution of
    `max_positions` steps, zoology's l_max)."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        kernels: list[int] = [3, -1],  # noqa: B006  read, never changed
        max_positions: PositiveInt = 512,
        embed_dropout: NonNegativeFloat = 0.1,
        resid_dropout: NonNegativeFloat = 0.0,
        init: str = "zoology",
    ):
        if not kernels:
            raise ValueError("kernels=[] is invalid: give one entry per layer")
        conv = lambda i: BaseConvMixer(dim, kernels[i], max_positions)  # noqa: E731
        blocks = transformer_blocks(conv, dim, len(kernels), embed_dropout, resid_dropout)
        super().__init__(in_features, dim, blocks, max_positions, False, resid_dropout, init)


class ZoologyMamba(ZoologyStack):
    """zoology's Mamba model (arch=zoology_mamba): `layers` MambaBlocks (RMSNorm, then Mamba's
    block: d_state, d_conv, expand; dt_rank `auto` = ceil(D / 16), Mamba's rule), any length."""

    def __init__(
        self,
        in_features: int,
        dim: int,
        layers: PositiveInt = 2,
        d_state: PositiveInt = 16,
        d_conv: PositiveInt = 4,
        expand: PositiveInt = 2,
        dt_rank: PositiveInt | Literal["auto"] = "auto",
        resid_dropout: NonNegativeFloat = 0.0,
        impl: str = "auto",
        init: str = "zoology",
    ):
        rank = math.ceil(dim / 16) if dt_rank == "auto" else dt_rank
        blocks = [
            MambaBlock(MambaMixer(dim, d_state, d_conv, expand, rank, impl), dim)
            for _ in range(layers)
        ]
        super().__init__(in_features, dim, blocks, None, False, resid_dropout, init)


# zoology's import path of a mixer -> (the encoder, its keys from zoology's ModelConfig and the
# mixer's kwargs)
Keys = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
MIXERS: dict[str, tuple[type[ZoologyStack], Keys]] = {
    "zoology.mixers.attention.MHA": (
        ZoologyAttention,
        lambda m, kw: {
            "heads": kw.get("num_heads", 1),
            "attn_dropout": kw.get("dropout", 0.0),
            "max_positions": m["max_position_embeddings"],
        },
    ),
    "zoology.mixers.hyena.Hyena": (ZoologyHyena, lambda m, kw: {"max_positions": kw["l_max"]}),
    "zoology.mixers.base_conv.BaseConv": (
        ZoologyBaseConv,
        lambda m, kw: {
            "max_positions": kw["l_max"],
            "kernels": kernel_list(kw.get("kernel_size", 3), m["n_layers"]),
        },
    ),
    "zoology.mixers.mamba.Mamba": (ZoologyMamba, lambda m, kw: dict(kw)),
}
# zoology's state-dict names -> this model's (after `backbone.` is dropped)
RENAMES = (
    ("embeddings.word_embeddings.", "embedding."),
    ("embeddings.position_embeddings.", "encoder.positions."),
    ("lm_head.", "head."),
    ("ln_f.", "encoder.ln_f."),
    ("layers.", "encoder.layers."),
    ("filter_fn.pos_emb.", "filter_fn."),
    ("filter_fn.modulation.", "filter_fn."),
    ("conv.conv.", "conv."),
    ("conv.pos_emb.", "conv."),
    ("mixer.conv1d.", "mixer.conv."),
)


def kernel_list(kernel_size: int | list[int], layers: int) -> list[int]:
    """zoology's BaseConv `kernel_size`: one for every layer, or a list read at each layer's
    index."""
    if isinstance(kernel_size, int):
        return [kernel_size] * layers
    if len(kernel_size) < layers:
        raise ValueError(f"kernel_size={kernel_size} has fewer entries than n_layers={layers}")
    return list(kernel_size[:layers])


def our_name(name: str) -> str:
    name = name.removeprefix("backbone.")
    for theirs, ours in RENAMES:
        name = name.replace(theirs, ours, 1) if theirs in name else name
    return name


def from_zoology(meta: Mapping[str, Any] | str, state_dict: Mapping[str, Any]) -> SequenceModel:
    """The model of a zoology config, token ids (B, T) -> logits (B, T, V), with zoology's
    weights, in eval mode and in the state dict's dtype. `meta`: the config's keys (or their
    JSON): `sequence_mixer` (zoology's import path), `mixer_kwargs`, `d_model`, `n_layers`,
    `max_position_embeddings`, `vocab_size`, `state_mixer` (Identity), `tied_lm_head` (true),
    `layer_norm_epsilon` (1e-5), and `embed_dropout`, `resid_dropout` where not zoology's
    defaults (0.1, 0.0); `state_dict`: zoology's `state_dict()` by its names, tensors or arrays.

        import numpy as np, json
        z = np.load("zoology_lm_reference.npz")
        sd = {k[3:]: z[k] for k in z.files if k.startswith("sd/")}
        net = from_zoology(json.loads(str(z["meta"])), sd)
        logits = net(torch.from_numpy(z["input_ids"]))        # (B, T, V)
    """
    meta = json.loads(meta) if isinstance(meta, str) else dict(meta)
    path = meta["sequence_mixer"]
    if path not in MIXERS:
        raise ValueError(
            f"sequence_mixer={path!r} has no equal here: choose one of {', '.join(MIXERS)}"
        )
    if str(meta.get("state_mixer", "Identity")).rsplit(".", 1)[-1] != "Identity":
        raise ValueError(f"state_mixer={meta['state_mixer']!r}: only Identity (Figure 2's)")
    if not meta.get("tied_lm_head", True) or meta.get("layer_norm_epsilon", EPS) != EPS:
        raise ValueError("only zoology's tied lm_head and layer_norm_epsilon 1e-5 are built here")
    cls, keys = MIXERS[path]
    dim, vocab = meta["d_model"], meta["vocab_size"]
    own = keys(meta, dict(meta.get("mixer_kwargs") or {}))
    if cls is not ZoologyBaseConv:
        own["layers"] = meta["n_layers"]
    if cls is not ZoologyMamba:
        own["embed_dropout"] = meta.get("embed_dropout", 0.1)
    encoder = cls(dim, dim, resid_dropout=meta.get("resid_dropout", 0.0), **own)
    embedding = nn.Embedding(vocab, dim)
    net = SequenceModel(encoder, PerStep(dim), TiedHead(embedding), embedding)
    tensors = {our_name(k): torch.as_tensor(np.asarray(v)) for k, v in state_dict.items()}
    dtype = next(t.dtype for t in tensors.values() if t.is_floating_point())
    net.to(dtype).load_state_dict(tensors)
    return net.eval()
