"""Weight initialisation shared by the models' linear layers."""

import math

from torch import nn

from longterm.choices import INITS


def init_linear_(layer: nn.Linear, init: str) -> nn.Linear:
    """`paper`: W ~ N(0, 1/fan_in), b = 0, as the paper's code; `torch`: PyTorch's default."""
    if init == "paper":
        nn.init.normal_(layer.weight, std=1.0 / math.sqrt(layer.in_features))
        nn.init.zeros_(layer.bias)
    elif init != "torch":
        raise ValueError(f"unknown init {init!r}; choose one of {', '.join(INITS)}")
    return layer
