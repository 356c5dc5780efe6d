"""Composition of an encoder, a readout over time and a head."""

from torch import Tensor, nn


class SequenceModel(nn.Module):
    """x (B, T, F), mask (B, T) -> encoder: h (B, T, D) -> readout: c (B, D) -> head: (B, out)."""

    def __init__(self, encoder: nn.Module, readout: nn.Module, head: nn.Module):
        super().__init__()
        self.encoder, self.readout, self.head = encoder, readout, head

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.head(self.readout(self.encoder(x, mask), mask))
