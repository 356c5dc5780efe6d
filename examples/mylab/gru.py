"""A GRU encoder (Cho et al. 2014), not among longterm's built-in models.

    r_t = sigmoid(W_r x_t + U_r h_{t-1}),  z_t = sigmoid(W_z x_t + U_z h_{t-1})
    n_t = tanh(W_n x_t + r_t * (U_n h_{t-1}))
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

The encoder contract (longterm docs/plugins.md): built from in_features, dim and its own keys
(here `layers`); forward(x (B, T, F), mask (B, T)) -> h (B, T, D); `causal` says whether h_t sees
only steps <= t. The framework adds the readout (pool=) and the paper's head. The optional step
form: step(x_t (B, F), state) -> (h_t (B, D), state), the same GRU on one step, carrying each
layer's h_t; state_size(length) = layers * D, the numbers it carries per sequence.
"""

from torch import Tensor, nn


class GRU(nn.Module):
    """x (B, T, F) -> h (B, T, D): the last layer's states of a stack of `layers` GRUs."""

    causal = True  # unidirectional: padding after the real steps never reaches them

    def __init__(self, in_features: int, dim: int, layers: int = 1):
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers={layers} must be >= 1")
        self.gru = nn.GRU(in_features, dim, num_layers=layers, batch_first=True)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.gru(x)[0]

    def step(self, x_t: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        """x_t (B, F), each layer's h_{t-1} (B, layers, D) or None -> h_t (B, D), the new ones."""
        h = None if state is None else state.transpose(0, 1).contiguous()  # nn.GRU's (L, B, D)
        out, h = self.gru(x_t[:, None], h)
        return out[:, 0], h.transpose(0, 1)

    def state_size(self, length: int) -> int:
        return self.gru.num_layers * self.gru.hidden_size
