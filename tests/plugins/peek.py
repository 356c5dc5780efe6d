"""A deliberately broken readout for the contract's tests: it reads per step and says it masks
padding, yet every step's output sees the mean of all the states, later steps and padding
included."""

from torch import Tensor, nn


class Peek(nn.Module):
    """c_t = h_t + mean_s h_s: h (B, T, D) -> c (B, T, D); neither causal nor blind to padding."""

    per_step = True

    def __init__(self, dim: int, mask_padding: bool = True):
        super().__init__()
        self.mask_padding = mask_padding  # said, and not done

    def forward(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        return h + h.mean(1, keepdim=True)
