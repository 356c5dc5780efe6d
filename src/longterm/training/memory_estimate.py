"""What a run will hold in memory, estimated before it trains, and refused in one line when the
machine does not have it (a length far beyond the paper's would otherwise sit allocating until
the kernel kills it).

The rule: data + activations must fit in the memory available now (MemAvailable, or the cgroup's
limit when lower), with FIT_FRACTION of it to spare for the rest of the process.
- Data: the validation set, held for the whole run, in float32, and a training batch as it is
  generated (float64, as the paper's generator draws it, its float32 copy and the mask; twice the
  float64 array for the generator's own intermediates). A task of token inputs holds one int64
  id per step instead of its features (the generator's array, shared by the tensor, and as much
  again for its intermediates).
- Activations: what autograd saves for the backward pass of one update, measured on the model
  itself at two short lengths (the tensors its saved_tensors_hooks see, each storage once) and
  extrapolated linearly to the batch's width; every model here is linear in T (attention models
  attend over a fixed span).
"""

import copy
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from longterm.tasks import default_width

FIT_FRACTION = 0.8  # of the available memory a run may plan to use
PROBE_STEPS = (64, 128)  # the lengths the activations are measured at
PROBE_BATCH = 4  # sequences per probe; activations scale with the batch
GiB = 2**30


def available_bytes() -> int:
    """Memory this process can still take: MemAvailable, or the cgroup's room when smaller."""
    with open("/proc/meminfo") as f:
        info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
    room = info.get("MemAvailable", info["MemFree"])
    limit, used = Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current")
    if limit.exists() and used.exists() and limit.read_text().strip() != "max":
        room = min(room, int(limit.read_text()) - int(used.read_text()))
    return room


def saved_bytes(net: nn.Module, x: torch.Tensor, mask: torch.Tensor) -> int:
    """Bytes autograd saves for one forward of `net` on (x, mask), each storage counted once."""
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = net(x, mask)
    storages.pop(0, None)  # an empty storage
    return sum(storages.values()) + out.numel() * out.element_size()


