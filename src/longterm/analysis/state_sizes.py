"""The state size of every built-in encoder and readout (docs/models.md, "State size"): the
numbers each carries per sequence at inference after T steps, as its `state_size` declares it
(models/state.py; tests/test_step_forms.py holds each declaration to the state its step form
carries), built from its conf file with D = `--dim`:

    python -m longterm.analysis.state_sizes --dim 64

Prints a Markdown table, a row per conf/model/*.yaml and conf/pool/*.yaml (found there, not
listed), its parameters (an encoder's with the paper's two input features, without the head) and
a column per length; a model's state size is its encoder's plus its readout's. One without a step
form (a readout whose every step reads the last state, `pool=mad_decoder`) declares none: —.
"""

import argparse
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import torch
from omegaconf import OmegaConf
from torch import nn

from longterm.analysis.arguments import at_least, summary
from longterm.config.builtins import CONF
from longterm.models.build import build_encoder, build_readout
from longterm.models.state import has_step_form
from longterm.tasks import default_width

# one step; the width of the paper's batches at T0 = 50, a length between, at T0 = 10000
LENGTHS = (1, default_width(50), 1000, default_width(10000))
IN_FEATURES = 2  # the paper's tasks; no state size depends on it


def section(path: Path) -> dict:
    keys = OmegaConf.to_container(OmegaConf.load(path))
    keys.pop("defaults", None)
    return keys


def built_encoder(path: Path, dim: int) -> nn.Module:
    """The encoder a conf/model file names, at width `dim`, with the file's own keys."""
    keys = section(path)
    encoder = keys.pop("encoder")
    keys.pop("dim")
    return build_encoder(encoder, IN_FEATURES, dim, **keys)


def modules(dim: int, conf: Path = CONF) -> Iterator[tuple[str, nn.Module]]:
    """(`model=name` or `pool=name`, its encoder or readout at width `dim`), in name order; a
    ValueError naming the one that cannot be built at that width."""
    builds = [
        (f"model={p.stem}", partial(built_encoder, p)) for p in sorted(conf.glob("model/*.yaml"))
    ]
    builds += [
        (f"pool={p.stem}", partial(build_readout, section(p)))
        for p in sorted(conf.glob("pool/*.yaml"))
    ]
    with torch.device("meta"):  # sizes only: no memory, no initialisation
        for name, build in builds:
            try:
                module = build(dim)
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
            yield name, module


def declared(model: str, pool: str, dim: int, length: int, conf: Path = CONF) -> int:
    """The state size `model=<model> pool=<pool>` declare at width `dim` after `length` steps,
    the encoder's plus the readout's, built from their conf files: for runs recorded before
    result.json held it."""
    with torch.device("meta"):
        encoder = built_encoder(conf / "model" / f"{model}.yaml", dim)
        readout = build_readout(section(conf / "pool" / f"{pool}.yaml"), dim)
    return encoder.state_size(length) + readout.state_size(length)


def table(dim: int, lengths: tuple[int, ...] = LENGTHS) -> str:
    """The Markdown table: a row per encoder and readout, its state size after each length."""
    lines = [
        "| " + " | ".join([f"D = {dim}", "parameters", *(f"T = {t:,}" for t in lengths)]) + " |",
        "|---" + "|---:" * (len(lengths) + 1) + "|",
    ]
    for name, module in modules(dim):
        cells = [f"{sum(p.numel() for p in module.parameters()):,}"]
        steps = has_step_form(module)
        cells += [f"{module.state_size(t):,}" if steps else "—" for t in lengths]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=summary(__doc__))
    parser.add_argument("--dim", type=at_least(1), default=64, help="D, the width of every model")
    dim = parser.parse_args(argv).dim
    try:
        print(table(dim))
    except ValueError as e:
        sys.exit(f"error: --dim {dim}: {e}")


if __name__ == "__main__":
    main()
