"""The paper's feed-forward network with attention (Raffel & Ellis 2015, §2.2).

h_t = LReLU(W_xh x_t + b_xh) on every step independently, then attention [eq. 1] or mean [eq. 2]
pooling over time, then the two-layer head. With D = 100 and two input features the model has
2*100 + 100 (encoder) + 100 + 1 (attention) + 100*100 + 100 + 100 + 1 (head) = 10,602 parameters
with attention pooling and 10,501 with mean pooling.
"""

from torch import Tensor, nn
from torch.nn import functional as F

from longterm.choices import IMPLS
from longterm.models.fused import encode_pool
from longterm.models.init import init_linear_
from longterm.models.sequence import SequenceModel, with_head
from longterm.pooling import AttentionPooling, MeanPooling


class StepEncoder(nn.Module):
    """h_t = LReLU(W_xh x_t + b_xh):  x (B, T, F) -> h (B, T, D)."""

    def __init__(
        self, in_features: int, dim: int, negative_slope: float = 0.01, init: str = "paper"
    ):
        super().__init__()
        self.proj = init_linear_(nn.Linear(in_features, dim), init)
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(self.proj(x), self.negative_slope)


class FusedSequenceModel(SequenceModel):
    """The parameters of SequenceModel(StepEncoder, pooling, head), with the encoder and the
    pooling computed in one streaming pass that never stores the states (models/fused.py).
    Its state dict is the reference model's, so checkpoints load into either."""

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        enc, pool = self.encoder, self.readout
        keep = mask if pool.mask_padding else None
        score = (pool.score.weight, pool.score.bias) if isinstance(pool, AttentionPooling) else ()
        c = encode_pool(x, keep, enc.proj.weight, enc.proj.bias, enc.negative_slope, *score)
        return self.head(c)


def feedforward(
    in_features: int,
    out_features: int,
    readout: nn.Module,
    dim: int = 100,
    hidden: int = 100,
    negative_slope: float = 0.01,
    init: str = "paper",
    impl: str = "fused",
) -> SequenceModel:
    """The paper's model around a pooling `readout` built for width `dim`.

    `impl`: `reference` runs StepEncoder and `readout` as written (eq. 1, eq. 2); `fused` computes
    the same function in one streaming pass (attention and mean pooling only)."""
    if impl not in IMPLS:
        raise ValueError(f"unknown impl {impl!r}; choose one of {', '.join(IMPLS)}")
    fused = impl == "fused"
    if fused and not isinstance(readout, AttentionPooling | MeanPooling):
        raise ValueError(f"impl=fused computes attention or mean pooling, not {readout!r}")
    encoder = StepEncoder(in_features, dim, negative_slope, init)
    model = FusedSequenceModel if fused else SequenceModel
    return with_head(encoder, readout, dim, hidden, out_features, negative_slope, init, model)
