"""Composition of an encoder, a readout over time and a head."""

from torch import Tensor, nn

from longterm.models.head import MLPHead


class SequenceModel(nn.Module):
    """x (B, T, F), mask (B, T) -> encoder: h (B, T, D) -> readout: c (B, D) -> head: (B, out)."""

    def __init__(self, encoder: nn.Module, readout: nn.Module, head: nn.Module):
        super().__init__()
        self.encoder, self.readout, self.head = encoder, readout, head

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.head(self.readout(self.encoder(x), mask))


def with_head(
    encoder: nn.Module,
    readout: nn.Module,
    dim: int,
    hidden: int,
    out_features: int,
    negative_slope: float,
    init: str,
    model: type[SequenceModel] = SequenceModel,
) -> SequenceModel:
    """`encoder` of width `dim`, then `readout` and the paper's head (MLPHead, §2.2)."""
    return model(encoder, readout, MLPHead(dim, hidden, out_features, negative_slope, init))
