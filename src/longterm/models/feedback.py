"""Feedback Transformer (Fan et al. 2020, "Addressing Some Limitations of Transformers with
Feedback Memory"): every layer at step t attends to one memory per past step, built from all
layers of that step, so the lowest layer of step t sees the highest layer of step t - 1.

    x_t^0 = W_in x_t + b_in
    a_t^l = x_t^{l-1} + W_o^l Attn(W_q^l LN(x_t^{l-1}),  K_t, V_t)        l = 1..L
    x_t^l = a_t^l + W_2^l ReLU(W_1^l LN(a_t^l))
    m_t = sum_{l=0..L} softmax(w)_l x_t^l,    w = 0 at the start (uniform over layers)
    K_t, V_t = W_k LN(m_{t-S}), ..., W_k LN(m_{t-1})  (and W_v)
    h_t = LN(x_t^L)

Each layer of step t attends to the memories of the S = `attn_span` steps before it, m_{t-S..t-1},
and not to its own step's lower layer: the paper's equations and its code (whose initial cache
also gives the first steps zero memories to attend to, m_t = 0 for t < 0, as here). The current
step reaches each layer through the residual stream. The relative position term
(models/attention.py) covers offsets 1..S. `share_kv` (default): one W_k, W_v for all layers
(the paper's shared key-value projections), so each memory is projected once; false: one pair
per layer.

The steps run one after the other, each on the whole batch. Keys and values live in preallocated
(B, H, S + T, d_h) buffers, written in place one slot per step and read as windows that alias the
buffer (`SlidingWindow`), so no step copies or concatenates its context.

The step form (models/state.py) runs one step of the same layers and carries the keys and values
of the memories of the last min(length, S) steps (the zero memories before the start are
constants, not state): 2 K D min(length, S) numbers per sequence, K as below.

x (B, T, F) -> h (B, T, D); parameters F*D + D + L * (2 D^2 + S*D + 2 D*d_ff) + K * 2 D^2 + L + 1
with K = 1 (share_kv) or L; then the readout (`pool=last` by default) and the paper's head. Same
norm and bias conventions as models/transformer.py.
"""

import math

import torch
from pydantic import PositiveInt
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.attention import check_heads, norm, position_scores
from longterm.models.init import init_linear_


class SlidingWindow:
    """Keys or values of the memories of a batch: slot S + t holds step t's, slots 0..S-1 the
    zero memories before the start; step t reads slots t..t + S - 1 (steps t - S..t - 1)."""

    def __init__(self, batch: int, n_heads: int, steps: int, span: int, d_h: int, like: Tensor):
        self.span = span
        self.data = like.new_zeros(batch, n_heads, span + steps, d_h)
        self.grad = torch.zeros_like(self.data)  # d loss / d data, filled during backward

    def view(self, t: int) -> Tensor:
        """The window of step t as a new tensor on the buffer's storage (its own version counter,
        so writing later slots does not invalidate it for backward)."""
        return self.data.new_empty(0).set_(self.data[:, :, t : t + self.span])

    def window(self, t: int, written: Tensor | None) -> Tensor:
        """Write step t - 1's vectors (B, H, d_h) in place; return step t's window
        (B, H, S, d_h)."""
        return self.view(0) if written is None else WriteThenRead.apply(written, self, t)


class WriteThenRead(torch.autograd.Function):
    """Forward: slot S + t - 1 <- step t - 1's vectors; return step t's window, which aliases the
    buffer. Backward: add the window's gradient into the gradient buffer and return the written
    slot's. That slot is read by the windows of steps t..t + S - 1, and every one of them lies on
    the path from this write to the loss (step t + 1's write depends on step t's window), so by
    the time autograd reaches this node their gradients are all in the buffer."""

    @staticmethod
    def forward(ctx, written: Tensor, buffer: SlidingWindow, t: int) -> Tensor:
        buffer.data[:, :, buffer.span + t - 1] = written
        ctx.buffer, ctx.t = buffer, t
        return buffer.view(t)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        buffer, t = ctx.buffer, ctx.t
        buffer.grad[:, :, t : t + buffer.span] += grad
        return buffer.grad[:, :, buffer.span + t - 1].clone(), None, None


