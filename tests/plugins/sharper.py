"""A readout that is a subclass of the built-in attention pooling, with another function: it must
run as written, never as the fused pass or a pack member of the class it extends."""

from torch import Tensor

from longterm.models.readouts import AttentionPooling


class Sharper(AttentionPooling):
    """Attention pooling [Raffel & Ellis 2015, eq. 1] of 2 h_t: h (B, T, D) -> c (B, D)."""

    def weights(self, h: Tensor, mask: Tensor | None = None) -> Tensor:
        return super().weights(2 * h, mask)
