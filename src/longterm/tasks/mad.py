"""The six synthetic tasks of the MAD protocol (Poli et al. 2024, "Mechanistic Design and Scaling
of Hybrid Architectures", arXiv 2403.17844, §3 and appendix B): in-context recall, noisy and
fuzzy in-context recall, selective copying, compression and memorization. This module reproduces
mad-lab's generators at commit 0f49a45 (athms/mad-lab: mad/data/instances.py, one instance at a
time, in tasks/mad_instances.py; mad/configs.py, mad/data/dataset.py, train.py, the settings of
configs/tasks/*.yml).

`dataset(task, seed, n_train, n_test, **settings)` is the data a mad-lab run with that seed
trains and tests on, equal to it array for array (tests/test_mad_tasks.py, against mad-lab's own
output in ../shared/fixtures/mad_tasks_reference.npz): mad-lab's train.py seeds numpy's global
generator (selective copying draws its blanks' positions from it), configs.py makes one
`np.random.default_rng(seed)` for every instance, and dataset.py draws the n_train training
instances (`is_training=True`) before the n_test test instances from those same generators; the
memorization map is `generate_kv_map(vocab_size - 1, 1, 1, seed=seed)`. Here the global
generator is a private `np.random.RandomState(seed)`: numpy's global state is left as it was.

`SETTINGS[task]` lists the settings the protocol trains at: the baseline first, then each
`changes` value of configs/tasks/<task>.yml, one key varied at a time (configs.py:
`make_benchmark_mad_configs`), each with its n_train and n_test.

The functions named after the tasks are the framework's generators (conf/task/mad_*.yaml;
docs/plugins.md): `(rng, min_length, n_sequences, max_length=None, **params) -> (X, y, mask)`,
token ids X (n, width) int64 (0 on padding), per-step targets y (n, width) with NO_TARGET where a
step has none, mask (n, width) True on the real steps; their params are mad-lab's keys. Each
sequence is a mad-lab instance at the seq_len that gives at least min_length steps (in-context
and noisy recall: the even seq_len >= min_length + 1, as their inputs are seq_len - 1 steps;
memorization: the even seq_len >= min_length; the others seq_len = min_length), drawn from a
`default_rng` seeded by the batch's RandomState (which also stands for mad-lab's global
generator). `is_training` picks mad-lab's training targets (the next token at every step) or its
test targets (the probed steps) for the recall tasks; the others have one kind.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from longterm.tasks import mad_instances as instances
from longterm.tasks.lengths import NO_TARGET, default_width

TASKS = (
    *("in-context-recall", "noisy-in-context-recall", "fuzzy-in-context-recall"),
    *("selective-copying", "compression", "memorization"),
)
# mad/configs.py, MADConfig: a run's task settings where its task's yml is silent, and the sizes
# of its training and test sets (num_train_examples, num_test_examples).
DEFAULTS = dict(
    vocab_size=16,
    seq_len=128,
    frac_noise=0.0,
    noise_vocab_size=0,
    num_tokens_to_copy=0,
    k_motif_size=1,
    v_motif_size=1,
    multi_query=True,
)
N_TRAIN, N_TEST = 12_800, 1_280
# configs/tasks/<task>.yml, `baseline` and `changes`, as mad-lab writes them.
BASELINES: dict[str, dict[str, Any]] = {
    "in-context-recall": dict(
        vocab_size=16, seq_len=128, num_train_examples=12800, multi_query=True
    ),
    "noisy-in-context-recall": dict(
        vocab_size=32,
        noise_vocab_size=16,
        seq_len=128,
        num_train_examples=12800,
        multi_query=True,
        frac_noise=0.2,
    ),
    "fuzzy-in-context-recall": dict(
        vocab_size=16,
        seq_len=128,
        num_train_examples=12800,
        multi_query=True,
        k_motif_size=3,
        v_motif_size=3,
    ),
    "selective-copying": dict(
        vocab_size=16, seq_len=256, num_tokens_to_copy=16, num_train_examples=12800
    ),
    "compression": dict(vocab_size=16, seq_len=32, num_train_examples=12800),
    "memorization": dict(vocab_size=256, seq_len=32, num_train_examples=256),
}
FEWER_EXAMPLES = [6400, 3200, 1600, 800]
CHANGES: dict[str, dict[str, list]] = {
    "in-context-recall": dict(
        vocab_size=[32, 64, 128], seq_len=[256, 512, 1024], num_train_examples=FEWER_EXAMPLES
    ),
    "noisy-in-context-recall": dict(
        vocab_size=[48, 80, 144],  # mad-lab: "adding 16 for noise vocab!"
        seq_len=[256, 512, 1024],
        num_train_examples=FEWER_EXAMPLES,
        frac_noise=[0.4, 0.6, 0.8],
    ),
    "fuzzy-in-context-recall": dict(
        vocab_size=[32, 64, 128], seq_len=[256, 512, 1024], num_train_examples=FEWER_EXAMPLES
    ),
    "selective-copying": dict(
        vocab_size=[32, 64, 128],
        seq_len=[512, 1024],
        num_train_examples=FEWER_EXAMPLES,
        num_tokens_to_copy=[32, 64, 96],
    ),
    "compression": dict(
        vocab_size=[32, 64, 128], seq_len=[64, 128, 256], num_train_examples=FEWER_EXAMPLES
    ),
    "memorization": dict(vocab_size=[512, 1024, 2048, 4096, 8192]),
}


def setting(task: str, **changed: Any) -> dict[str, Any]:
    """A full setting of `task`: DEFAULTS, then its baseline, then `changed` (mad-lab's keys),
    with num_train_examples as `n_train` and the test set's size as `n_test`."""
    keys = {"n_train": N_TRAIN, "n_test": N_TEST, **DEFAULTS, **BASELINES[task], **changed}
    keys["n_train"] = keys.pop("num_train_examples", keys["n_train"])
    return keys


SETTINGS: dict[str, list[dict[str, Any]]] = {
    task: [setting(task)]
    + [setting(task, **{key: value}) for key, values in CHANGES[task].items() for value in values]
    for task in TASKS
}


def setting_name(task: str, index: int) -> str:
    """The name of SETTINGS[task][index]: `baseline`, or the changed key and its value
    (`vocab_size_32`, `num_train_examples_800`, `frac_noise_0.4`)."""
    if index == 0:
        return "baseline"
    key, value = [(k, v) for k, values in CHANGES[task].items() for v in values][index - 1]
    return f"{key}_{value}"


SETTING_NAMES = {
    task: [setting_name(task, i) for i in range(len(SETTINGS[task]))] for task in TASKS
}


def task_of(ref: str) -> str:
    """mad-lab's name of a task, from its name or the import path of its generator here
    (`longterm.tasks.mad.in_context_recall` -> `in-context-recall`)."""
    name = str(ref).rpartition(".")[2].replace("_", "-")
    if name not in TASKS or (ref != name and not str(ref).startswith(__name__ + ".")):
        raise ValueError(f"{ref} is not a MAD task: the MAD tasks are {__name__}.<task>, {TASKS}")
    return name


def named_setting(ref: str, name: str) -> dict[str, Any]:
    """The setting `name` (setting_name) of the task `ref` (task_of): mad-lab's keys, n_train,
    n_test, and `steps`, the length of its sequences."""
    task = task_of(ref)
    if name not in SETTING_NAMES[task]:
        names = ", ".join(SETTING_NAMES[task])
        raise ValueError(f"task.setting={name} is invalid: {task}'s settings are {names}")
    keys = SETTINGS[task][SETTING_NAMES[task].index(name)]
    return {**keys, "steps": steps(task, keys["seq_len"], keys["multi_query"])}


def steps(task: str, seq_len: int, multi_query: bool = True) -> int:
    """The length of an instance: seq_len - 1 for (noisy) in-context recall with multi_query,
    2 (seq_len // 2) for memorization, seq_len otherwise."""
    if task in ("in-context-recall", "noisy-in-context-recall") and multi_query:
        return seq_len - 1
    return 2 * (seq_len // 2) if task == "memorization" else seq_len


def instance_drawer(
    task: str, settings: dict[str, Any], legacy: np.random.RandomState, seed: int
) -> Callable[[np.random.Generator, bool], instances.Instance]:
    """A function (rng, is_training) -> one instance of `task` at `settings` (mad-lab's keys, the
    ones configs.py passes); `legacy` stands for mad-lab's global generator, `seed` is the
    memorization map's."""
    unknown = set(settings) - set(DEFAULTS)
    if task not in TASKS or unknown:
        raise ValueError(f"mad: unknown task {task!r} or keys {sorted(unknown)}; tasks: {TASKS}")
    s = {**DEFAULTS, **settings}
    noise = dict(frac_noise=s["frac_noise"], noise_vocab_size=s["noise_vocab_size"])
    size = dict(vocab_size=s["vocab_size"], seq_len=s["seq_len"])
    if task in ("in-context-recall", "noisy-in-context-recall"):
        return lambda rng, is_training: instances.in_context_recall(
            rng, **size, multi_query=s["multi_query"], **noise, is_training=is_training
        )
    if task == "fuzzy-in-context-recall":
        motifs = dict(k_motif_size=s["k_motif_size"], v_motif_size=s["v_motif_size"])
        return lambda rng, is_training: instances.fuzzy_in_context_recall(
            rng, **size, **motifs, multi_query=s["multi_query"], **noise, is_training=is_training
        )
    if task == "selective-copying":
        copied = s["num_tokens_to_copy"]
        return lambda rng, _: instances.selective_copying(
            rng, legacy, **size, num_tokens_to_copy=copied
        )
    if task == "compression":
        return lambda rng, _: instances.compression(rng, **size, **noise)
    kv = instances.kv_map(s["vocab_size"] - 1, seed)  # configs.py: vocab_size - 1, the run's seed
    return lambda rng, _: instances.memorization(rng, kv, **size, **noise)


def dataset(
    task: str, seed: int, n_train: int, n_test: int, **settings: Any
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """mad-lab's data set for `task` (its name: `in-context-recall`, ...) at `settings` (its
    keys: vocab_size, seq_len, k_motif_size, v_motif_size, frac_noise, noise_vocab_size,
    num_tokens_to_copy, multi_query; DEFAULTS elsewhere) and `seed`: {'train': (inputs, targets),
    'test': (inputs, targets)}, each int64 (n, L), NO_TARGET (-100) where a step has none.
    `dataset(task, seed, **SETTINGS[task][i])` is the protocol's i-th setting."""
    legacy = np.random.RandomState(seed)
    draw = instance_drawer(task, settings, legacy, seed)
    rng = np.random.default_rng(seed)
    out = {}
    for split, n, is_training in (("train", n_train, True), ("test", n_test, False)):
        inputs, targets = zip(*(draw(rng, is_training) for _ in range(n)), strict=True)
        out[split] = (np.stack(inputs), np.stack(targets))
    return out


def even_at_least(n: int) -> int:
    return n + n % 2


def batch(
    task: str,
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None,
    is_training: bool,
    settings: dict[str, Any],
    kv_map_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n_sequences instances of `task` at `settings` (seq_len included), padded to the width:
    X (n, width) int64 (0 on padding), y (n, width) int64, mask (n, width) bool."""
    draw = instance_drawer(task, settings, rng, kv_map_seed)
    generator = np.random.default_rng(rng.randint(2**32, size=4))
    inputs, targets = (
        np.stack(a)
        for a in zip(*(draw(generator, is_training) for _ in range(n_sequences)), strict=True)
    )
    steps, width = inputs.shape[1], max_length or default_width(min_length)
    if not min_length <= steps <= width:
        raise ValueError(
            f"{task}: seq_len={settings['seq_len']} gives {steps} steps, which a batch at "
            f"min_length {min_length} padded to {width} cannot hold; give another length"
        )
    X = np.zeros((n_sequences, width), dtype=np.int64)
    y = np.full((n_sequences, width), NO_TARGET, dtype=np.int64)
    X[:, :steps], y[:, :steps] = inputs, targets
    mask = np.broadcast_to(np.arange(width) < steps, (n_sequences, width)).copy()
    return X, y, mask


# The framework's generators (conf/task/mad_*.yaml). Each rng is a batch's RandomState.


def in_context_recall(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab_size: int = 16,
    multi_query: bool = True,
    frac_noise: float = 0.0,
    noise_vocab_size: int = 0,
    is_training: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In-context recall at seq_len = the even number >= min_length + 1 (multi_query; >=
    min_length without): X, y, mask (n, width); mad-lab's baseline seq_len 128 is min_length 127."""
    seq_len = even_at_least(min_length + 1 if multi_query else min_length)
    settings = dict(vocab_size=vocab_size, seq_len=seq_len, multi_query=multi_query)
    settings |= dict(frac_noise=frac_noise, noise_vocab_size=noise_vocab_size)
    task = "in-context-recall"
    return batch(task, rng, min_length, n_sequences, max_length, is_training, settings)


def noisy_in_context_recall(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab_size: int = 32,
    multi_query: bool = True,
    frac_noise: float = 0.2,
    noise_vocab_size: int = 16,
    is_training: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Noisy in-context recall: in_context_recall with mad-lab's noisy baseline (a pair is noise
    with probability frac_noise, noise tokens the last noise_vocab_size ids)."""
    noise = dict(frac_noise=frac_noise, noise_vocab_size=noise_vocab_size)
    return in_context_recall(
        rng,
        min_length,
        n_sequences,
        max_length,
        vocab_size,
        multi_query,
        **noise,
        is_training=is_training,
    )


def fuzzy_in_context_recall(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab_size: int = 16,
    k_motif_size: int = 3,
    v_motif_size: int = 3,
    multi_query: bool = True,
    frac_noise: float = 0.0,
    noise_vocab_size: int = 0,
    is_training: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fuzzy in-context recall at seq_len = min_length: X, y, mask (n, width)."""
    settings = dict(vocab_size=vocab_size, seq_len=min_length, multi_query=multi_query)
    settings |= dict(k_motif_size=k_motif_size, v_motif_size=v_motif_size)
    settings |= dict(frac_noise=frac_noise, noise_vocab_size=noise_vocab_size)
    task = "fuzzy-in-context-recall"
    return batch(task, rng, min_length, n_sequences, max_length, is_training, settings)


def selective_copying(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab_size: int = 16,
    num_tokens_to_copy: int = 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mad-lab's selective copying at seq_len = min_length: X, y, mask (n, width)."""
    settings = dict(
        vocab_size=vocab_size, seq_len=min_length, num_tokens_to_copy=num_tokens_to_copy
    )
    return batch("selective-copying", rng, min_length, n_sequences, max_length, False, settings)


def compression(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab_size: int = 16,
    frac_noise: float = 0.0,
    noise_vocab_size: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compression at seq_len = min_length: X, y (y = X on the real steps), mask (n, width)."""
    settings = dict(vocab_size=vocab_size, seq_len=min_length)
    settings |= dict(frac_noise=frac_noise, noise_vocab_size=noise_vocab_size)
    return batch("compression", rng, min_length, n_sequences, max_length, False, settings)


def memorization(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    vocab_size: int = 256,
    kv_map_seed: int = 12345,
    frac_noise: float = 0.0,
    noise_vocab_size: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Memorization at seq_len = the even number >= min_length, of the map
    `generate_kv_map(vocab_size - 1, seed=kv_map_seed)` (12345: MADConfig's seed, the one a
    mad-lab benchmark run uses), the same for every batch: X, y, mask (n, width)."""
    settings = dict(vocab_size=vocab_size, seq_len=even_at_least(min_length))
    settings |= dict(frac_noise=frac_noise, noise_vocab_size=noise_vocab_size)
    task = "memorization"
    return batch(task, rng, min_length, n_sequences, max_length, False, settings, kv_map_seed)
