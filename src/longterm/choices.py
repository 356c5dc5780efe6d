"""The allowed values of every choice a user makes, in one module with no imports: the schema
(config/), the data and the models all read them from here."""

# Models, readouts and tasks are not listed here: each is the conf file that names it, and its
# encoder, readout or generator by import path (longterm.plugins.resolve), the built-ins' as a
# user's. What a readout does is its class's: a name is a label only.
LABELS = ("sequence", "step")  # task.labels: one target per sequence y (B,), or per step (B, T)
LOSSES = ("mse", "cross_entropy")  # task.loss
# task.inputs: one-hot features X (B, T, n_features) float, or token ids X (B, T) int64 that an
# embedding of width model.dim turns into features (models/build.py: sequence_model)
INPUTS = ("onehot", "tokens")
LENGTHS = ("per_sequence", "per_batch")  # data.lengths
# The model section's keys that the framework reads (models/build.py); the others are the
# encoder's own (plugins/keys.py: encoder_keys).
COMMON_MODEL_KEYS = ("name", "encoder", "dim", "hidden", "negative_slope", "init", "impl", "head")
# model.head (models/head.py): the paper's two leaky-ReLU layers on c, logits c E^T tied to
# the token embedding E
# (zoology's lm_head; token inputs with n_outputs = vocab), or RMSNorm then W c + b (mad-lab's
# unembed)
HEADS = ("mlp", "tied", "unembed")
# The pool section's keys that every readout has; the others are the readout's own
# (plugins/keys.py: readout_keys).
COMMON_POOL_KEYS = ("name", "readout", "mask_padding")
# The paper's two readouts [Raffel & Ellis 2015, eq. 1 and 2], by their classes: they pool the
# sequence as a set, blind to order (§2.4), and model.impl=fused computes them with the
# feed-forward encoder in one pass (models/fused.py); runs of that model with either pack.
PAPER_READOUTS = (
    "longterm.models.readouts.AttentionPooling",
    "longterm.models.readouts.MeanPooling",
)
# A plugin's name is a run directory's part and a TensorBoard value: letters, digits and _.
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]*$"
# data.name (conf/data/*.yaml): batches drawn afresh at about T0, or at lengths on a range; or
# mad-lab's fixed training and test sets of the MAD protocol (training/mad_data.py)
DATA = ("fixed", "variable", "mad")
# model.init: the paper's N(0, 1/fan_in), PyTorch's default, zoology's N(0, 0.02^2), mad-lab's
# (PyTorch's weights, zero biases, the token embedding N(0, 0.02^2): models/init.py)
INITS = ("paper", "torch", "zoology", "mad")
NORMS = ("post", "pre")  # model.norm (transformer, all_attention)
# model.impl (built_impl; the plans of models/fused.py and models/kernels/selective_scan.py)
IMPLS = ("auto", "reference", "fused")
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps", "tpu")  # trainer.accelerator
# The training recipe (conf/train.yaml: optim; training/recipes.py): the optimizer, and the
# learning-rate schedule: constant, cosine per epoch, or linear warmup then cosine per update.
OPTIMIZERS = ("adam", "adamw")  # optim.name
SCHEDULES = ("none", "cosine", "warmup_cosine")  # optim.schedule
# limit: what a run's epoch limit is. stop: a cap on a run that trains until the stop rule (the
# paper's; unsolved there is a failure) | budget: the experiment's fixed budget (ending there is
# its design) | capped: a learning-rate race's rival stopped at its leader's epochs (lr_race)
LIMITS = ("stop", "budget", "capped")
# optim.decay_groups: weight decay on every parameter, or mad-lab's groups (none on biases, norms
# and parameters marked `_no_weight_decay`: training/recipes.py)
DECAY_GROUPS = ("all", "mad")
# task.accuracy over the labelled targets: the fraction right (micro), or torchmetrics'
# MulticlassAccuracy(average="macro"), the mean over classes of each class's recall (mad-lab's)
ACCURACIES = ("micro", "macro")

# model.impl=fused: the feedforward model's encoder and a PAPER_READOUTS pooling in one pass
FUSED_ENCODER = "longterm.models.feedforward.StepEncoder"
# A count resolved when the run starts: data.num_workers (training/data.py: feed_workers) and
# callbacks.stop_on_divergence.every_n_updates (training/callbacks.py: StopOnDivergence).
AUTO = "auto"
# The keys in which the members of one pack (launcher=packed) may differ.
PACK_MEMBER_KEYS = ("lr", "seed", "trainer.max_epochs")


