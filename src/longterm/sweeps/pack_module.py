"""A pack as Lightning objects (sweeps/pack.py): the data (each seed's stream of training batches
and its validation set, zipped), the module holding the members' modules side by side, and the
one optimizer Lightning steps, each member's own optimizer inside it, with its recipe's
clipping and schedule (training/recipes.py).

Shapes: a training item is a tuple of batches, one per seed (x (B, T, F), y (B,), mask (B, T)).
"""

from collections.abc import Iterator, Mapping
from functools import reduce
from typing import Any

import pytorch_lightning as L
import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from longterm.choices import AUTO
from longterm.models.feedforward import forward_members, same_shape
from longterm.sweeps.flat_adam import FlatAdam, plain_adam
from longterm.sweeps.stacked import StackedMembers, own_tensors
from longterm.training.data import KeyedBatches, TaskDataModule, keyed_loader
from longterm.training.library_internals import epoch_ends
from longterm.training.module import MemoryTaskModule, PlainLoopModule


class StreamBatches(Dataset):
    """Item (epoch, index): the batch of that key from each seed's stream."""

    def __init__(self, streams: list[KeyedBatches]):
        self.streams = streams

    def __getitem__(self, key: tuple[int, int]) -> tuple:
        return tuple(stream[key] for stream in self.streams)


class PackData(L.LightningDataModule):
    """The data of a pack: each seed's training batches and validation set (data.py), zipped."""

    def __init__(self, streams: list[TaskDataModule]):
        super().__init__()
        self.streams = streams

    def setup(self, stage: str | None = None) -> None:
        for stream in self.streams:
            stream.setup(stage)

    def device_type(self) -> str:
        return "cpu" if self.trainer is None else self.trainer.strategy.root_device.type

    def train_dataloader(self) -> DataLoader:
        first = self.streams[0]
        batches = StreamBatches([s.keyed_batches() for s in self.streams])
        return keyed_loader(batches, first.batches_per_epoch, first.num_workers, self.device_type())

    def val_dataloader(self) -> DataLoader:
        batches = list(zip(*(s.validation for s in self.streams), strict=True))
        return DataLoader(batches, batch_size=None, pin_memory=self.device_type() == "cuda")


