"""The Adam steps of a pack's members on the CPU in a few ops for all of them (launcher=packed,
sweeps/pack.py): the parameters and the Adam state (exp_avg, exp_avg_sq) of the members that
train are views of flat buffers, one of each, so one op of Adam's arithmetic updates every member.

Exact: each member's own Adam is `torch.optim.Adam` in its single-tensor form, what a run alone
takes on the CPU, and this is that form's arithmetic op for op, with the same scalars:

    t += 1;  m.lerp_(g, 1 - b1);  v.mul_(b2).addcmul_(g, g, value=1 - b2)
    p.addcdiv_(m, (v.sqrt() / sqrt(1 - b2^t)).add_(eps), value=-lr / (1 - b1^t))

An elementwise op computes each number alone, whatever its place in a tensor, so a member's
numbers are those of its run alone (tests/test_packed.py); the last op, whose scalar holds the
member's learning rate, runs once per member on its slice. Each parameter keeps a `step` tensor
of its own, as torch's Adam keeps it, each a view of one tensor that one op counts. When the
members that train change (one stops), the buffers are laid again for those that go on; the
member that left keeps its views of the old buffers, unchanged from then on. A member's tensors
are views: its checkpoints copy them (sweeps/stacked.py: own_tensors).
"""

import torch
from torch import Tensor

ALIGN = 64  # bytes: where PyTorch's CPU allocator starts every tensor


def step_dtype() -> torch.dtype:
    """The dtype of the `step` Adam keeps for a parameter (torch.optim.Adam on the CPU)."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


# The settings of torch.optim.Adam whose arithmetic this is (conf/train.yaml's optim: betas, eps)
PLAIN = {
    "amsgrad": False,
    "weight_decay": 0,
    "maximize": False,
    "foreach": None,
    "capturable": False,
    "differentiable": False,
    "fused": None,
    "decoupled_weight_decay": False,
}


def plain_adam(optimizers: list[torch.optim.Optimizer]) -> bool:
    """Whether every optimizer is a CPU torch.optim.Adam of one group, with PLAIN settings, one
    float learning rate, and the same betas, eps and dtype as the others."""
    if not all(type(o) is torch.optim.Adam and len(o.param_groups) == 1 for o in optimizers):
        return False
    groups = [o.param_groups for o in optimizers]
    first = groups[0][0]
    for (group,) in groups:
        if any(group.get(key, value) not in (value, False) for key, value in PLAIN.items()):
            return False
        if not isinstance(group["lr"], float) or isinstance(group["betas"][0], Tensor):
            return False
        if (group["betas"], group["eps"]) != (first["betas"], first["eps"]):
            return False
        for p in group["params"]:
            if p.device.type != "cpu" or p.dtype != first["params"][0].dtype:
                return False
    return True


class FlatAdam:
    """Adam's step of the members `members` of `optimizers` (plain_adam) on flat buffers."""

    def __init__(self, optimizers: list[torch.optim.Adam]):
        self.optimizers = optimizers
        group = optimizers[0].param_groups[0]
        self.betas, self.eps = group["betas"], group["eps"]
        self.members: list[int] = []

    def params(self, member: int) -> list[Tensor]:
        return self.optimizers[member].param_groups[0]["params"]

    @torch.no_grad()
    def lay(self, members: list[int]) -> None:
        """The buffers of `members`' parameters and states, their own tensors views of them (a
        fresh member's state made as Adam makes it at its first step). Each tensor starts on a
        64-byte boundary, as a tensor of its own does: a matrix product (the head's) may round
        otherwise at another alignment; the zeros between them stay zeros."""
        params, states = [], []
        for member in members:
            state = self.optimizers[member].state
            for p in self.params(member):
                if not state[p]:
                    state[p]["step"] = torch.tensor(0.0, dtype=step_dtype())
                    for key in ("exp_avg", "exp_avg_sq"):
                        state[p][key] = torch.zeros_like(p, memory_format=torch.preserve_format)
                params.append(p)
                states.append(state[p])
        self.pads = [p.new_zeros(-p.numel() % (ALIGN // p.element_size())) for p in params]
        self.param = self.flat(params)
        self.exp_avg, self.exp_avg_sq = (
            self.flat([s[key] for s in states]) for key in ("exp_avg", "exp_avg_sq")
        )
        start, self.slices = 0, []
        tensors = iter(zip(params, states, self.pads, strict=True))
        for member in members:
            first = start
            for _ in self.params(member):
                p, state, pad = next(tensors)
                end = start + p.numel()
                p.data = self.param[start:end].view_as(p)
                state["exp_avg"] = self.exp_avg[start:end].view_as(p)
                state["exp_avg_sq"] = self.exp_avg_sq[start:end].view_as(p)
                start = end + pad.numel()
            self.slices.append(slice(first, start))
        self.steps = torch.stack([s["step"] for s in states])
        for i, state in enumerate(states):
            state["step"] = self.steps[i]
        self.members, self.all_params = list(members), params

    def flat(self, tensors: list[Tensor]) -> Tensor:
        """The tensors (one per parameter) one after another, each followed by its padding."""
        return torch.cat(
            [t for x, pad in zip(tensors, self.pads, strict=True) for t in (x.reshape(-1), pad)]
        )

    @torch.no_grad()
    def step(self, members: list[int]) -> bool:
        """One Adam step of `members`; False (nothing done) when a parameter has no gradient,
        which Adam alone would skip: the members' own optimizers then step."""
        if members != self.members:
            self.lay(members)
        if any(p.grad is None for p in self.all_params):
            return False
        (b1, b2), grad = self.betas, self.flat([p.grad for p in self.all_params])
        self.steps += 1  # each parameter's own `step_t += 1`
        self.exp_avg.lerp_(grad, 1 - b1)
        self.exp_avg_sq.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        counts = [self.optimizers[m].state[self.params(m)[0]]["step"].item() for m in members]
        if len(set(counts)) == 1:  # members that train together stand at the same step
            shared = self.denominator(self.exp_avg_sq, counts[0])
        for member, where, t in zip(members, self.slices, counts, strict=True):
            denom = shared[where] if len(set(counts)) == 1 else None
            if denom is None:
                denom = self.denominator(self.exp_avg_sq[where], t)
            lr = self.optimizers[member].param_groups[0]["lr"]
            self.param[where].addcdiv_(self.exp_avg[where], denom, value=-(lr / (1 - b1**t)))
        return True

    def denominator(self, exp_avg_sq: Tensor, t: float) -> Tensor:
        """Adam's `(exp_avg_sq.sqrt() / bias_correction2**0.5).add_(eps)` at step t."""
        return (exp_avg_sq.sqrt() / (1 - self.betas[1] ** t) ** 0.5).add_(self.eps)
