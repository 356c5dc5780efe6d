"""The paper's feed-forward network with attention (Raffel & Ellis 2015, §2.2).

h_t = LReLU(W_xh x_t + b_xh) on every step independently, then attention [eq. 1] or mean [eq. 2]
pooling over time, then the two-layer head. With D = 100 and two input features the model has
2*100 + 100 (encoder) + 100 + 1 (attention) + 100*100 + 100 + 100 + 1 (head) = 10,602 parameters
with attention pooling and 10,501 with mean pooling. Streamed one step at a time (the step form,
models/state.py), the encoder carries nothing: the state is the readout's alone.
"""

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.models.fused import encode_pool, encode_pool_members, plan
from longterm.models.init import init_linear_
from longterm.models.readouts import AttentionPooling
from longterm.models.sequence import SequenceModel


class StepEncoder(nn.Module):
    """h_t = LReLU(W_xh x_t + b_xh):  x (B, T, F) -> h (B, T, D)."""

    causal = True  # each step alone

    def __init__(
        self, in_features: int, dim: int, negative_slope: float = 0.01, init: str = "paper"
    ):
        super().__init__()
        self.proj = init_linear_(nn.Linear(in_features, dim), init)
        self.negative_slope = negative_slope

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return F.leaky_relu(self.proj(x), self.negative_slope)

    def step(self, x_t: Tensor, state: tuple[()] | None) -> tuple[Tensor, tuple[()]]:
        """x_t (B, F) -> h_t (B, D): each step alone, so nothing is carried."""
        return self.forward(x_t), ()

    def state_size(self, length: int) -> int:
        return 0


class FusedSequenceModel(SequenceModel):
    """The parameters of SequenceModel(StepEncoder, pooling, head), with the encoder and the
    pooling computed in one pass (models/fused.py). `impl` (model.impl: auto or fused) is how it
    runs on each device, decided at every forward by models/fused.py's `plan` (the model is built
    on the CPU and moved later), which may also run the modules as written. Its state dict is the
    reference model's, so checkpoints load into either."""

    def __init__(
        self,
        encoder: nn.Module,
        readout: nn.Module,
        head: nn.Module,
        impl: str = "auto",
        embedding: nn.Module | None = None,
    ):
        super().__init__(encoder, readout, head, embedding)
        self.impl = impl

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        enc, pool = self.encoder, self.readout
        x = self.embed(x)  # token inputs: embedded first, then the same pass over features
        attention = isinstance(pool, AttentionPooling)
        backend, chunk = plan(self.impl, x, enc.proj.out_features, attention)
        if backend == "reference":
            return self.head(pool(enc(x, mask), mask))
        keep = mask if pool.mask_padding else None
        score = (pool.score.weight, pool.score.bias) if attention else ()
        W, b, slope = enc.proj.weight, enc.proj.bias, enc.negative_slope
        c = encode_pool(x, keep, W, b, slope, *score, backend=backend, chunk=chunk)
        return self.head(c)


def same_shape(models: list[nn.Module], x: Tensor) -> bool:
    """Whether `forward_members` can run these models on batches like x: fused models of one
    shape (features, units, pooling, slope, padding rule), x on the CPU needing no gradient."""
    if not all(isinstance(m, FusedSequenceModel) for m in models) or x.device.type != "cpu":
        return False
    if x.requires_grad or x.dtype not in (torch.float32, torch.float64):
        return False
    kinds = {
        (
            m.encoder.proj.weight.shape,
            m.encoder.negative_slope,
            type(m.readout),
            m.readout.mask_padding,
            m.encoder.proj.weight.dtype,
        )
        for m in models
    }
    return len(kinds) == 1


def forward_members(
    models: list[FusedSequenceModel], xs: list[Tensor], masks: list[Tensor | None]
) -> list[Tensor]:
    """Each model's `forward(x_m, mask_m)` on the CPU (models of one shape, `same_shape`): the
    encoders and poolings of all in one call of the compiled kernels per pass
    (fused.encode_pool_members), the heads one after another; each output, and each gradient,
    that of the model's own forward to the bit."""
    pools = [m.readout for m in models]
    attention = isinstance(pools[0], AttentionPooling)
    keeps = [mask if pool.mask_padding else None for mask, pool in zip(masks, pools, strict=True)]
    projections = [m.encoder.proj for m in models]
    score = ([p.score.weight for p in pools], [p.score.bias for p in pools]) if attention else ()
    slope = models[0].encoder.negative_slope
    Ws, bs = [p.weight for p in projections], [p.bias for p in projections]
    cs = encode_pool_members(xs, keeps, Ws, bs, slope, *score)
    return [m.head(c) for m, c in zip(models, cs, strict=True)]
