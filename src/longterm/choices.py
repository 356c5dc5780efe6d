"""The allowed values of every choice a user makes, in one module with no imports: the schema
(config.py), the data and the models all read them from here."""

SEQUENCE_TASKS = (
    "addition",
    "multiplication",
    "xor",
    "xor_classification",
    "temporal_order",
    "temporal_order3",
    "variable_tracking",
    "associative_recall",
)  # one target per sequence, y (B,)
STEP_TASKS = ("algorithmic", "fixed_knowledge")  # a target per step, y (B, T), NO_TARGET elsewhere
TASKS = SEQUENCE_TASKS + STEP_TASKS  # task.name (tasks/__init__.py: GENERATORS has one for each)
LOSSES = ("mse", "cross_entropy")  # task.loss
LENGTHS = ("per_sequence", "per_batch")  # data.lengths
POOLS = ("attention", "mean", "last", "per_step")  # pool.name
ORDER_BLIND_POOLS = ("attention", "mean")  # pool the sequence as a set (Raffel & Ellis §2.4)
PER_STEP_MODELS = ("feedforward", "rnn", "lstm", "linear_memory")  # model.name, the common keys
ATTENTION_MODELS = ("all_attention", "transformer", "feedback")  # and heads, layers, attn_span
MODELS = PER_STEP_MODELS + ATTENTION_MODELS  # model.name
# pool=per_step reads every step, so its encoder must be causal: state t depends on steps <= t.
# Every model here is (tests/test_per_step.py checks it): feedforward (each step alone), the
# unidirectional recurrences, and the attention models, whose scores are masked to the past.
CAUSAL_MODELS = MODELS
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


def targets_error(task: str, pool: str, model: str, loss: str) -> str | None:
    """Why `pool` cannot read `model` for `task`'s targets, in one line; None if it can. A task
    that labels steps needs `pool=per_step` on a causal model (an order-blind pooling gives one
    output per sequence and cannot tell which step it is at) and cross-entropy (its labels are
    classes); a task with one target per sequence needs a pooling over time."""
    steps = ", ".join(STEP_TASKS)
    if task in STEP_TASKS and loss != "cross_entropy":
        return f"task.loss={loss} is invalid with task={task}: its per-step labels are classes"
    if task in STEP_TASKS and pool in ORDER_BLIND_POOLS:
        return (
            f"pool={pool} is invalid with task={task}: {pool} pooling is blind to order and gives "
            "one output per sequence, and this task labels steps; use pool=per_step"
        )
    if task in STEP_TASKS and pool != "per_step":
        return f"pool={pool} is invalid with task={task}: this task labels steps; use pool=per_step"
    if pool == "per_step" and task not in STEP_TASKS:
        return (
            f"pool=per_step is invalid with task={task}: it has one target per sequence; use "
            f"pool=last|attention|mean, or a task that labels steps ({steps})"
        )
    if pool == "per_step" and model not in CAUSAL_MODELS:
        return (
            f"pool=per_step is invalid with model={model}: its state at a step sees later steps; "
            f"use a causal model ({', '.join(CAUSAL_MODELS)})"
        )
    return None
