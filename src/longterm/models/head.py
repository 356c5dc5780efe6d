"""The output head shared by every model: two leaky-ReLU layers on the pooled vector [§2.2]."""

from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.init import init_linear_


class MLPHead(nn.Module):
    """s = LReLU(W_cs c + b_s);  y = LReLU(W_sy s + b_y):  c (B, D) -> y (B, out_features)."""

    def __init__(
        self,
        dim: int,
        hidden: int,
        out_features: int,
        negative_slope: float = 0.01,
        init: str = "paper",
    ):
        super().__init__()
        self.hidden = init_linear_(nn.Linear(dim, hidden), init)
        self.out = init_linear_(nn.Linear(hidden, out_features), init)
        self.negative_slope = negative_slope

    def forward(self, c: Tensor) -> Tensor:
        s = F.leaky_relu(self.hidden(c), self.negative_slope)
        return F.leaky_relu(self.out(s), self.negative_slope)
