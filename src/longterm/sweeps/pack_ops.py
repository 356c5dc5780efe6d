"""The aten ops of one update of a pack, counted on the meta device (models/ops.py): what
tests/test_ops.py bounds and bench/throughput.py reports for stacked members."""

from longterm.models.ops import counted_ops
from longterm.sweeps.pack_module import PackModule, PackOptimizer
from longterm.training.module import MemoryTaskModule


def pack_update_ops(members: list[MemoryTaskModule], batch: tuple, vectorise: bool) -> int:
    """aten ops of one update of a pack of `members` (one seed) on `batch` (x, y, mask), both
    moved to the meta device first (longterm.models.ops); `vectorise`: the stacked path."""
    module = PackModule(members, [0] * len(members), vectorise, same_shapes=True).to("meta")
    module.optimizer = PackOptimizer([m.configure_optimizers() for m in members], module)
    module.on_train_start()
    batches = (tuple(t.to("meta") for t in batch),)

    def update() -> None:
        module.optimizer.zero_grad(set_to_none=True)
        module.optimizer.step(lambda: module.training_step(batches, 0).backward())

    return counted_ops(update)