def impl_error(
    encoder: str, model: str, impl: str, readout: str, pool: str, own_impl: bool = False
) -> str | None:
    """Why `model.impl=impl` cannot build `model` (whose encoder is at `encoder`) with the
    readout class at `readout` (`pool=pool`), in one line; None if it can. An encoder that takes
    `impl` itself (`own_impl`: its `__init__` names it, as Mamba's does for its selective scan)
    has every implementation, with any readout."""
    if impl not in IMPLS:
        return f"model.impl={impl!r} is invalid: choose one of {', '.join(IMPLS)}"
    if own_impl:
        return None
    if impl == "fused" and encoder != FUSED_ENCODER:
        return f"model.impl=fused is invalid for model={model}: use model.impl=reference"
    if impl == "fused" and readout not in PAPER_READOUTS:
        return (
            f"model.impl=fused is invalid with pool={pool}: "
            "use pool=attention|mean or model.impl=reference"
        )
    return None


def built_impl(encoder: str, impl: str, readout: str) -> str:
    """The implementation of the paper's fused pass that `model.impl=impl` builds: `auto` is
    `fused` wherever fused can build the encoder and readout (the feedforward model's StepEncoder
    with a PAPER_READOUTS class) and `reference` for every other model and readout; which backend
    fused runs is decided per device at forward time (models/fused.py: plan). An encoder that
    takes `impl` itself is built with it and runs as written (models/build.py)."""
    if impl != "auto":
        return impl
    return "fused" if encoder == FUSED_ENCODER and readout in PAPER_READOUTS else "reference"


def targets_error(
    task: str,
    labels: str,
    pool: str,
    readout: str,
    per_step: bool,
    model: str,
    causal: bool,
    loss: str,
) -> str | None:
    """Why `pool` (whose class is at `readout`, giving an output per step if `per_step`) cannot
    read `model` for `task`'s targets, in one line; None if it can. A task that labels steps
    needs a per-step readout on a causal model (an order-blind pooling gives one output per
    sequence and cannot tell which step it is at) and cross-entropy (its labels are classes); a
    task with one target per sequence needs a pooling over time."""
    steps = labels == "step"
    if steps and loss != "cross_entropy":
        return f"task.loss={loss} is invalid with task={task}: its per-step labels are classes"
    if steps and readout in PAPER_READOUTS:
        return (
            f"pool={pool} is invalid with task={task}: {pool} pooling is blind to order and gives "
            "one output per sequence, and this task labels steps; use pool=per_step"
        )
    if steps and not per_step:
        return f"pool={pool} is invalid with task={task}: this task labels steps; use pool=per_step"
    if per_step and not steps:
        return (
            f"pool={pool} is invalid with task={task}: it has one target per sequence; use "
            "pool=last|attention|mean, or a task that labels steps (task.labels=step)"
        )
    if per_step and not causal:
        return (
            f"pool={pool} is invalid with model={model}: its state at a step sees later steps "
            "(its encoder says causal = False); use a causal model"
        )
    return None


def head_error(head: str, inputs: str, n_outputs: int, vocab: int | None) -> str | None:
    """Why `model.head=head` cannot give a task's outputs, in one line; None if it can. The
    tied head's logits are scores against the token embedding: token inputs, n_outputs = vocab."""
    if head not in HEADS:
        return f"model.head={head!r} is invalid: choose one of {', '.join(HEADS)}"
    if head == "tied" and inputs != "tokens":
        return (
            "model.head=tied is invalid with one-hot inputs: it scores against the token "
            "embedding; use a task of token inputs (task.inputs=tokens) or model.head=mlp"
        )
    if head == "tied" and n_outputs != vocab:
        return (
            f"model.head=tied is invalid with task.n_outputs={n_outputs}: its logits are one per "
            f"token of the embedding, task.vocab={vocab}; use model.head=mlp"
        )
    return None


# §2.2: a regression target counts as correct when |y_hat - y| < TOLERANCE (training/metrics.py;
# the contract check's chance level, contract/task.py).
TOLERANCE = 0.04
