"""One instance of each MAD task, as mad-lab draws it (Poli et al. 2024, "Mechanistic Design and
Scaling of Hybrid Architectures", arXiv 2403.17844, §3; athms/mad-lab at commit 0f49a45,
mad/data/instances.py). Each function makes mad-lab's draws, in mad-lab's order, from the
`np.random.Generator` it is given, so a caller that passes mad-lab's generator gets mad-lab's
instance token for token (tasks/mad.py: `dataset`, tested against mad-lab's own output).

An instance is (inputs (L,), targets (L,)) int64, NO_TARGET (mad-lab's -100) where a step has
none; L is seq_len - 1 for in-context and noisy recall with `multi_query`, seq_len otherwise
(memorization: 2 * (seq_len // 2)). Where mad-lab shuffles a Python list, these shuffle an index
array of the same length: numpy's Generator.shuffle makes the same swaps, with the same draws,
for both.
"""

from functools import cache

import numpy as np

from longterm.tasks.lengths import NO_TARGET

Instance = tuple[np.ndarray, np.ndarray]
KVMap = tuple[np.ndarray, np.ndarray]  # keys (n,) in mad-lab's dict order, their values (n,)


@cache
def permutations_of(n: int, size: int) -> np.ndarray:
    """(n! / (n - size)!, size) int64: itertools.permutations(range(n), size), in its order."""
    rows = np.zeros((1, 0), dtype=np.int64)
    for _ in range(size):
        free = np.ones((len(rows), n), dtype=bool)
        np.put_along_axis(free, rows, False, axis=1)
        row, token = np.nonzero(free)  # row-major: each row's free tokens in increasing order
        rows = np.concatenate([rows[row], token[:, None]], axis=1)
    rows.flags.writeable = False
    return rows


def shuffled_motifs(rng: np.random.Generator, low: int, high: int, size: int) -> np.ndarray:
    """mad-lab's `generate_vocab_permutations(np.arange(low, high), size, rng)`: every ordered
    tuple of `size` distinct tokens of low..high-1, shuffled by `rng`; (P, size) int64."""
    motifs = low + permutations_of(high - low, size)
    order = np.arange(len(motifs))
    rng.shuffle(order)
    return motifs[order]


def check_noise(
    task: str, frac_noise: float, noise_vocab_size: int, upto_one: bool = False
) -> None:
    """mad-lab's asserts: frac_noise in [0, 1) ([0, 1] where `upto_one`), noise tokens if any."""
    if not (0 <= frac_noise <= 1 if upto_one else 0 <= frac_noise < 1):
        raise ValueError(
            f"{task}: frac_noise={frac_noise} must be in [0, 1{']' if upto_one else ')'}"
        )
    if frac_noise > 0 and noise_vocab_size < 1:
        raise ValueError(f"{task}: frac_noise={frac_noise} needs noise_vocab_size >= 1")


def shifted(inputs: list, targets: list, is_training: bool) -> Instance:
    """mad-lab's last step for the recall tasks: inputs[:-1] and, in training, the next token at
    every step (inputs[1:], the language-model objective); at test only the probed steps'."""
    inputs, targets = np.array(inputs, dtype=np.int64), np.array(targets, dtype=np.int64)
    return inputs[:-1], inputs[1:] if is_training else targets[1:]


