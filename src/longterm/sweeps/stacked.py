"""A pack's members as stacked tensors (launcher=packed on an accelerator, longterm.sweeps.pack):
one update of every member in a number of ops that does not grow with the members.

Each stacked parameter is (M, ...): member m's own parameter is a view of row m, and so are the
tensors of its own Adam state (step, exp_avg, exp_avg_sq), so the member's checkpoints, callbacks
and validation read its current values with no copy. An update is
- one forward and backward of the reference model (models/sequence.py: encoder, pooling, head as
  written) over all members at once (torch.func.vmap of torch.func.functional_call), the batch of
  each member's seed picked by one index;
- one Adam step per stacked tensor, with a learning rate per member, written as Adam's arithmetic
  (torch.optim.Adam, the single-tensor form) on tensors, masked so that members that have stopped
  stay as they are.

Not equal to the bit to the runs alone: vmap batches the matrix products, and the reference
model's ops are not the fused kernels'. tests/test_packed.py bounds the difference on the CPU
(`launcher.vectorise=true`) and counts the ops on the meta device.
"""

from typing import Any

import torch
from torch import Tensor
from torch.func import functional_call, vmap

from longterm.models.sequence import SequenceModel
from longterm.training.module import MemoryTaskModule


def reference(module: MemoryTaskModule) -> SequenceModel:
    """The module's network as written (its parameters, its names), whatever its implementation."""
    net = module.net
    return SequenceModel(net.encoder, net.readout, net.head)


class StackedMembers:
    """The members' parameters and Adam states stacked (see the module docstring); `optimizers`
    are the members' own Adam, whose state (a resumed run's, or none yet) is taken over."""

    def __init__(self, members: list[MemoryTaskModule], optimizers: list[torch.optim.Adam]):
        self.template, self.model = members[0], reference(members[0])
        own = [dict(reference(m).named_parameters()) for m in members]
        self.names = list(own[0])
        group = optimizers[0].param_groups[0]
        self.betas, self.eps = group["betas"], group["eps"]
        device = own[0][self.names[0]].device
        self.lr = torch.tensor([o.param_groups[0]["lr"] for o in optimizers], device=device)
        states = [
            [o.state.get(p[n], {}) for n in self.names]
            for o, p in zip(optimizers, own, strict=True)
        ]
        with torch.no_grad():
            self.params = {n: torch.stack([p[n] for p in own]).requires_grad_() for n in self.names}
            self.steps = torch.tensor(
                [float(s[0]["step"]) if s[0] else 0.0 for s in states]
            )  # on the host, as Adam keeps `step`
            self.exp_avg, self.exp_avg_sq = (
                {
                    n: torch.stack(
                        [
                            s[k][key] if s[k] else torch.zeros_like(p[n])
                            for s, p in zip(states, own, strict=True)
                        ]
                    )
                    for k, n in enumerate(self.names)
                }
                for key in ("exp_avg", "exp_avg_sq")
            )
        for m, (optimizer, params) in enumerate(zip(optimizers, own, strict=True)):
            for n in self.names:
                params[n].data = self.params[n].data[m]
                optimizer.state[params[n]] = {
                    "step": self.steps[m],
                    "exp_avg": self.exp_avg[n][m],
                    "exp_avg_sq": self.exp_avg_sq[n][m],
                }

    def member_loss(self, params: dict[str, Tensor], x: Tensor, y: Tensor, mask: Tensor) -> Tensor:
        """One member's loss on its batch (the template module's loss)."""
        out = functional_call(self.model, params, (x, mask))
        return self.template.loss(out if self.template.classify else out.squeeze(-1), y)

    def losses(self, x: Tensor, y: Tensor, mask: Tensor) -> Tensor:
        """Every member's loss (M,) on its batch: x (M, B, T, F), y (M, B), mask (M, B, T)."""
        return vmap(self.member_loss)(self.params, x, y, mask)

    def zero_grad(self) -> None:
        for p in self.params.values():
            p.grad = None

    @torch.no_grad()
    def step(self, active: Tensor, active_host: Tensor) -> None:
        """Adam's update of the members in `active` (M,) bool on the device (`active_host` the
        same on the host); the others are left as they are."""
        (b1, b2), M = self.betas, len(self.lr)
        self.steps += active_host.to(self.steps.dtype)
        steps = self.steps.to(self.lr.device)
        step_size = self.lr / (1 - b1**steps)
        bias2_sqrt = (1 - b2**steps).sqrt()
        for n, p in self.params.items():
            if p.grad is None:
                continue
            shape = (M,) + (1,) * (p.dim() - 1)
            keep, g = active.view(shape), p.grad
            exp_avg, exp_avg_sq = self.exp_avg[n], self.exp_avg_sq[n]
            exp_avg.copy_(torch.where(keep, exp_avg.lerp(g, 1 - b1), exp_avg))
            exp_avg_sq.copy_(torch.where(keep, exp_avg_sq * b2 + (1 - b2) * g * g, exp_avg_sq))
            denom = exp_avg_sq.sqrt() / bias2_sqrt.view(shape) + self.eps
            p.copy_(torch.where(keep, p - step_size.view(shape) * exp_avg / denom, p))


def own_tensors(checkpoint: dict[str, Any]) -> None:
    """A checkpoint's tensors copied into storages of their own: a stacked member's parameters
    and Adam state are views of the pack's tensors, which torch.save would write whole (and a
    run resumed from it would share one `step` between its parameters)."""
    checkpoint["state_dict"] = {k: v.clone() for k, v in checkpoint["state_dict"].items()}
    for state in checkpoint.get("optimizer_states", []):
        state["state"] = {
            i: {k: v.clone() if isinstance(v, Tensor) else v for k, v in s.items()}
            for i, s in state["state"].items()
        }
