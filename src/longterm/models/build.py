"""One constructor for every model (conf/model/*.yaml): the encoder its conf file names by import
path, the readout over time its pool's conf file names (conf/pool/*.yaml) and the head
`model.head` names (models/head.py): the paper's (§2.2), or logits tied to the token embedding.

    x (B, T, F) -> encoder: h (B, T, D) -> readout: c (B, D) -> head: y (B, out_features)

A task with token inputs (`inputs: tokens`, `vocab`) gives x (B, T) int64 ids: an
nn.Embedding(vocab, dim) comes first (PyTorch's N(0, 1) initialisation; N(0, 0.02^2) with
`init: zoology`), and the encoder reads its D features per step (tasks/inputs.py:
`encoder_in_features`).

The built-in encoders come in the way a user's does (longterm.plugins.resolve): `encoder` is an
import path (or the class), its own keys are the model section's other keys (attention models:
`heads`, `layers`, `attn_span`, and `d_ff`, `n_persistent`, `norm` or `share_kv`). The keys every
model has (`dim`, `hidden`, `negative_slope`, `init`, `impl`, `head`) are arguments; `init` applies
to the head, the token embedding and, where the encoder takes it, to its input projection (zoology's
models: to all their layers); recurrent and attention layers keep PyTorch's initialisation.
"""

from typing import Any

from torch import nn

from longterm.choices import (
    COMMON_MODEL_KEYS,
    COMMON_POOL_KEYS,
    built_impl,
    head_error,
    impl_error,
)
from longterm.models.feedforward import FusedSequenceModel
from longterm.models.head import MLPHead, TiedHead, Unembed
from longterm.models.init import init_embedding_
from longterm.models.sequence import SequenceModel
from longterm.plugins.keys import encoder_keys, readout_keys, takes_impl
from longterm.plugins.resolve import class_path, encoder_class, readout_class


def build_encoder(path: str | type, in_features: int, dim: int, **keys: Any) -> nn.Module:
    """The encoder at `path` (an import path or the class), x (B, T, F) -> h (B, T, D) with
    D = `dim`, from the model section's other `keys` (plugins/keys.py: encoder_keys picks its
    own)."""
    cls = encoder_class(path) if isinstance(path, str) else path
    return cls(in_features, dim, **encoder_keys(cls, keys, COMMON_MODEL_KEYS))


def build_readout(pool: dict[str, Any], dim: int, model: dict[str, Any] | None = None) -> nn.Module:
    """The readout a pool section names (`readout`: an import path or the class), h (B, T, D)
    -> c (B, D), or (B, T, D) for a per-step one, from its other keys (plugins/keys.py:
    readout_keys picks its own) and the model section's `init` where it takes it."""
    path = pool["readout"]
    cls = readout_class(path) if isinstance(path, str) else path
    keys = readout_keys(cls, pool, COMMON_POOL_KEYS, model or {})
    return cls(dim, pool["mask_padding"], **keys)


def encoder_path(encoder: str | type) -> str:
    return encoder if isinstance(encoder, str) else class_path(encoder)


def sequence_model(
    encoder: str | type,
    in_features: int,
    out_features: int,
    readout: nn.Module,
    dim: int,
    hidden: int = 100,
    negative_slope: float = 0.01,
    init: str = "paper",
    impl: str = "reference",
    name: str | None = None,
    input_vocab: int | None = None,
    head: str = "mlp",
    **own: Any,
) -> SequenceModel:
    """The model whose encoder `encoder` names, of width `dim`, then `readout` (built for width
    `dim`: build_readout) and the head: `mlp`, MLPHead(dim, hidden, out_features), `tied`,
    logits against the token embedding (out_features = input_vocab), or `unembed`, mad-lab's
    norm and linear layer. `name` labels it in
    messages.
    `input_vocab`: token inputs, x (B, T) ids embedded by nn.Embedding(input_vocab, dim) before
    the encoder, whose `in_features` must then be `dim`.

    `impl`: `reference` runs the modules as written; `fused` (the feedforward model's StepEncoder
    with the attention or mean pooling class, choices.PAPER_READOUTS) computes the same function
    as FusedSequenceModel, the encoder and the pooling in one streaming pass (models/fused.py),
    with the same parameters; `auto` is `fused` where fused can build the model and `reference`
    elsewhere (choices.built_impl), and off the CPU runs the fused pass with the fewest ops that
    fit memory (models/fused.py: plan). An encoder that takes `impl` itself (Mamba) is given it
    and picks its own implementation."""
    path, readout_path = encoder_path(encoder), class_path(type(readout))
    own_impl = takes_impl(encoder_class(path) if isinstance(encoder, str) else encoder)
    error = impl_error(path, name or path, impl, readout_path, type(readout).__name__, own_impl)
    if error:
        raise ValueError(error)
    if input_vocab is not None and in_features != dim:
        raise ValueError(f"token inputs: in_features={in_features} must be dim={dim}")
    inputs = "onehot" if input_vocab is None else "tokens"
    error = head_error(head, inputs, out_features, input_vocab)
    if error:
        raise ValueError(error)
    embedding = None
    if input_vocab is not None:
        embedding = init_embedding_(nn.Embedding(input_vocab, dim), init)
    shared = {"negative_slope": negative_slope, "init": init, "impl": impl, "name": name}
    enc = build_encoder(encoder, in_features, dim, **shared, **own)
    if head == "tied":
        out = TiedHead(embedding)
    elif head == "unembed":
        out = Unembed(dim, out_features, init)
    else:
        out = MLPHead(dim, hidden, out_features, negative_slope, init)
    if not own_impl and built_impl(path, impl, readout_path) == "fused":
        return FusedSequenceModel(enc, readout, out, impl, embedding)
    return SequenceModel(enc, readout, out, embedding)
