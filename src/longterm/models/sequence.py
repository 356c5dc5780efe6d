"""Composition of an input embedding (for token inputs), an encoder, a readout over time and a
head."""

from torch import Tensor, nn


class SequenceModel(nn.Module):
    """x (B, T, F), mask (B, T) -> encoder: h (B, T, D) -> readout: c (B, D) -> head: (B, out).

    With an `embedding` (a task with token inputs, `inputs: tokens`), x is token ids (B, T) int64
    and the encoder reads embedding(x) (B, T, D); without one (one-hot tasks) x is its input."""

    def __init__(
        self,
        encoder: nn.Module,
        readout: nn.Module,
        head: nn.Module,
        embedding: nn.Module | None = None,
    ):
        super().__init__()
        if embedding is not None:  # registered only when there is one: one-hot models unchanged
            self.embedding = embedding
        self.encoder, self.readout, self.head = encoder, readout, head

    def embed(self, x: Tensor) -> Tensor:
        """Token ids (B, T) -> features (B, T, D); features pass as they are."""
        embedding = getattr(self, "embedding", None)
        return x if embedding is None else embedding(x)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.head(self.readout(self.encoder(self.embed(x), mask), mask))