class PackModule(PlainLoopModule):
    """The members' modules side by side; `active` lists the members that train now, and
    member i reads the batches of seed stream `streams[i]`. Logs member i's validation metrics
    as `<i>/<name>` (PackLogger hands them to the member's own logger); its training loss is
    logged by MemberHooks (one `self.log` per member and step would cost more than the step).

    `vectorise`: `auto` stacks the members (longterm.sweeps.stacked) on an accelerator, `True` on
    any device, `False` never; only where every seed's batches have one shape (`same_shapes`: fixed
    lengths). Elsewhere the members run one after another, each as its run alone (exact)."""

    def __init__(
        self,
        members: list[MemoryTaskModule],
        streams: list[int],
        vectorise: bool | str = "auto",
        same_shapes: bool = False,
    ):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.streams = streams
        self.vectorise, self.same_shapes = vectorise, same_shapes
        self.active: list[int] = list(range(len(members)))
        self.losses: Mapping[int, Tensor] = {}  # each training member's loss at the last step
        self.optimizer: PackOptimizer | None = None
        self.stacked: StackedMembers | None = None
        self.together = False  # the members' kernels in one call (the exact CPU path)
        self.flat: FlatAdam | None = None  # the members' Adam steps in one (the exact CPU path)

    def on_train_start(self) -> None:
        # after Lightning has restored the members' weights and Adam states (a resumed pack)
        assert self.optimizer is not None
        wanted = self.vectorise is True or (self.vectorise == AUTO and self.device.type != "cpu")
        # the stacked update is Adam at a constant rate (sweeps/stacked.py): other recipes step
        # each member's own optimizer
        if wanted and self.same_shapes and all(m.recipe.plain for m in self.members):
            self.stacked = StackedMembers(list(self.members), self.optimizer.optimizers)
            self.stream_index = torch.tensor(self.streams, device=self.device)
            self.activity_changed()
        else:
            probe = next(self.parameters()).detach()
            self.together = same_shape([m.net for m in self.members], probe)
            if plain_adam(self.optimizer.optimizers):
                self.flat = FlatAdam(self.optimizer.optimizers)
        for member in self.members:  # its tensors are views of the pack's
            member.shared_tensors = self.stacked is not None or self.flat is not None

    def activity_changed(self) -> None:
        """`active` has changed: the stacked path's masks follow (one copy, not one per update)."""
        if self.stacked is not None:
            host = torch.zeros(len(self.members), dtype=torch.bool)
            host[self.active] = True
            self.active_host, self.active_mask = host, host.to(self.device)

    def training_step(self, batches: tuple, batch_idx: int) -> Tensor | None:
        return self.update(lambda: self.pack_loss(batches))

    def pack_loss(self, batches: tuple) -> Tensor | None:
        """The sum of the training members' losses on their batches (None when none trains)."""
        if self.stacked is not None:
            x, y, mask = (torch.stack(t)[self.stream_index] for t in zip(*batches, strict=True))
            losses = self.stacked.losses(x, y, mask)
            self.losses = Rows(losses, list(self.active))
            # d(sum)/d(loss_i) = 1; a member that stopped is left out (its loss may be NaN)
            return torch.where(self.active_mask, losses, 0).sum() if self.active else None
        self.losses = {}
        if self.together and self.active:  # every member's kernels in one call, each as alone
            own = [batches[self.streams[i]] for i in self.active]
            nets = [self.members[i].net for i in self.active]
            outs = forward_members(nets, [b[0] for b in own], [b[2] for b in own])
            for i, out, (_, y, _) in zip(self.active, outs, own, strict=True):
                self.losses[i] = self.members[i].loss(self.members[i].prediction(out), y)
        for i in [] if self.together else self.active:
            batch = batches[self.streams[i]]
            self.losses[i] = self.members[i].step_loss(batch)
        # d(sum)/d(loss_i) = 1 exactly: each member's gradients are those of its run alone
        return reduce(torch.add, self.losses.values()) if self.losses else None

    def validation_step(self, batches: tuple, batch_idx: int) -> None:
        for i in self.active:
            batch = batches[self.streams[i]]
            for name, value in self.members[i].val_metrics(batch).items():
                self.log(f"{i}/{name}", value, batch_size=len(batch[1]))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        assert self.optimizer is not None
        return self.optimizer


class Rows(Mapping):
    """Member i -> row i of `values` (M,), for the members listed; read only when asked, so the
    stacked update issues no op per member."""

    def __init__(self, values: Tensor, members: list[int]):
        self.values, self.members = values, members

    def __getitem__(self, i: int) -> Tensor:
        if i not in self.members:
            raise KeyError(i)
        return self.values[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)


class PackOptimizer(torch.optim.Optimizer):
    """The one optimizer Lightning steps: each member's own (its run's), for the members that
    trained in this step, each with its own recipe as its run alone has it: its gradients
    clipped to its own norm before the step, its own schedule stepped after it
    (training/recipes.py; MemoryTaskModule.before_step, after_step). Its state is the
    members' states, in member order."""

    def __init__(self, optimizers: list[torch.optim.Optimizer], module: PackModule):
        self.optimizers, self.module = optimizers, module
        params = [p for o in optimizers for group in o.param_groups for p in group["params"]]
        super().__init__(params, {})

    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        stacked = self.module.stacked
        if stacked is not None:
            stacked.step(self.module.active_mask, self.module.active_host)
            return loss
        trained, members = list(self.module.losses), self.module.members
        for i in trained:
            members[i].before_step()
        flat = self.module.flat
        if flat is None or not flat.step(trained):
            for i in trained:
                self.optimizers[i].step()
        scheduled = [i for i in trained if members[i].schedule is not None]
        if scheduled:  # (a pack's update counted on the meta device has no Trainer)
            ends = epoch_ends(self.module.trainer)
            for i in scheduled:
                members[i].after_step(ends)
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self.module.stacked is not None:
            self.module.stacked.zero_grad()
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {"members": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for optimizer, state in zip(self.optimizers, state_dict["members"], strict=True):
            optimizer.load_state_dict(state)


class OwnTensors(L.Callback):
    """A member's checkpoint written with tensors of their own where they are views of the
    pack's (stacked members, FlatAdam; longterm.sweeps.stacked.own_tensors)."""

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: Any, checkpoint: dict) -> None:
        if getattr(pl_module, "shared_tensors", False):
            own_tensors(checkpoint)
