"""Recurrent baselines with the paper's head: a vanilla tanh RNN (the paper's speed baseline,
§3) and an LSTM (Hochreiter & Schmidhuber 1997), both PyTorch's own layers.

    RNN:   h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)
    LSTM:  (h_t, c_t) = LSTM(x_t, h_{t-1}, c_t-1)

x (B, T, F) -> h (B, T, D), then a readout over time (`pool=last`: the last real state; or
attention / mean pooling) and the two-layer head. Padded steps come after the real ones and the
recurrence is causal, so the states of real steps never depend on padding; `pool=last` reads the
last real step and `pool.mask_padding=true` pools real steps only. The recurrent weights keep
PyTorch's initialisation (uniform on ±1/sqrt(D)); `init` applies to the head.

The step form (models/state.py) runs the same layer on one step, carrying h_t (RNN: D numbers
per sequence) or (h_t, c_t) (LSTM: 2D).

Parameters with D = hidden = 100: RNN D(F + D + 2), LSTM 4D(F + D + 2), plus the head
D*hidden + hidden + hidden*out + out and the readout's own (attention: D + 1).
"""

from torch import Tensor, nn

RecurrentState = Tensor | tuple[Tensor, Tensor]  # h, or the LSTM's (h, c)


def swap(state: RecurrentState) -> RecurrentState:
    """(L, B, D) <-> (B, L, D), for h or each of (h, c)."""
    if isinstance(state, tuple):
        return tuple(s.transpose(0, 1).contiguous() for s in state)
    return state.transpose(0, 1).contiguous()


class RecurrentEncoder(nn.Module):
    """x (B, T, F) -> h (B, T, D): the outputs of a batch-first `nn.RNN` or `nn.LSTM`."""

    causal = True  # unidirectional

    def __init__(self, layer: nn.RNN | nn.LSTM):
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.layer(x)[0]

    def step(self, x_t: Tensor, state: RecurrentState | None) -> tuple[Tensor, RecurrentState]:
        """x_t (B, F) -> h_t (B, D) through the same layer; state h (B, L, D), or (h, c) for the
        LSTM, batch first (the layer's own (L, B, D), transposed)."""
        out, layer_state = self.layer(x_t[:, None], None if state is None else swap(state))
        return out[:, 0], swap(layer_state)

    def state_size(self, length: int) -> int:
        """L * D for the RNN (h_t per layer), 2 * L * D for the LSTM (h_t and c_t)."""
        vectors = 2 if isinstance(self.layer, nn.LSTM) else 1
        return vectors * self.layer.num_layers * self.layer.hidden_size


class RNN(RecurrentEncoder):
    """model=rnn: a tanh RNN of D = dim units."""

    def __init__(self, in_features: int, dim: int):
        super().__init__(nn.RNN(in_features, dim, batch_first=True))


class LSTM(RecurrentEncoder):
    """model=lstm: an LSTM of D = dim units."""

    def __init__(self, in_features: int, dim: int):
        super().__init__(nn.LSTM(in_features, dim, batch_first=True))
