"""Weight initialisation shared by the models' linear layers and the token embedding."""

import math

from torch import nn

from longterm.choices import INITS

ZOOLOGY_STD = 0.02  # zoology's initializer_range (zoology/model.py, _init_weights)


def init_linear_(layer: nn.Linear, init: str) -> nn.Linear:
    """`paper`: W ~ N(0, 1/fan_in), b = 0, as the paper's code; `torch`: PyTorch's default;
    `zoology`: W ~ N(0, 0.02^2), b = 0, as zoology's _init_weights; `mad`: PyTorch's W, b = 0, as
    mad-lab's LanguageModel._init_weights."""
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; choose one of {', '.join(INITS)}")
    if init == "mad" and layer.bias is not None:
        nn.init.zeros_(layer.bias)
    elif init != "torch":
        std = ZOOLOGY_STD if init == "zoology" else 1.0 / math.sqrt(layer.in_features)
        nn.init.normal_(layer.weight, std=std)
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return layer


def init_embedding_(embedding: nn.Embedding, init: str) -> nn.Embedding:
    """The token embedding: N(0, 0.02^2) for `zoology` and `mad` (their _init_weights), PyTorch's
    N(0, 1) otherwise."""
    if init in ("zoology", "mad"):
        nn.init.normal_(embedding.weight, std=ZOOLOGY_STD)
    return embedding


def zoology_init_(module: nn.Module, layers: int) -> nn.Module:
    """zoology's _init_weights (zoology/model.py) over `module`: every nn.Linear W ~ N(0, 0.02^2)
    and b = 0 (Mamba's Δ bias too), every nn.Embedding N(0, 0.02^2), then every `out_proj`
    weight N(0, (0.02 / sqrt(2 layers))^2); convolutions and other parameters keep their own."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            init_linear_(m, "zoology")
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=ZOOLOGY_STD)
    for name, p in module.named_parameters():
        if "out_proj.weight" in name or "fc2.weight" in name:
            nn.init.normal_(p, std=ZOOLOGY_STD / math.sqrt(2 * layers))
    return module
