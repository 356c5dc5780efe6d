"""The output head (`model.head`): the paper's two leaky-ReLU layers on the pooled vector [§2.2]
(`mlp`, every model's default), logits tied to the token embedding (`tied`, zoology's lm_head:
a linear layer without bias whose weight is the embedding matrix), or a norm then a linear layer
(`unembed`, mad-lab's: RMSNorm, then W c + b, mad/model/language_model.py)."""

from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.init import init_linear_

RMS_EPS = 1e-5  # mad-lab's RMSNorm


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


class TiedHead(nn.Module):
    """y = c E^T:  c (..., D) -> logits (..., V), E (V, D) the token embedding's weight, the same
    parameter (counted once; the state dict names it twice, as zoology's `lm_head.weight`)."""

    def __init__(self, embedding: nn.Embedding):
        super().__init__()
        self.weight = embedding.weight

    def forward(self, c: Tensor) -> Tensor:
        return F.linear(c, self.weight)


class Unembed(nn.Module):
    """y = W RMSNorm(c) + b:  c (..., D) -> logits (..., out_features), mad-lab's `unembed`
    (the norm, then `lm_head`), its bias 0 at `init: mad`."""

    def __init__(self, dim: int, out_features: int, init: str = "mad"):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=RMS_EPS)
        self.lm_head = init_linear_(nn.Linear(dim, out_features), init)

    def forward(self, c: Tensor) -> Tensor:
        return self.lm_head(self.norm(c))
