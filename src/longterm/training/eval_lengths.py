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
records `eval_lengths`: {"<T0>": accuracy, ...} and `eval_sequences`; the run ends with them in
one line (`lengths_line`).

A finished run is scored at lengths it has not been scored at (`add_lengths`) the same way, from
its last checkpoint, which holds the final weights of a run that ended at an epoch's end (solved
or at its epoch limit): by a rerun of its command with more eval.lengths (training/run.py), or by
`python -m longterm.analysis.evaluate RUN --lengths ...`.
"""

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from longterm.store.checkpoint_files import load_checkpoint
from longterm.store.records import RESULT_FILE, write_result
from longterm.store.run_dir import CHECKPOINTS
from longterm.training.batches import FixedLengthBatches, batch_rng
from longterm.training.faults import Interrupted, RunError
from longterm.training.memory_estimate import available_bytes, eval_batch
from longterm.training.module import MemoryTaskModule
from longterm.training.parts import build_model, check_memory

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


def lengths_line(result: dict[str, Any]) -> str:
    """A record's accuracy at its eval.lengths, shortest first, in one line:
    `at lengths 128: 97.0%, 256: 88.1% (1000 sequences each)`."""
    found = sorted(result["eval_lengths"].items(), key=lambda item: int(item[0]))
    each = ", ".join(f"{T0}: {100 * acc:.1f}%" for T0, acc in found)
    return f"at lengths {each} ({result['eval_sequences']} sequences each)"


# The statuses whose last checkpoint holds the weights training ended with: a diverged run's
# last weights (not finite) are in none.
SCORED_FROM_LAST = ("solved", "max_epochs")


def add_lengths(
    cfg: DictConfig,
    run_dir: Path,
    result: dict[str, Any],
    lengths: Sequence[int],
    sequences: int,
    asked_as: str = "eval.sequences=",
) -> dict[str, Any]:
    """The finished run in `run_dir` (its config `cfg`, its record `result`) scored at those of
    `lengths` its record lacks, on `sequences` sequences each, as `length_accuracies` scores a
    run when its training ends: the weights it ended with, from its last checkpoint. They are
    recorded beside its other eval_lengths in result.json (written whole; its other keys kept);
    return the record. RunError, one line, for a run whose last checkpoint is not its final
    weights or is gone, or whose eval_lengths were scored on another number of sequences
    (`asked_as`: how the caller's user gives that number)."""
    scored = result.get("eval_lengths") or {}
    new = [T0 for T0 in dict.fromkeys(lengths) if str(T0) not in scored]
    if not new:
        return result
    where = run_dir / RESULT_FILE
    before = result.get("eval_sequences")
    if scored and before != sequences:
        raise RunError(
            f"{where} has eval_lengths scored on {before} sequences each: score "
            f"{', '.join(map(str, new))} on as many ({asked_as}{before})"
        )
    if result.get("status") not in SCORED_FROM_LAST:
        raise RunError(
            f"{where} has status {result.get('status')!r}: its final weights are in no "
            f"checkpoint, so it cannot be scored at new lengths (only a run that is "
            f"{' or '.join(SCORED_FROM_LAST)})"
        )
    last = run_dir / CHECKPOINTS / "last.ckpt"
    if not last.is_file():
        raise RunError(f"{last} is missing: the run cannot be scored at new lengths")
    module = build_model(cfg)
    module.load_state_dict(load_checkpoint(last)["state_dict"])
    on_gpu = cfg.trainer.get("accelerator") != "cpu" and torch.cuda.is_available()
    module.to("cuda" if on_gpu else "cpu")
    asked = OmegaConf.merge(cfg, {"eval": {"lengths": new, "sequences": sequences}})
    check_memory(asked, module, 1)
    try:
        found = length_accuracies(asked, module)["eval_lengths"]
    except (KeyboardInterrupt, SystemExit) as e:  # Ctrl-C, or SIGTERM (sigterm_stops)
        raise Interrupted(f"interrupted: {where} is as it was") from e
    result = {**result, "eval_lengths": {**scored, **found}, "eval_sequences": sequences}
    write_result(run_dir, result)
    return result
