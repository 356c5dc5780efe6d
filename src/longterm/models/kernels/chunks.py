"""Chunks of a sequence for the chunked forms of the linear-attention mixers (models/gla.py,
models/deltanet.py): how many chunks of how many steps, and the reshapes.

Both mixers compute everything inside a chunk for all chunks at once (batched tensor ops). GLA's
decay is diagonal, so it carries its state across chunks with batched ops too, and takes chunks
of at most CHUNK steps on every device (`fixed_plan`). DeltaNet's transitions are full matrices:
it walks the chunks one after another, a Python loop of N iterations of a few ops each, and
`chunk_plan` picks N per device:

- on the CPU, chunks of at most CHUNK steps (`fixed_plan`): the least memory; an op's launch
  costs little there next to the work it does;
- elsewhere (CUDA, or PyTorch's `meta` device on which models/ops.py counts ops), exactly
  ACCEL_CHUNKS chunks of ceil(T / ACCEL_CHUNKS) steps, whatever T: the ops per update are the
  same at every length (tests/test_gla_deltanet.py holds them equal at T0 = 1000 and 10000), at
  the price of chunks that grow with T and a (C, C) matrix per chunk and head: B H T^2 /
  ACCEL_CHUNKS numbers (100 x 4 x 11000^2 / 64 = 7.6e8 at B = 100, H = 4, T = 11000).

Steps added to fill the last chunks are zeros (and a zero log decay, or beta = 0): they change
no state, so the carried state after them is the state after step T.
"""

import math

import torch
from torch import Tensor
from torch.nn import functional as F

CHUNK = 64  # steps per chunk: GLA's everywhere, DeltaNet's on the CPU
ACCEL_CHUNKS = 64  # chunks per sequence off the CPU: the op count does not depend on T


def chunk_plan(T: int, device: torch.device, multiple: int = 1) -> tuple[int, int]:
    """(C, N): N chunks of C steps (C a multiple of `multiple`, N C >= T) for T steps on `device`,
    by the rule of the module docstring."""
    if device.type == "cpu":
        return fixed_plan(T, multiple)
    return round_up(math.ceil(T / ACCEL_CHUNKS), multiple), ACCEL_CHUNKS


def fixed_plan(T: int, multiple: int = 1) -> tuple[int, int]:
    """(C, N): the fewest chunks of at most CHUNK steps, N = ceil(T / CHUNK), each as short as
    covers T (C a multiple of `multiple`): at T = 71 (T0 = 64 padded) two chunks of 40 steps,
    where chunks of 64 would compute 128 steps for 71 (1.8 times the work, the second chunk
    mostly filler)."""
    N = math.ceil(T / CHUNK)
    C = round_up(math.ceil(T / N), multiple)
    return C, math.ceil(T / C)


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def to_chunks(x: Tensor, C: int, N: int) -> Tensor:
    """(B, H, T, d) -> (B, H, N, C, d), zeros after step T."""
    x = F.pad(x, (0, 0, 0, N * C - x.shape[2]))
    return x.unflatten(2, (N, C))


def from_chunks(x: Tensor, T: int) -> Tensor:
    """(B, H, N, C, d) -> (B, H, T, d): the first T steps."""
    return x.flatten(2, 3)[:, :, :T]
