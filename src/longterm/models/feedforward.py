"""The paper's feed-forward network with attention (Raffel & Ellis 2015, §2.2).

h_t = LReLU(W_xh x_t + b_xh) on every step independently, then attention [eq. 1] or mean [eq. 2]
pooling over time, then the two-layer head. With D = 100 and two input features the model has
2*100 + 100 (encoder) + 100 + 1 (attention) + 100*100 + 100 + 100 + 1 (head) = 10,602 parameters
with attention pooling and 10,501 with mean pooling.
"""

from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.head import MLPHead
from longterm.models.init import init_linear_
from longterm.models.sequence import SequenceModel


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


def feedforward(
    in_features: int,
    out_features: int,
    readout: nn.Module,
    dim: int = 100,
    hidden: int = 100,
    negative_slope: float = 0.01,
    init: str = "paper",
) -> SequenceModel:
    """The paper's model around a pooling `readout` built for width `dim`."""
    return SequenceModel(
        StepEncoder(in_features, dim, negative_slope, init),
        readout,
        MLPHead(dim, hidden, out_features, negative_slope, init),
    )