def probe_steps(net: nn.Module) -> tuple[int, int]:
    """PROBE_STEPS, or for a model defined for at most `max_positions` steps fewer than the
    second (models/bounded.py), half that and that."""
    limit = getattr(getattr(net, "encoder", net), "max_positions", None)
    if limit is None or limit >= PROBE_STEPS[1]:
        return PROBE_STEPS
    return max(limit // 2, 1), limit


def probe_bytes(net: nn.Module, n_features: int, vocab: int | None = None) -> tuple[int, int]:
    """What one forward of `net` saves for its backward pass on PROBE_BATCH sequences at each of
    its probe_steps; with `vocab`, on token ids (the net embeds them) instead of `n_features`
    features."""
    measured, probe = [], copy.deepcopy(net)  # a probe's forward may change a module's state
    g = torch.Generator().manual_seed(0)  # and never draws from the run's random stream
    device = next(net.parameters()).device  # after training, where the run trained
    for steps in probe_steps(net):
        if vocab is None:
            x = torch.randn(PROBE_BATCH, steps, n_features, generator=g)
        else:
            x = torch.randint(vocab, (PROBE_BATCH, steps), generator=g)
        mask = torch.ones(PROBE_BATCH, steps, dtype=torch.bool)
        measured.append(saved_bytes(probe, x.to(device), mask.to(device)))
    return measured[0], measured[1]


def extrapolated(
    probed: tuple[int, int], batch_size: int, width: int, steps: tuple[int, int] = PROBE_STEPS
) -> int:
    """The probes' bytes (at `steps`) extrapolated linearly to `batch_size` sequences of `width`
    steps."""
    (t1, t2), (m1, m2) = steps, probed
    per_step = max(m2 - m1, 0) / max(t2 - t1, 1)
    return int((m2 + per_step * (width - t2)) * batch_size / PROBE_BATCH)


def activation_bytes(
    net: nn.Module, n_features: int, batch_size: int, width: int, vocab: int | None = None
) -> int:
    """What one update of `net` saves for its backward pass on a batch of `batch_size` sequences
    of `width` steps, measured at PROBE_STEPS and extrapolated linearly; with `vocab`, on token
    ids (the net embeds them) instead of `n_features` features."""
    return extrapolated(probe_bytes(net, n_features, vocab), batch_size, width, probe_steps(net))


def data_bytes(
    data: dict, n_features: int, per_step: bool, tokens: bool = False
) -> tuple[int, int]:
    """(the validation set held, one training batch being generated), in bytes; `tokens`: one
    int64 id per step instead of `n_features` features."""
    x_step = 8 if tokens else n_features * 4  # x: an int64 id, or float32 features
    step = x_step + 1 + (8 if per_step else 0)  # x, the mask, a step's target
    width = longest_width(data)
    if data["name"] == "fixed":
        held = data["val_size"] * width * step
    elif data["name"] == "mad":  # the training set and the test set, both held
        held = (data["n_train"] + data["n_test"]) * width * step
    else:
        mean = (data["min_length"] + data["max_length"]) / 2
        held = int(data["val_batches"] * data["val_batch_size"] * mean * step)
    per_batch_step = 2 * 8 + 1 if tokens else n_features * (2 * 8 + 8 + 4) + 1
    batch = data["batch_size"] * width * per_batch_step
    return held, batch


def longest_width(data: dict) -> int:
    if data["name"] == "mad":
        return data["steps"]
    return default_width(data["T0"]) if data["name"] == "fixed" else data["max_length"]


def memory_error(
    net: nn.Module, data: dict, task: dict, side_by_side: int = 1, eval_lengths: Sequence[int] = ()
) -> str | None:
    """Why a run of `net` on `data` and `task` (the config's sections) cannot fit in memory, in
    one line with the estimate and what the machine has; None when it fits. A job that runs
    beside others (`side_by_side`, launcher=parallel) may plan on its share of the memory.
    `eval_lengths` (eval.lengths), scored after training with the validation set still held,
    need one sequence's forward pass at a time (eval_batch splits the batches to fit)."""
    n_features, tokens = task.get("n_features"), task.get("inputs", "onehot") == "tokens"
    held, batch = data_bytes(data, n_features, task["labels"] == "step", tokens)
    probed = probe_bytes(net, n_features, task["vocab"] if tokens else None)
    width = longest_width(data)
    active = extrapolated(probed, data["batch_size"], width, probe_steps(net))
    need, room = held + batch + active, available_bytes() / side_by_side
    share = f" for each of {side_by_side} jobs side by side" if side_by_side > 1 else ""
    if need > FIT_FRACTION * room:
        fixes = ["shorter sequences", "a smaller data.batch_size"]
        if side_by_side > 1:
            fixes.append("fewer jobs at a time (launcher.jobs)")
        where = {"fixed": "T0={T0}", "mad": "task.setting={setting}"}.get(
            data["name"], "data.max_length={max_length}"
        ).format(**data)
        return (
            f"{where} needs about {need / GiB:.1f} GiB (the validation set held: "
            f"{held / GiB:.1f}, a batch of {data['batch_size']} being generated: "
            f"{batch / GiB:.1f}, the update's activations: {active / GiB:.1f}) and this machine "
            f"has {room / GiB:.1f} GiB available{share}: use {', '.join(fixes)}, or fewer "
            "validation sequences"
        )
    for T0 in eval_lengths:
        drawn = batch * default_width(T0) // width  # a batch drawn at T0
        one = extrapolated(probed, 1, default_width(T0), probe_steps(net))
        if held + drawn + one > FIT_FRACTION * room:
            return (
                f"eval.lengths: T0={T0} needs about {(held + drawn + one) / GiB:.1f} GiB to score "
                f"one sequence (the validation set held: {held / GiB:.1f}, a batch of "
                f"{data['batch_size']} drawn: {drawn / GiB:.1f}, one sequence's forward pass: "
                f"{one / GiB:.1f}) and this machine has {room / GiB:.1f} GiB available{share}: "
                "use shorter eval.lengths"
            )
    return None


def eval_batch(net: nn.Module, task: dict, T0: int, batch_size: int, room: int) -> int:
    """How many sequences of one drawn batch of length `T0` (eval.lengths) to score in one
    forward pass: all `batch_size` where they fit in FIT_FRACTION of `room` bytes, else as many
    as fit, at least one (memory_error refused a length where one does not)."""
    tokens = task.get("inputs", "onehot") == "tokens"
    probed = probe_bytes(net, task.get("n_features"), task["vocab"] if tokens else None)
    one = max(extrapolated(probed, 1, default_width(T0), probe_steps(net)), 1)
    return max(1, min(batch_size, int(FIT_FRACTION * room // one)))