class FeedbackLayer(nn.Module):
    """One step of one layer: x (B, D) and the window's keys and values (B, H, S, d_h) ->
    x' (B, D), a pre-norm attention sublayer then a pre-norm feed-forward sublayer."""

    def __init__(self, dim: int, n_heads: int, span: int, d_ff: int):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.pos = nn.Parameter(torch.randn(n_heads, span, dim // n_heads))  # p_1..p_S, N(0, 1)
        self.ff = nn.Sequential(
            nn.Linear(dim, d_ff, bias=False), nn.ReLU(), nn.Linear(d_ff, dim, bias=False)
        )

    def forward(self, x: Tensor, k: Tensor, v: Tensor) -> Tensor:
        q = self.q(norm(x)).unflatten(-1, (self.n_heads, -1))[:, :, None]  # (B, H, 1, d_h)
        bias = position_scores(q, self.pos)[:, :, 0].flip(-1)  # slot s holds offset S - s
        # Written out for one query: products and sums over the window read it in place, where
        # scaled_dot_product_attention's CPU path would scale and keep a copy of it, and batched
        # one-row matrix products (and their backward) run as B*H tiny BLAS calls.
        a_t = torch.softmax(((q * k).sum(-1) + bias) / math.sqrt(q.shape[-1]), dim=-1)
        a = x + self.out((a_t[..., None] * v).sum(dim=2).flatten(1))  # (B, H, S) -> (B, D)
        return a + self.ff(norm(a))


class FeedbackEncoder(nn.Module):
    """x (B, T, F) -> h (B, T, D), step by step, every layer reading the memories m_{t-S..t-1}."""

    causal = True  # step t reads the memories of earlier steps only

    def __init__(
        self,
        in_features: int,
        dim: int,
        heads: PositiveInt,
        layers: PositiveInt,
        attn_span: PositiveInt,
        d_ff: PositiveInt,
        share_kv: bool = True,
        init: str = "paper",
    ):
        check_heads(dim, heads)
        super().__init__()
        self.n_heads, self.span = heads, attn_span
        self.embed = init_linear_(nn.Linear(in_features, dim), init)
        self.layers = nn.ModuleList(
            FeedbackLayer(dim, heads, attn_span, d_ff) for _ in range(layers)
        )
        n_kv = 1 if share_kv else layers
        self.kv = nn.ModuleList(nn.Linear(dim, 2 * dim, bias=False) for _ in range(n_kv))
        self.layer_weights = nn.Parameter(torch.zeros(layers + 1))  # w, over x^0..x^L

    def memory(self, states: list[Tensor]) -> Tensor:
        """m_t = sum_l softmax(w)_l x_t^l:  L + 1 states (B, D) -> (B, D)."""
        return torch.einsum("l,lbd->bd", self.layer_weights.softmax(0), torch.stack(states))

    def forward(
        self, x: Tensor, mask: Tensor | None = None, window: type[SlidingWindow] = SlidingWindow
    ) -> Tensor:
        B, T, _ = x.shape
        x0 = self.embed(x)
        d_h = x0.shape[-1] // self.n_heads
        shape = (B, self.n_heads, T, self.span, d_h, x0)
        buffers = [(window(*shape), window(*shape)) for _ in self.kv]  # keys, values
        memory_kv: list[tuple[Tensor | None, Tensor | None]] = [(None, None)] * len(self.kv)
        outputs = []
        for t in range(T):
            context = [
                (keys.window(t, k), values.window(t, v))
                for (keys, values), (k, v) in zip(buffers, memory_kv, strict=True)
            ]
            states = [x0[:, t]]
            for i, layer in enumerate(self.layers):
                states.append(layer(states[-1], *context[i % len(context)]))
            outputs.append(states[-1])
            if t + 1 < T:  # the last step's memory is never read
                m = norm(self.memory(states))
                memory_kv = [
                    tuple(p.unflatten(-1, (self.n_heads, d_h)) for p in proj(m).chunk(2, dim=-1))
                    for proj in self.kv
                ]
        return norm(torch.stack(outputs, dim=1))

    def step(
        self, x_t: Tensor, state: list[tuple[Tensor, Tensor]] | None
    ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """x_t (B, F) and, per key/value projection, the keys and values of the memories of the
        n <= S steps before, (B, H, n, d_h) each, oldest first -> h_t (B, D) and those with step
        t's memory added, keeping the last S."""
        x0 = self.embed(x_t)
        d_h = x0.shape[-1] // self.n_heads
        if state is None:
            empty = x0.new_zeros(x0.shape[0], self.n_heads, 0, d_h)
            state = [(empty, empty)] * len(self.kv)
        # the window of S slots, the zero memories before the start first
        context = [tuple(F.pad(s, (0, 0, self.span - s.shape[2], 0)) for s in kv) for kv in state]
        states = [x0]
        for i, layer in enumerate(self.layers):
            states.append(layer(states[-1], *context[i % len(context)]))
        m = norm(self.memory(states))
        new = []
        for proj, (k, v) in zip(self.kv, state, strict=True):
            k_t, v_t = (
                p.unflatten(-1, (self.n_heads, d_h))[:, :, None] for p in proj(m).chunk(2, -1)
            )
            k, v = torch.cat([k, k_t], dim=2), torch.cat([v, v_t], dim=2)
            new.append((k[:, :, -self.span :], v[:, :, -self.span :]))
        return norm(states[-1]), new

    def state_size(self, length: int) -> int:
        """2 K D min(length, S): the memories' keys and values, K pairs of projections."""
        return 2 * len(self.kv) * self.embed.out_features * min(length, self.span)
