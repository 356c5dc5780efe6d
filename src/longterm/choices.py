"""The allowed values of every choice a user makes, in one module with no imports: the schema
(config.py), the data and the models all read them from here."""

TASKS = (
    "addition",
    "multiplication",
    "xor",
    "xor_classification",
    "temporal_order",
    "temporal_order3",
    "variable_tracking",
    "associative_recall",
)  # task.name (tasks/__init__.py: GENERATORS has one generator for each)
LOSSES = ("mse", "cross_entropy")  # task.loss
LENGTHS = ("per_sequence", "per_batch")  # data.lengths
POOLS = ("attention", "mean", "last")  # pool.name
PER_STEP_MODELS = ("feedforward", "rnn", "lstm", "linear_memory")  # model.name, the common keys
ATTENTION_MODELS = ("all_attention", "transformer", "feedback")  # and heads, layers, attn_span
MODELS = PER_STEP_MODELS + ATTENTION_MODELS  # model.name
DATA = ("fixed", "variable")  # data.name (conf/data/*.yaml)
INITS = ("paper", "torch")  # model.init
NORMS = ("post", "pre")  # model.norm (transformer, all_attention)
IMPLS = ("auto", "reference", "fused")  # model.impl (built_impl; models/fused.py: plan)
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps", "tpu")  # trainer.accelerator

# model.impl=fused: the feedforward model's encoder and pooling in one pass (models/fused.py)
FUSED_MODEL = "feedforward"
FUSED_POOLS = ("attention", "mean")
# A count resolved when the run starts: data.num_workers (data.py: feed_workers) and
# callbacks.stop_on_divergence.every_n_updates (callbacks.py: StopOnDivergence).
AUTO = "auto"


def impl_error(model: str, impl: str, pool: str) -> str | None:
    """Why `model.impl=impl` cannot build `model` with `pool`, in one line; None if it can."""
    if impl not in IMPLS:
        return f"model.impl={impl!r} is invalid: choose one of {', '.join(IMPLS)}"
    if impl == "fused" and model != FUSED_MODEL:
        return f"model.impl=fused is invalid for model={model}: use model.impl=reference"
    if impl == "fused" and pool not in FUSED_POOLS:
        return (
            f"model.impl=fused is invalid with pool={pool}: "
            f"use pool={'|'.join(FUSED_POOLS)} or model.impl=reference"
        )
    return None


def built_impl(model: str, impl: str, pool: str) -> str:
    """The implementation `model.impl=impl` builds: `auto` is `fused` wherever fused can build
    the model and pooling (the feedforward model with attention or mean pooling) and `reference`
    for every other model and pooling; which backend fused runs is decided per device at
    forward time (models/fused.py: plan)."""
    if impl != "auto":
        return impl
    return "fused" if model == FUSED_MODEL and pool in FUSED_POOLS else "reference"
