"""Composition of an input embedding (for token inputs), an encoder, a readout over time and a
head, in its two forms (models/state.py): the training form over a whole sequence, and the step
form, which carries the encoder's state and the readout's and applies the head to each step's c_t
(the embedding, like the head, acts on one step and carries nothing)."""

from typing import Any

from torch import Tensor, nn

from longterm.models.state import has_step_form


class SequenceModel(nn.Module):
    """x (B, T, F), mask (B, T) -> encoder: h (B, T, D) -> readout: c (B, D) -> head: (B, out);
    a per-step readout keeps c (B, T, D) and the head gives (B, T, out).

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

    def features(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """What the head reads: c (B, D), or (B, T, D) per step; a per-step loss applies the head
        to the labelled steps' rows only (training/module.py)."""
        return self.readout(self.encoder(self.embed(x), mask), mask)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.head(self.features(x, mask))

    def step(self, x_t: Tensor, state: tuple[Any, Any] | None) -> tuple[Tensor, tuple[Any, Any]]:
        """x_t (B, F) (token ids (B,) with an embedding), (the encoder's state, the readout's)
        -> y_t (B, out): the head on c_t, what `forward` gives for steps 0..t (per step: its
        output at t), and the new states."""
        encoder_state, readout_state = (None, None) if state is None else state
        h_t, encoder_state = self.encoder.step(self.embed(x_t), encoder_state)
        c_t, readout_state = self.readout.step(h_t, readout_state)
        return self.head(c_t), (encoder_state, readout_state)

    def state_size(self, length: int) -> int | None:
        """The encoder's state size plus the readout's after `length` steps; None when either has
        no step form."""
        if not (has_step_form(self.encoder) and has_step_form(self.readout)):
            return None
        return self.encoder.state_size(length) + self.readout.state_size(length)
