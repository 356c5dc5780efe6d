"""A training batch of a task with token inputs: its size in memory, what the same batch would
take as one-hot float32 inputs, and the time to draw it (one thread, the median of --repeats
draws, each from its own key as training draws them). A benchmark, not a test.

    python bench/token_batch.py                        # mqar, vocab 8192, 64 sequences of 256 steps
    python bench/token_batch.py --task selective_copying --T0 4096 --vocab 16

The batch is the one training takes (training/batches.py: FixedLengthBatches, as tensors): token
ids x (B, width) int64, targets y and the mask, width = int(ceil(1.1 T0)) with the padding masked.
"""

import argparse
import statistics
import time

import torch

from longterm.training.batches import TRAIN, FixedLengthBatches, batch_rng

MB = 1e6


def measure(task: str, T0: int, batch_size: int, params: dict, repeats: int) -> dict:
    """The batch's bytes (x, y, mask), one-hot x's bytes over the vocabulary, and draw times."""
    recipe = FixedLengthBatches(
        f"longterm.tasks.{task}.{task}", T0, batch_size, "per_sequence", params
    )
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        x, y, mask = recipe(batch_rng(0, TRAIN, 0, i))
        times.append(time.perf_counter() - start)
    held = sum(t.numel() * t.element_size() for t in (x, y, mask))
    one_hot = x.numel() * params["vocab"] * 4 + y.numel() * y.element_size() + mask.numel()
    return {"shape": tuple(x.shape), "bytes": held, "one_hot_bytes": one_hot, "times": times}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--task", default="mqar", choices=["mqar", "selective_copying", "induction_heads"]
    )
    p.add_argument("--T0", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    torch.set_num_threads(1)
    r = measure(args.task, args.T0, args.batch_size, {"vocab": args.vocab}, args.repeats)
    ms = [1000 * t for t in r["times"]]
    print(
        f"{args.task}, vocab {args.vocab}, {args.batch_size} sequences of {args.T0} steps: "
        f"x {r['shape']} int64; batch (x, y, mask) {r['bytes'] / MB:.3f} MB, one-hot float32 "
        f"inputs instead {r['one_hot_bytes'] / MB:.1f} MB; draw {statistics.median(ms):.2f} ms "
        f"median ({min(ms):.2f}..{max(ms):.2f}, {args.repeats} draws, one thread)"
    )


if __name__ == "__main__":
    main()
