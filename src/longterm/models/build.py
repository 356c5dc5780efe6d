"""One constructor for every model (conf/model/*.yaml): the encoder that names the model, a
readout over time and the paper's head (§2.2).

    x (B, T, F) -> encoder: h (B, T, D) -> readout: c (B, D) -> MLPHead: y (B, out_features)

The keys every model has (`dim`, `hidden`, `negative_slope`, `init`, `impl`) are arguments; a
model's own keys (attention models: `heads`, `layers`, `attn_span`, and `d_ff`, `n_persistent`,
`norm` or `share_kv`) go to its encoder. `init` applies to the head and to the encoder's input
projection; recurrent and attention layers keep PyTorch's initialisation.
"""

from typing import Any

from torch import nn

from longterm.choices import MODELS, PER_STEP_MODELS, built_impl, impl_error
from longterm.models.feedback import FeedbackEncoder
from longterm.models.feedforward import FusedSequenceModel, StepEncoder
from longterm.models.head import MLPHead
from longterm.models.linear_memory import LinearMemory
from longterm.models.recurrent import RecurrentEncoder
from longterm.models.sequence import SequenceModel
from longterm.models.transformer import AllAttentionLayer, TransformerLayer, attention_stack


def encoder(
    name: str, in_features: int, dim: int, negative_slope: float, init: str, **own: Any
) -> nn.Module:
    """The encoder of model `name`, x (B, T, F) -> h (B, T, D), with D = `dim`."""
    if name in PER_STEP_MODELS and own:
        raise TypeError(f"model={name} has only the common keys, not {', '.join(own)}")
    if dim % own.get("heads", 1):
        raise ValueError(f"heads={own['heads']} must divide dim={dim}")
    match name:
        case "feedforward":
            return StepEncoder(in_features, dim, negative_slope, init)
        case "rnn":
            return RecurrentEncoder(nn.RNN(in_features, dim, batch_first=True))
        case "lstm":
            return RecurrentEncoder(nn.LSTM(in_features, dim, batch_first=True))
        case "linear_memory":
            return LinearMemory(in_features, dim, init)
        case "transformer":
            return attention_stack(TransformerLayer, in_features, dim, init, **own)
        case "all_attention":
            return attention_stack(AllAttentionLayer, in_features, dim, init, **own)
        case "feedback":
            return FeedbackEncoder(in_features, dim, init=init, **own)
    raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")


def sequence_model(
    name: str,
    in_features: int,
    out_features: int,
    readout: nn.Module,
    dim: int,
    hidden: int = 100,
    negative_slope: float = 0.01,
    init: str = "paper",
    impl: str = "reference",
    **own: Any,
) -> SequenceModel:
    """Model `name`: its encoder of width `dim`, then `readout` (a pooling.py module built for
    width `dim`) and MLPHead(dim, hidden, out_features).

    `impl`: `reference` runs the modules as written; `fused` (the feedforward model with attention
    or mean pooling) computes the same function as FusedSequenceModel, the encoder and the pooling
    in one streaming pass (models/fused.py), with the same parameters; `auto` is `fused` where
    fused can build the model and `reference` elsewhere (choices.built_impl), and off the CPU
    runs the fused pass with the fewest ops that fit memory (models/fused.py: plan)."""
    pool = getattr(readout, "name", type(readout).__name__)
    error = impl_error(name, impl, pool)
    if error:
        raise ValueError(error)
    enc = encoder(name, in_features, dim, negative_slope, init, **own)
    head = MLPHead(dim, hidden, out_features, negative_slope, init)
    if built_impl(name, impl, pool) == "fused":
        return FusedSequenceModel(enc, readout, head, impl)
    return SequenceModel(enc, readout, head)
