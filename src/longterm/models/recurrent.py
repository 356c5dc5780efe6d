"""Recurrent baselines with the paper's head: a vanilla tanh RNN (the paper's speed baseline,
§3) and an LSTM (Hochreiter & Schmidhuber 1997), both PyTorch's own layers.

    RNN:   h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)
    LSTM:  (h_t, c_t) = LSTM(x_t, h_{t-1}, c_t-1)

x (B, T, F) -> h (B, T, D), then a readout over time (`pool=last`: the last real state; or
attention / mean pooling) and the two-layer head. Padded steps come after the real ones and the
recurrence is causal, so the states of real steps never depend on padding; `pool=last` reads the
last real step and `pool.mask_padding=true` pools real steps only. The recurrent weights keep
PyTorch's initialisation (uniform on ±1/sqrt(D)); `init` applies to the head.

Parameters with D = hidden = 100: RNN D(F + D + 2), LSTM 4D(F + D + 2), plus the head
D*hidden + hidden + hidden*out + out and the readout's own (attention: D + 1).
"""

from torch import Tensor, nn


class RecurrentEncoder(nn.Module):
    """x (B, T, F) -> h (B, T, D): the outputs of a batch-first `nn.RNN` or `nn.LSTM`."""

    causal = True  # unidirectional

    def __init__(self, layer: nn.RNN | nn.LSTM):
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.layer(x)[0]


class RNN(RecurrentEncoder):
    """model=rnn: a tanh RNN of D = dim units."""

    def __init__(self, in_features: int, dim: int):
        super().__init__(nn.RNN(in_features, dim, batch_first=True))


class LSTM(RecurrentEncoder):
    """model=lstm: an LSTM of D = dim units."""

    def __init__(self, in_features: int, dim: int):
        super().__init__(nn.LSTM(in_features, dim, batch_first=True))
