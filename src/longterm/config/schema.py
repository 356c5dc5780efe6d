"""The schema of every user-facing config key: one pydantic model per section (§ of conf/).

The project's own sections (task, data) are closed: every key is listed, so a key added with `+`
is refused. The model and pool sections list the keys every model and readout has; their other
keys are the encoder's or the readout's, checked against its signature (config/validate.py).
Library sections (trainer, callbacks) are open: only the listed keys are checked. config.validate
turns the first fault into one line. The keys that identify a run are marked `setting(...)`, the
keys that repeat one given elsewhere `copy_of(...)` (config/marks.py).
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from longterm.choices import (
    ACCELERATORS,
    ACCURACIES,
    DECAY_GROUPS,
    HEADS,
    IMPLS,
    INITS,
    INPUTS,
    LABELS,
    LENGTHS,
    LIMITS,
    LOSSES,
    NAME_PATTERN,
    OPTIMIZERS,
    SCHEDULES,
)
from longterm.config.launcher_schema import (
    LocalLauncher,
    PackedLauncher,
    ParallelLauncher,
    SlurmLauncher,
    SubmititLocalLauncher,
)
from longterm.config.marks import copy_of, setting
from longterm.config.schema_parts import Section, count_or_auto
from longterm.tasks import MIN_LENGTH

# A model's, a readout's or a task's name: its conf file's, shown in run names, result.json and
# TensorBoard.
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
ImportPath = Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*\.\w+$")]


def task_param(value: Any) -> Any:
    """A task's own key (task.params.*): an integer, a number (mqar: power_a) or a flag. One
    check, so a bad value gets one message rather than one per member of `int | float | bool`."""
    if type(value) in (int, float, bool):
        return value
    raise PydanticCustomError("task_param", "Input should be a number or true/false")


TaskParams = dict[str, Annotated[Any, AfterValidator(task_param)]]


class TaskSection(Section):
    """A task: its generator by import path (longterm.plugins.resolve), what it labels and how it is
    scored; whether the generator gives what the section declares is checked in
    config/validate.py. `inputs`: one-hot features (`n_features` of them per step) or token ids
    (`vocab` of them), which an embedding of width model.dim reads."""

    name: Name = setting(name="task")
    generator: ImportPath
    labels: Literal[LABELS]
    inputs: Literal[INPUTS] = "onehot"
    n_features: int | None = Field(default=None, ge=1)
    vocab: int | None = Field(default=None, ge=2)
    n_outputs: int = Field(ge=1)
    loss: Literal[LOSSES] = setting()
    accuracy: Literal[ACCURACIES] = setting(default="micro")  # training/module.py
    params: TaskParams  # the generator's own keys (associative_recall: k)
    # a named setting of a task that has several (the MAD tasks: config/mad_settings.py); last:
    # the name is this field's from here on in the class
    setting: str | None = setting(default=None, name="setting")

    @model_validator(mode="after")
    def inputs_declared(self) -> "TaskSection":
        if self.inputs == "onehot" and (self.n_features is None or self.vocab is not None):
            raise ValueError(
                "inputs=onehot needs n_features (features per step) and no vocab; "
                "for token ids give inputs=tokens and vocab"
            )
        if self.inputs == "tokens" and (self.vocab is None or self.n_features is not None):
            raise ValueError(
                "inputs=tokens needs vocab (the number of token ids) and no n_features: the "
                "encoder reads the embedding's model.dim features"
            )
        return self

    @model_validator(mode="after")
    def outputs_fit_the_loss(self) -> "TaskSection":
        if (self.loss == "mse") != (self.n_outputs == 1):
            raise ValueError(
                f"loss={self.loss} needs n_outputs {'= 1' if self.loss == 'mse' else '>= 2'},"
                f" got {self.n_outputs}"
            )
        return self


class PoolSection(BaseModel):
    """The keys every readout has; any other key is its own, checked against its class's
    signature in config/validate.py (plugins/keys.py: readout_keys). `mask_padding`: whether padded
    steps are kept out of what it reads."""

    model_config = ConfigDict(strict=True, extra="allow")
    name: Name = setting(name="pool")
    readout: ImportPath
    mask_padding: bool = setting()


class ModelSection(BaseModel):
    """The keys every model has; any other key is its encoder's own, checked against the
    encoder's signature in config/validate.py (plugins/keys.py: encoder_keys). No `_target_`:
    models/build.py builds every model."""

    model_config = ConfigDict(strict=True, extra="allow")
    name: Name = setting(name="model")
    encoder: ImportPath
    dim: int = setting(ge=1)
    hidden: int = setting(default=100, ge=1)
    negative_slope: float = setting(default=0.01, ge=0)
    init: Literal[INITS] = setting(default="paper")
    impl: Literal[IMPLS] = "reference"  # how, not what: the same model (tested equal)
    head: Literal[HEADS] = setting(default="mlp")  # models/head.py: the paper's MLP, or tied


class DataSection(Section):
    """The data module's keys; `task`, `task_params`, `seed` (and data=fixed's `T0`) repeat the
    task's and the run's own (conf/data/*.yaml interpolates them) and may not be set apart."""

    task: str = copy_of("task.generator")
    seed: int = copy_of("seed")
    batch_size: int = setting(ge=1)
    batches_per_epoch: int = setting(ge=1)
    num_workers: Annotated[Any, count_or_auto(0)]  # data.py: feed_workers
    task_params: TaskParams = copy_of("task.params")


class FixedDataSection(DataSection):
    name: Literal["fixed"] = setting(name="data")
    T0: int = copy_of("T0")
    lengths: Literal[LENGTHS] = setting()
    val_size: int = Field(ge=1)


class VariableDataSection(DataSection):
    name: Literal["variable"] = setting(name="data")
    min_length: int = setting(ge=MIN_LENGTH)
    max_length: int = setting(ge=MIN_LENGTH)
    val_batches: int = Field(ge=1)
    val_batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def ordered_lengths(self) -> "VariableDataSection":
        if self.min_length > self.max_length:
            raise ValueError(
                f"min_length={self.min_length} must be <= max_length={self.max_length}"
            )
        return self


class MadDataSection(DataSection):
    """mad-lab's data (training/mad_data.py): `n_train` training and `n_test` test sequences of
    the MAD setting `setting` (task.setting), drawn once from the run's seed; an epoch is one
    pass through the training set (batches_per_epoch = ceil(n_train / batch_size)). `steps`: the
    sequences' length, which the setting gives."""

    name: Literal["mad"] = setting(name="data")
    n_train: int = setting(ge=1)
    n_test: int = setting(ge=1)
    steps: int = Field(ge=1)
    setting: str = copy_of("task.setting")  # last: the name is `setting`'s from here on


class OptimSection(Section):
    """The training recipe but the learning rate (the top-level `lr`; training/recipes.py):
    the optimizer (`adam`, the paper's, or `adamw`, decoupled `weight_decay`), its betas and
    eps, the schedule of the learning rate (`none`, `cosine` per epoch over trainer.max_epochs,
    `warmup_cosine` per update after `warmup` updates of linear warmup) and the largest total
    gradient norm (`clip`, none when null). Defaults: the paper's constant Adam."""

    name: Literal[OPTIMIZERS] = setting(default="adam", name="optim")
    betas: list[Annotated[float, Field(ge=0, lt=1)]] = Field(min_length=2, max_length=2)
    eps: float = Field(gt=0)
    weight_decay: float = setting(default=0.0, ge=0)
    schedule: Literal[SCHEDULES] = setting(default="none")
    warmup: int = setting(default=0, ge=0)
    clip: float | None = setting(default=None, gt=0)
    min_lr: float = setting(default=0.0, ge=0)  # the floor of schedule=cosine (mad-lab's 1e-6)
    decay_groups: Literal[DECAY_GROUPS] = setting(default="all")  # which weight_decay acts on

    @model_validator(mode="after")
    def keys_the_recipe_reads(self) -> "OptimSection":
        if self.name == "adam" and self.weight_decay:
            raise ValueError(
                f"weight_decay={self.weight_decay} needs name=adamw (decoupled weight decay); "
                "name=adam takes weight_decay=0"
            )
        if self.min_lr and self.schedule != "cosine":
            raise ValueError(
                f"min_lr={self.min_lr} needs schedule=cosine; schedule={self.schedule} takes "
                "min_lr=0"
            )
        if self.warmup and self.schedule != "warmup_cosine":
            raise ValueError(
                f"warmup={self.warmup} needs schedule=warmup_cosine; schedule={self.schedule} "
                "takes warmup=0"
            )
        return self


class OpenSection(BaseModel):
    """A section with library options (Lightning's Trainer, callbacks): only the listed keys are
    checked."""

    model_config = ConfigDict(strict=True, extra="ignore")


# A run trains on one device: it claims its directory and writes its checkpoints and result.json
# from one process, so Lightning's multi-process DDP (one process per device) is refused here.
ONE_DEVICE = (
    "a run trains on one device; to use several, run one job per device: a sweep "
    "(-m seed=1,2,3, or launcher=slurm launcher.gpus=1 for one GPU per job)"
)


def device_choice(value: Any) -> Any:
    """Lightning's `devices`: 1, or a list of one device index (which device to train on)."""
    count = len(value) if isinstance(value, list) else value
    if isinstance(value, list) and not all(type(i) is int and i >= 0 for i in value):
        count = None
    if count == 1 and type(count) is int:
        return value
    if count == "auto" or (type(count) is int and count > 1):
        raise PydanticCustomError("devices", ONE_DEVICE)
    raise PydanticCustomError(
        "devices", "Input should be a count >= 1 or a list of one device index"
    )


def batch_limit(value: Any) -> Any:
    """Lightning's limit_train_batches, limit_val_batches and overfit_batches: a count of batches
    (an integer >= 0) or a fraction of them (a number from 0 to 1); null for no limit."""
    if value is None or (type(value) is int and value >= 0):
        return value
    if type(value) is float and 0 <= value <= 1:
        return value
    raise PydanticCustomError(
        "batches", "Input should be a number of batches (an integer >= 0) or a fraction 0..1"
    )


def dev_run(value: Any) -> Any:
    """Lightning's fast_dev_run: true (one batch), false, or a number of batches >= 0."""
    if type(value) is bool or (type(value) is int and value >= 0):
        return value
    raise PydanticCustomError("fast_dev_run", "Input should be true, false or an integer >= 0")


class TrainerSection(OpenSection):
    """Lightning Trainer options a user sets; Lightning's defaults where a config leaves one out.
    The debugging keys (fast_dev_run, limit_*, overfit_batches) make a debug run
    (config/debug.py)."""

    max_epochs: int = setting(ge=1)
    accelerator: Literal[ACCELERATORS] = "auto"
    devices: Annotated[Any, AfterValidator(device_choice)] = 1
    log_every_n_steps: int = Field(default=50, ge=1)
    num_sanity_val_steps: int = Field(default=2, ge=-1)
    enable_progress_bar: bool = True
    enable_model_summary: bool = True
    deterministic: Literal[True, False, "warn"] = False
    fast_dev_run: Annotated[Any, AfterValidator(dev_run)] = False
    limit_train_batches: Annotated[Any, AfterValidator(batch_limit)] = None
    limit_val_batches: Annotated[Any, AfterValidator(batch_limit)] = None
    overfit_batches: Annotated[Any, AfterValidator(batch_limit)] = 0


class StopWhenSolvedSection(Section):
    """training/callbacks.py StopWhenSolved: stop once `monitor` >= `threshold` (the paper's
    100%), or > `threshold` with `strict` (zoology's: above 99%)."""

    monitor: str
    threshold: float = setting(ge=0, le=1, name="stop_at")
    strict: bool = setting(default=False, name="stop_strict")


class StopOnDivergenceSection(Section):
    every_n_updates: Annotated[Any, count_or_auto(1)]  # callbacks.StopOnDivergence


class CallbacksSection(OpenSection):
    stop_when_solved: StopWhenSolvedSection
    stop_on_divergence: StopOnDivergenceSection


def eval_lengths(value: Any) -> Any:
    """eval.lengths: a list of sequence lengths (each a T0), integers >= MIN_LENGTH; empty: none."""
    if isinstance(value, list) and all(type(t) is int and t >= MIN_LENGTH for t in value):
        return value
    raise PydanticCustomError(
        "lengths", f"Input should be a list of sequence lengths, integers >= {MIN_LENGTH}"
    )


class EvalSection(Section):
    """After training, the trained model's accuracy on the same task at each T0 of `lengths`
    (length extrapolation), `sequences` sequences each (training/eval_lengths.py)."""

    lengths: Annotated[Any, AfterValidator(eval_lengths)] = []
    sequences: int = Field(default=1000, ge=1)


class TrainConfig(OpenSection):
    T0: int = setting(ge=MIN_LENGTH, description="shortest sequence length")
    lr: float = setting(gt=0)
    seed: int = setting(ge=0)
    limit: Literal[LIMITS] = "stop"  # what the epoch limit is (records.end_of reads the end by it)
    optim: OptimSection
    task: TaskSection
    pool: PoolSection
    model: ModelSection
    data: Annotated[
        FixedDataSection | VariableDataSection | MadDataSection, Field(discriminator="name")
    ]
    trainer: TrainerSection
    callbacks: CallbacksSection
    eval: EvalSection = EvalSection()
    launcher: Annotated[
        LocalLauncher | ParallelLauncher | PackedLauncher | SubmititLocalLauncher | SlurmLauncher,
        Field(discriminator="name"),
    ]
