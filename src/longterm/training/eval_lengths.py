"""Length extrapolation: after training, the trained model's accuracy on the same task at other
lengths (`eval.lengths`), as the Mamba paper (arXiv 2312.00752, §4.1.2) trains induction heads at
256 steps and tests far beyond.

At each T0 of `eval.lengths`, `eval.sequences` sequences are drawn as the fixed-length data draws
them (`lengths: per_sequence`, padded to the task's width, the padding masked) from their own
random stream, keyed by (data seed, EVAL, T0, batch index), so every run of one seed is scored on
the same sequences whatever its training; batches of `data.batch_size`. The accuracy is the
validation's (the module's metric, a fresh copy): the final weights, in eval mode. result.json
records `eval_lengths`: {"<T0>": accuracy, ...} and `eval_sequences`.
"""

from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from longterm.training.batches import FixedLengthBatches, batch_rng
from longterm.training.module import MemoryTaskModule

EVAL = 2  # the random stream of these sequences (batches.TRAIN is 0, VALIDATION 1)


def accuracy_at(module: MemoryTaskModule, cfg: DictConfig, T0: int) -> float:
    """The module's accuracy on `cfg.eval.sequences` sequences of the run's task at `T0`."""
    sequences, batch_size = cfg.eval.sequences, cfg.data.batch_size
    params = OmegaConf.to_container(cfg.task.params, resolve=True)
    metric = module.val_acc.clone()
    metric.reset()
    for i, start in enumerate(range(0, sequences, batch_size)):
        size = min(batch_size, sequences - start)
        recipe = FixedLengthBatches(cfg.task.generator, T0, size, "per_sequence", params)
        x, y, mask = (t.to(module.device) for t in recipe(batch_rng(cfg.data.seed, EVAL, T0, i)))
        pred = module(x, mask)
        if module.per_step:
            metric.update(pred.flatten(0, 1), y.flatten())
        else:
            metric.update(pred, y.long() if module.classify else y)
    return float(metric.compute())


def length_accuracies(cfg: DictConfig, module: MemoryTaskModule) -> dict[str, Any]:
    """{"eval_lengths": {"<T0>": accuracy}, "eval_sequences": n} for the run's eval.lengths;
    {} when it has none."""
    lengths = OmegaConf.select(cfg, "eval.lengths", default=None)
    if not lengths:
        return {}
    training = module.training
    module.eval()
    with torch.inference_mode():
        found = {str(T0): accuracy_at(module, cfg, T0) for T0 in lengths}
    module.train(training)
    return {"eval_lengths": found, "eval_sequences": cfg.eval.sequences}
