"""Length extrapolation: after training, the trained model's accuracy on the same task at other
lengths (`eval.lengths`), as the Mamba paper (arXiv 2312.00752, §4.1.2) trains induction heads at
256 steps and tests far beyond.

At each T0 of `eval.lengths`, `eval.sequences` sequences are drawn as the fixed-length data draws
them (`lengths: per_sequence`, padded to the task's width, the padding masked) from their own
random stream, keyed by (data seed, EVAL, T0, batch index), so every run of one seed is scored on
the same sequences whatever its training; batches of `data.batch_size`, each scored in as few
forward passes as the memory available allows (a batch of 100 sequences of 10,000 steps at MQAR's
vocabulary of 8,192 would hold 36 GB of logits at once). The accuracy is the
validation's (the module's metric, a fresh copy): the final weights, in eval mode. result.json
records `eval_lengths`: {"<T0>": accuracy, ...} and `eval_sequences`.
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from longterm.training.batches import FixedLengthBatches, batch_rng
from longterm.training.memory_estimate import available_bytes, eval_batch
from longterm.training.module import MemoryTaskModule

EVAL = 2  # the random stream of these sequences (batches.TRAIN is 0, VALIDATION 1)


def accuracy_at(
    module: MemoryTaskModule, cfg: DictConfig, T0: int, at_once: int | None = None, jobs: int = 1
) -> float:
    """The module's accuracy on `cfg.eval.sequences` sequences of the run's task at `T0`, scored
    `at_once` sequences a forward pass (None: as many as this process's share of the memory
    available holds, one of `jobs` side by side)."""
    sequences, batch_size = cfg.eval.sequences, cfg.data.batch_size
    task = OmegaConf.to_container(cfg.task, resolve=True)
    if at_once is None:  # outside inference mode: the estimate measures what autograd saves
        at_once = eval_batch(module.net, task, T0, batch_size, room(module.device) // jobs)
    metric = module.val_acc.clone()
    metric.reset()
    for i, start in enumerate(range(0, sequences, batch_size)):
        size = min(batch_size, sequences - start)
        recipe = FixedLengthBatches(cfg.task.generator, T0, size, "per_sequence", task["params"])
        drawn = recipe(batch_rng(cfg.data.seed, EVAL, T0, i))
        for x, y, mask in zip(*(t.split(at_once) for t in drawn), strict=True):
            x, y, mask = x.to(module.device), y.to(module.device), mask.to(module.device)
            with torch.inference_mode():
                pred = module(x, mask)
                if module.per_step:
                    metric.update(pred.flatten(0, 1), y.flatten())
                else:
                    metric.update(pred, y.long() if module.classify else y)
    return float(metric.compute())


def room(device: torch.device) -> int:
    """Bytes free where the forward pass runs: the GPU's free memory, or the host's."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return available_bytes()


def length_accuracies(cfg: DictConfig, module: MemoryTaskModule, jobs: int = 1) -> dict[str, Any]:
    """{"eval_lengths": {"<T0>": accuracy}, "eval_sequences": n} for the run's eval.lengths;
    {} when it has none. `jobs`: processes side by side with this one (launcher=parallel), itself
    included, sharing the memory."""
    lengths = OmegaConf.select(cfg, "eval.lengths", default=None)
    if not lengths:
        return {}
    training = module.training
    module.eval()
    with sigterm_stops():
        found = {str(T0): accuracy_at(module, cfg, T0, jobs=jobs) for T0 in lengths}
    module.train(training)
    return {"eval_lengths": found, "eval_sequences": cfg.eval.sequences}


@contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM while scoring ends the run as Ctrl-C does, recorded as interrupted (the same
    command resumes and scores): Lightning's own handler is gone once `fit` returns, and the
    default one would end the process with no record."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)  # what Lightning's SIGTERM exit says (training/result.py)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
