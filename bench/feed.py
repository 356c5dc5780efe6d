"""Batches per second that the training DataLoader delivers, as the training loop takes them, with
the workers `data.num_workers` gives on a device (training/data.py: feed_workers). A benchmark, not
a test.

    python bench/feed.py --T0 10000 --device cpu cuda      # num_workers=auto on each
    python bench/feed.py --T0 10000 --num-workers 0 1 2

The DataModule is the one src/train.py builds from conf/ (addition, B = 100); --device names the
device a Trainer would train on (only its type is read: a machine without CUDA can show what
`auto` gives on one, without pinned memory). The first batches (one per worker, as they start)
are left out of the rate.
"""

import argparse
import os
import time
from types import SimpleNamespace

import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf
from throughput import ROOT

from longterm.training.data import feed_workers


def rate(T0: int, workers: int | str, device: str, batches: int) -> tuple[int, float]:
    """(workers used, batches per second) over `batches` batches after the first ones."""
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"T0={T0}", f"data.num_workers={workers}"])
    params = OmegaConf.to_container(cfg.data, resolve=True)
    params.pop("name")
    params["batches_per_epoch"] = batches + 8
    dm = instantiate(params)
    dm.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device)))
    loader = dm.train_dataloader()
    it = iter(loader)
    for _ in range(max(loader.num_workers, 1)):
        next(it)
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return loader.num_workers, batches / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T0", type=int, default=10000)
    parser.add_argument("--device", nargs="+", default=["cpu"])
    parser.add_argument("--num-workers", nargs="+", default=["auto"])
    parser.add_argument("--batches", type=int, default=40)
    args = parser.parse_args()
    print(f"CPUs of this job: {len(os.sched_getaffinity(0))}; T0 = {args.T0}, B = 100")
    for device in args.device:
        for workers in args.num_workers:
            count = workers if workers == "auto" else int(workers)
            used, per_s = rate(args.T0, count, device, args.batches)
            assert used == feed_workers(count, device)
            print(
                f"device {device}, num_workers={workers} ({used} workers): {per_s:.1f} batches/s "
                f"({1e3 / per_s:.1f} ms per batch)",
                flush=True,
            )


if __name__ == "__main__":
    main()