def in_context_recall(
    rng: np.random.Generator,
    vocab_size: int,
    seq_len: int,
    multi_query: bool,
    frac_noise: float,
    noise_vocab_size: int,
    is_training: bool,
) -> Instance:
    """`generate_in_context_recall_instance` (noisy recall is the same with frac_noise > 0):
    seq_len / 2 - 1 pairs `key value`, keys 0..s/2-1 and values s/2..s-1 for the s = vocab_size
    (- 1 without multi_query) - noise_vocab_size symbols, each key's value fixed at its first
    pair, a pair replaced by two noise tokens with probability frac_noise; then (without
    multi_query the copy prefix vocab_size - 1 and) a key seen before and its value. Probed: the
    value of a repeated key (multi_query) and the last value."""
    check_noise("in-context-recall", frac_noise, noise_vocab_size)
    symbols = (vocab_size if multi_query else vocab_size - 1) - noise_vocab_size
    if seq_len % 2 or symbols < 2:
        raise ValueError(
            f"in-context-recall: seq_len={seq_len} must be even and vocab_size={vocab_size} "
            f"leave >= 2 symbols besides noise_vocab_size={noise_vocab_size}"
        )
    key_vocab, value_vocab = np.arange(symbols // 2), np.arange(symbols // 2, symbols)
    noise_vocab = np.arange(symbols, symbols + noise_vocab_size)
    inputs, targets, values = [], [], {}  # values: key -> value, keys in order of appearance
    pairs = seq_len // 2
    kept = rng.choice(pairs)  # never noise (mad-lab's not_noise_idx; the last pair is the probe)
    for i in range(pairs - 1):
        if frac_noise > 0 and i != kept and rng.random() < frac_noise:
            inputs += list(rng.choice(noise_vocab, size=2, replace=True))
            targets += [NO_TARGET, NO_TARGET]
            continue
        key = rng.choice(key_vocab)
        seen = key in values
        if not seen:
            values[key] = rng.choice(value_vocab)
        inputs += [key, values[key]]
        targets += [NO_TARGET, values[key] if seen and multi_query else NO_TARGET]
    probe = rng.choice(list(values))
    inputs += ([] if multi_query else [vocab_size - 1]) + [probe, values[probe]]
    targets += ([] if multi_query else [NO_TARGET]) + [NO_TARGET, values[probe]]
    return shifted(inputs, targets, is_training)


def fuzzy_in_context_recall(
    rng: np.random.Generator,
    vocab_size: int,
    seq_len: int,
    k_motif_size: int,
    v_motif_size: int,
    multi_query: bool,
    frac_noise: float,
    noise_vocab_size: int,
    is_training: bool,
) -> Instance:
    """`generate_fuzzy_in_context_recall_instance`: keys and values are motifs, ordered tuples
    of distinct tokens (keys of 1..k_motif_size tokens in training, k_motif_size at test; values
    of 1..v_motif_size), of the s = vocab_size - 1 (- 2 without multi_query) - noise_vocab_size
    symbols (keys 0..s/2-1, values s/2..s-1); one key-value probe placed at a random step, pairs
    until the sequence is full, then (the copy prefix and) the probe again, left-padded to
    seq_len + 1 with the pad token vocab_size - 1 (- 2). Probed: repeated keys' values
    (multi_query) and the last value."""
    task = "fuzzy-in-context-recall"
    check_noise(task, frac_noise, noise_vocab_size)
    pad = vocab_size - 1 if multi_query else vocab_size - 2
    symbols = pad - noise_vocab_size
    half = symbols // 2
    if k_motif_size > half or v_motif_size > symbols - half:
        raise ValueError(
            f"{task}: vocab_size={vocab_size} has {half} key and {symbols - half} value tokens, "
            f"too few for k_motif_size={k_motif_size}, v_motif_size={v_motif_size}"
        )
    key_sizes = range(1, k_motif_size + 1) if is_training else [k_motif_size]
    keys = {s: shuffled_motifs(rng, 0, half, s) for s in key_sizes}
    values = {s: shuffled_motifs(rng, half, symbols, s) for s in range(1, v_motif_size + 1)}
    noise_vocab = np.arange(symbols, symbols + noise_vocab_size)
    k_probe_size = rng.choice(list(keys)) if is_training else k_motif_size
    v_probe_size = rng.choice(list(values))
    k_probe = tuple(rng.choice(keys[k_probe_size]).tolist())
    v_probe = tuple(rng.choice(values[v_probe_size]).tolist())
    probe_size = k_probe_size + v_probe_size
    if seq_len - 2 * probe_size < 1:
        raise ValueError(f"{task}: seq_len={seq_len} is too short for motifs of {probe_size}")
    probe_at = rng.choice(seq_len - 2 * probe_size)
    probe_added = False
    kv_map = {s: {} for s in range(1, k_motif_size + 1)}
    inputs, targets, presented = [], [], {}
    while len(inputs) < seq_len - probe_size - (k_motif_size + v_motif_size):
        k_size = rng.choice(list(keys)) if is_training else k_motif_size
        v_size = rng.choice(list(values))
        if len(inputs) >= probe_at and not probe_added:
            inputs += [*k_probe, *v_probe]
            targets += [NO_TARGET] * probe_size
            kv_map[k_probe_size][k_probe] = presented[k_probe] = v_probe
            probe_added = True
            continue
        if frac_noise > 0 and rng.random() < frac_noise:
            inputs += list(rng.choice(noise_vocab, size=k_size + v_size, replace=True))
            targets += [NO_TARGET] * (k_size + v_size)
            continue
        key = tuple(rng.choice(keys[k_size]).tolist())
        if key == k_probe:
            value, probe_added = v_probe, True
        elif key in kv_map[k_size]:
            value = kv_map[k_size][key]
        else:
            value = kv_map[k_size][key] = tuple(rng.choice(values[v_size]).tolist())
        probed = key in presented and multi_query
        inputs += [*key, *value]
        targets += [NO_TARGET] * k_size + (list(value) if probed else [NO_TARGET] * len(value))
        presented[key] = value
    inputs += ([] if multi_query else [vocab_size - 1]) + [*k_probe, *v_probe]
    targets += [NO_TARGET] * (k_probe_size + (0 if multi_query else 1)) + list(v_probe)
    n_pad = max(0, seq_len + 1 - len(inputs))
    return shifted([pad] * n_pad + inputs, [NO_TARGET] * n_pad + targets, is_training)


@cache
def kv_map(vocab_size: int, seed: int) -> KVMap:
    """`generate_kv_map(vocab_size, 1, 1, seed)`: keys 0..vocab_size/2-1 and values
    vocab_size/2..vocab_size-1, each list shuffled by `np.random.default_rng(seed)` and paired in
    order (as many pairs as the shorter list). Keys (n,) in that order, values (n,)."""
    rng = np.random.default_rng(seed)
    half = vocab_size // 2
    keys = shuffled_motifs(rng, 0, half, 1)[:, 0]
    values = shuffled_motifs(rng, half, vocab_size, 1)[:, 0]
    n = min(len(keys), len(values))
    keys, values = keys[:n].copy(), values[:n].copy()
    keys.flags.writeable = values.flags.writeable = False
    return keys, values


def memorization(
    rng: np.random.Generator,
    kv: KVMap,
    vocab_size: int,
    seq_len: int,
    frac_noise: float,
    noise_vocab_size: int,
) -> Instance:
    """`generate_memorization_instance`: seq_len / 2 pairs `key insert`, the key uniform on the
    map's keys, the insert token vocab_size - 1 labelled with the key's value in the fixed map
    `kv` (a pair replaced by two noise tokens with probability frac_noise)."""
    check_noise("memorization", frac_noise, noise_vocab_size, upto_one=True)
    symbols = vocab_size - 1 - noise_vocab_size
    noise_vocab = np.arange(symbols, symbols + noise_vocab_size)
    keys, values = kv
    inputs, targets = [], []
    pairs = seq_len // 2
    kept = rng.choice(pairs)  # never noise (mad-lab's not_noise_idx)
    for i in range(pairs):
        if frac_noise > 0 and i != kept and rng.random() < frac_noise:
            inputs += list(rng.choice(noise_vocab, size=2, replace=True))
            targets += [NO_TARGET, NO_TARGET]
            continue
        j = rng.choice(len(keys))  # mad-lab: rng.choice over the list of keys
        inputs += [keys[j], vocab_size - 1]
        targets += [NO_TARGET, values[j]]
    return np.array(inputs, dtype=np.int64), np.array(targets, dtype=np.int64)


def compression(
    rng: np.random.Generator,
    vocab_size: int,
    seq_len: int,
    frac_noise: float,
    noise_vocab_size: int,
) -> Instance:
    """`generate_compression_instance`: seq_len - 1 tokens uniform on 0..vocab_size - 2 -
    noise_vocab_size, then the compression token vocab_size - 1; each of the first seq_len - 1
    replaced by a noise token with probability frac_noise. The targets are the inputs: mad-lab
    returns `inputs, inputs` (its noise-masked targets go unused), noise tokens included."""
    check_noise("compression", frac_noise, noise_vocab_size, upto_one=True)
    symbols = vocab_size - 1 - noise_vocab_size
    tokens = rng.choice(np.arange(symbols), size=(seq_len - 1,), replace=True)
    inputs = np.append(tokens, vocab_size - 1).astype(np.int64)
    if frac_noise > 0:
        noise_vocab = np.arange(symbols, symbols + noise_vocab_size)
        for i in range(seq_len - 1):
            if rng.random() < frac_noise:
                inputs[i] = rng.choice(noise_vocab)
    return inputs, inputs.copy()


def selective_copying(
    rng: np.random.Generator,
    legacy: np.random.RandomState,
    vocab_size: int,
    seq_len: int,
    num_tokens_to_copy: int,
) -> Instance:
    """`generate_selective_copying_instance`: n = num_tokens_to_copy tokens uniform on
    0..vocab_size - 3 (from `rng`), seq_len - 2n - 1 blanks (vocab_size - 2) inserted before
    token positions uniform on 0..n-1 (mad-lab draws them with the global `np.random.randint`:
    here from `legacy`, so never after the last token), the copy token vocab_size - 1, then n
    blanks, each labelled with the next token to copy."""
    n, blank = num_tokens_to_copy, vocab_size - 2
    if n < 1 or seq_len <= 2 * n + 1 or vocab_size < 3:
        raise ValueError(
            f"selective-copying: needs num_tokens_to_copy={n} >= 1, seq_len={seq_len} > "
            f"{2 * n + 1} and vocab_size={vocab_size} >= 3"
        )
    blanks = seq_len - 2 * n - 1
    to_copy = rng.choice(np.arange(vocab_size - 2), size=(n,), replace=True)
    body = np.insert(to_copy, legacy.randint(0, n, blanks), blank)
    inputs = np.concatenate([body, [vocab_size - 1], np.full(n, blank)]).astype(np.int64)
    targets = np.concatenate([np.full(n + blanks + 1, NO_TARGET), to_copy]).astype(np.int64)
    return inputs, targets
