"""The quick-run presets: the overrides a test's run starts from, and `quick` to change them."""

# A short run: 20 updates an epoch, two epochs, validation on 200 sequences, no progress bar.
QUICK = [
    "data.batches_per_epoch=20",
    "data.val_size=200",
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=10",
]


def quick(*changes: str, drop: tuple[str, ...] = (), base: list[str] = QUICK) -> list[str]:
    """`base` with `key=value` changes: a key it already sets takes the new value where it
    stands, any other key is added at the end; the keys in `drop` are left to the config."""
    values = dict(change.split("=", 1) for change in changes)
    kept = []
    for override in base:
        key = override.split("=", 1)[0]
        if key not in drop:
            kept.append(f"{key}={values.pop(key)}" if key in values else override)
    return kept + [f"{key}={value}" for key, value in values.items()]


# Epochs long enough that a process can be stopped part-way through one (about 2 s each).
LONGER = quick("data.batches_per_epoch=100")
# A few updates on short sequences: enough to run forward, backward and Adam on every model.
TINY = quick(
    "T0=20",
    "data.batch_size=8",
    "data.batches_per_epoch=3",
    "data.val_size=16",
    "trainer.max_epochs=1",
    "trainer.log_every_n_steps=1",
)
# Four updates an epoch, each one logged, on the reference pooling (nothing compiled per process).
FOUR_STEPS = quick(
    "data.batches_per_epoch=4",
    "data.val_size=100",
    "trainer.log_every_n_steps=1",
    "model.impl=reference",
)

# Two real runs of one sweep: one solved at its first epoch (a threshold every run passes), one
# that reaches its epoch limit unsolved (tests of the archive and of runs in progress).
TWO_THRESHOLDS = "callbacks.stop_when_solved.threshold=0.05,1.0"
