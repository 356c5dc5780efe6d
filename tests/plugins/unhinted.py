"""An encoder whose constructor has no type hints, as a first draft often is: its own key
`heads` cannot be checked, and the command line says what to add."""

from torch import nn


class Unhinted(nn.Module):
    """h_t = W x_t, x (B, T, F) -> h (B, T, D); `heads` checked by hand against `dim`."""

    causal = True

    def __init__(self, in_features, dim, heads=2):  # no type hints, on purpose
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be a multiple of heads={heads}")
        self.proj = nn.Linear(in_features, dim)

    def forward(self, x, mask=None):
        return self.proj(x)
