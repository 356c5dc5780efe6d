"""The training recipe of a run (conf/train.yaml: `optim`, the top-level `lr`): the optimizer, the
schedule of its learning rate and the clipping of its gradients, with torch's own classes.

    adam (the paper's)   torch.optim.Adam(lr, betas, eps)
    adamw (zoology's)    torch.optim.AdamW(lr, betas, eps, weight_decay): decoupled weight decay
    schedule none        lr throughout
    schedule cosine      CosineAnnealingLR(T_max=max_epochs, eta_min=min_lr), stepped once per
                         epoch after its last update: epoch e (0-based) trains at
                         min_lr + (lr - min_lr) (1 + cos(pi e / max_epochs)) / 2 (zoology/train.py,
                         min_lr 0; mad-lab's pl_model_wrapper.py, min_lr 1e-6; no warmup)
    warmup_cosine        per update u (0-based) of N = max_epochs * updates_per_epoch:
                         lr (u + 1) / W for u < W = warmup, then
                         lr (1 + cos(pi (u - W) / (N - W))) / 2
    clip                 torch.nn.utils.clip_grad_norm_(params, clip) before each step
    decay_groups all     weight_decay on every parameter
    decay_groups mad     mad-lab's groups (pl_model_wrapper.py, configure_optimizers): none on a
                         parameter whose name has `bias` or `norm`, or marked `_no_weight_decay`

Where the steps happen: Lightning steps the schedule under automatic optimization (the interval
of `lightning_schedule`); the plain loop's update (training/library_internals.py: plain_update)
steps it in `after_update` at the same points, after the update and, for a per-epoch schedule,
after the epoch's last update, before its validation: the checkpoint written at the validation
holds the schedule as the next epoch starts from it, so a resumed run goes on as one that was
not interrupted. A pack steps each member's own (sweeps/pack_module.py).
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.optim.lr_scheduler import CosineAnnealingLR, LambdaLR, LRScheduler

from longterm.models.mamba import NO_WEIGHT_DECAY

Schedule = LRScheduler


class WarmupCosine:
    """The factor of the learning rate at update u of warmup_cosine (see the module docstring);
    an object, not a function, so that LambdaLR's state_dict holds it."""

    def __init__(self, warmup: int, total: int):
        self.warmup, self.total = warmup, total

    def __call__(self, u: int) -> float:
        if u < self.warmup:
            return (u + 1) / self.warmup
        progress = (u - self.warmup) / max(1, self.total - self.warmup)
        return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def mad_groups(named: list[tuple[str, nn.Parameter]], weight_decay: float) -> list[dict[str, Any]]:
    """mad-lab's parameter groups: `weight_decay` on the parameters whose names have neither
    `bias` nor `norm` and that are not marked `_no_weight_decay`, 0 on the others."""
    decay, no_decay = [], []
    for name, p in named:
        skip = getattr(p, NO_WEIGHT_DECAY, False) or "bias" in name or "norm" in name
        (no_decay if skip else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


@dataclass(frozen=True)
class Recipe:
    """The `optim` section of a run's config, and what its schedule runs over: `max_epochs`
    (trainer.max_epochs) and `updates_per_epoch` (data.batches_per_epoch). Defaults: the
    paper's constant Adam."""

    name: str = "adam"
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    schedule: str = "none"
    warmup: int = 0
    clip: float | None = None
    min_lr: float = 0.0
    decay_groups: str = "all"
    max_epochs: int = 1
    updates_per_epoch: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "betas", tuple(self.betas))

    @property
    def per_update(self) -> bool:
        """Whether the schedule steps after every update (else after every epoch)."""
        return self.schedule == "warmup_cosine"

    @property
    def plain(self) -> bool:
        """The paper's recipe: Adam at a constant learning rate, no clipping."""
        return (self.name, self.schedule, self.clip) == ("adam", "none", None)

    def optimizer(
        self, params: Iterable[nn.Parameter], lr: float, names: Iterable[str] = ()
    ) -> torch.optim.Optimizer:
        """The optimizer of `params` at learning rate `lr`; `names`, the parameters' names, are
        what decay_groups=mad reads."""
        params = list(params)
        if self.name == "adamw":
            groups = params
            if self.decay_groups == "mad":
                groups = mad_groups(list(zip(names, params, strict=True)), self.weight_decay)
            return torch.optim.AdamW(
                groups, lr=lr, betas=self.betas, eps=self.eps, weight_decay=self.weight_decay
            )
        if self.name == "adam":
            return torch.optim.Adam(params, lr=lr, betas=self.betas, eps=self.eps)
        raise ValueError(f"unknown optimizer {self.name!r}; choose adam or adamw")

    def scheduler(self, optimizer: torch.optim.Optimizer) -> Schedule | None:
        """The schedule of `optimizer`'s learning rate; None for a constant one."""
        if self.schedule == "none":
            return None
        if self.schedule == "cosine":
            return CosineAnnealingLR(optimizer, T_max=self.max_epochs, eta_min=self.min_lr)
        if self.schedule == "warmup_cosine":
            total = self.max_epochs * self.updates_per_epoch
            return LambdaLR(optimizer, WarmupCosine(self.warmup, total))
        raise ValueError(f"unknown schedule {self.schedule!r}; choose none, cosine, warmup_cosine")

    def lightning_schedule(self, schedule: Schedule) -> dict[str, Any]:
        """`schedule` as configure_optimizers gives it to Lightning, which steps it at this
        interval under automatic optimization and keeps it in the checkpoints in either mode."""
        return {"scheduler": schedule, "interval": "step" if self.per_update else "epoch"}

    def clip_gradients(self, params: Iterable[nn.Parameter]) -> None:
        """Scale the gradients of `params` to a total norm of at most `clip` (none: as they are)."""
        if self.clip is not None:
            torch.nn.utils.clip_grad_norm_(list(params), self.clip)

    def after_update(self, schedule: Schedule | None, epoch_ends: bool) -> None:
        """Step `schedule` after an update: a per-update schedule always, a per-epoch one after
        the epoch's last update (`epoch_ends`)."""
        if schedule is not None and (self.per_update or epoch_ends):
            schedule.step()
