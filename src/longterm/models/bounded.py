"""Models defined for at most `max_positions` steps: learned absolute positions (zoology's
attention) or a filter stored for that many offsets (zoology's Hyena and BaseConv, `l_max`).

A batch wider than that is taken when every step beyond is padding (a fixed-length task padded
to the framework's width, int(ceil(1.1 T0))): the model is causal, so its states on the real
steps are those of the first `max_positions` steps, and the padded steps get zeros. A real step
beyond is refused in one line (config/validate.py refuses T0, data.max_length and eval.lengths
beyond it before training).
"""

from collections.abc import Callable

from torch import Tensor
from torch.nn import functional as F


def longer_than(steps: int, limit: int) -> str:
    return (
        f"{steps} steps are more than model.max_positions={limit}, the longest sequence the "
        "model is defined for: raise model.max_positions"
    )


def within(
    forward: Callable[[Tensor, Tensor | None], Tensor],
    x: Tensor,
    mask: Tensor | None,
    limit: int | None,
) -> Tensor:
    """forward(x, mask) -> h (B, T, D) for x (B, T, ...), run on the first `limit` steps when
    the steps beyond are padding (mask False), h zero there; ValueError for a real step
    beyond."""
    T = x.shape[1]
    if limit is None or limit >= T:
        return forward(x, mask)
    if mask is None or mask[:, limit:].any():
        last = T if mask is None else int(mask.sum(1).max())
        raise ValueError(longer_than(last, limit))
    h = forward(x[:, :limit], mask[:, :limit])
    return F.pad(h, (0, 0, 0, T - limit))
