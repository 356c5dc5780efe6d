"""The fixed-state bottleneck's protocol, measured without training (its page:
longterm.experiments.bottleneck.page).

A state of d numbers reads 40 random tokens by h <- lambda h + x (from h = 0); then every token is
tested for recognition from the final state, against attention, which keeps every token.

Protocol (issue 4):
- tokens x_1..x_40 and never-seen tokens y, all i.i.d. N(0, I/d), drawn afresh for every trial;
- state: h = sum_j lambda^(40 - j) x_j; a token's score is <h, x>;
- attention: a token's score is max_j <x, x_j>;
- a token is recognised when its score exceeds mean + 2.8 SD of the scores of `n_unseen`
  never-seen tokens of the same trial (the threshold of that final state);
- recall at distance k (k = 0 the last token, k = 1 the one before it) is the fraction of trials in
  which token 40 - k is recognised; the false-alarm rate is measured on `n_unseen` further
  never-seen tokens per trial.

Why the numbers come out as they do: against a state, a never-seen token scores N(0, S/d) with
S = sum_{m<40} lambda^(2m), and the token at distance k scores about lambda^k plus noise of
variance (S + lambda^(2k)) / d, so its recall is about
P(N(0, 1) > (2.8 sqrt(S/d) - lambda^k) / sqrt((S + lambda^(2k)) / d))   (`predicted_recall`).
"""

import math

import numpy as np
import pandas as pd

N_TOKENS = 40
Z = 2.8  # recognised above mean + Z SD of never-seen tokens' scores
DIMS = (32, 128)
LAMBDAS = (0.8, 0.95)
# The published curve's values, as issue 4 quotes them: (memory, d, lambda, distance) -> recall.
PUBLISHED = {
    ("state", 32, 0.8, 1): 0.47,
    ("state", 32, 0.8, 8): 0.05,
    ("state", 32, 0.8, 16): 0.0,
    ("state", 128, 0.8, 8): 0.05,
    ("state", 32, 0.95, 1): 0.13,
    **{("attention", d, None, k): 1.0 for d in DIMS for k in (1, 8, 16)},
}


def above_threshold(seen: np.ndarray, unseen: np.ndarray) -> np.ndarray:
    """seen (n, a), unseen (n, m) scores of each trial -> (n, a) bool: seen > mean + Z SD."""
    threshold = unseen.mean(1, keepdims=True) + Z * unseen.std(1, keepdims=True)
    return seen > threshold


def recognised(seen: np.ndarray, fresh: np.ndarray, calibrate: np.ndarray) -> np.ndarray:
    """Scores (n, 40), (n, m), (n, m) -> (41,): trials recognising each token, then the summed
    false-alarm rate of the fresh never-seen tokens (the threshold from `calibrate`)."""
    hits = above_threshold(np.concatenate([seen, fresh], 1), calibrate)
    return np.r_[hits[:, :N_TOKENS].sum(0), hits[:, N_TOKENS:].mean(1).sum()]


def trials_at_dim(
    d: int, lambdas: tuple[float, ...], trials: int, n_unseen: int, rng: np.random.RandomState
) -> dict[tuple[str, float | None], np.ndarray]:
    """Recognition counts per token, for each state lambda and for attention, over `trials`
    trials drawn in chunks; keys (memory, lambda), values (N_TOKENS + 1,): the counts by token
    position 0..39 and, last, the false alarms (among trials * n_unseen fresh unseen tokens)."""
    counts = {
        key: np.zeros(N_TOKENS + 1)
        for key in [*(("state", lam) for lam in lambdas), ("attention", None)]
    }
    for start in range(0, trials, 100):
        n = min(100, trials - start)
        x = rng.standard_normal((n, N_TOKENS, d)) / math.sqrt(d)
        y = rng.standard_normal((n, 2 * n_unseen, d)) / math.sqrt(d)  # threshold, false alarms
        calibrate, fresh = y[:, :n_unseen], y[:, n_unseen:]
        for lam in lambdas:
            h = np.einsum("ntd,t->nd", x, lam ** np.arange(N_TOKENS - 1, -1, -1))
            counts["state", lam] += recognised(
                *(np.einsum("ntd,nd->nt", tokens, h) for tokens in (x, fresh, calibrate))
            )
        counts["attention", None] += recognised(
            *(np.einsum("nmd,ntd->nmt", tokens, x).max(-1) for tokens in (x, fresh, calibrate))
        )
    return {key: c / trials for key, c in counts.items()}


def predicted_recall(d: int, lam: float, distance: int) -> float:
    """The Gaussian approximation of the state's recall at `distance` (module docstring)."""
    S = sum(lam ** (2 * m) for m in range(N_TOKENS))
    signal = lam**distance
    z = (Z * math.sqrt(S / d) - signal) / math.sqrt((S + signal**2) / d)
    return 0.5 * math.erfc(z / math.sqrt(2))


def measure(trials: int = 2000, seed: int = 0, n_unseen: int = 500) -> pd.DataFrame:
    """One row per (memory, d, lambda, distance): measured recall, predicted recall (state only)
    and the false-alarm rate of that memory."""
    rows = []
    for d in DIMS:
        rng = np.random.RandomState(np.random.SeedSequence([seed, d]).generate_state(4))
        for (memory, lam), rates in trials_at_dim(d, LAMBDAS, trials, n_unseen, rng).items():
            for position in range(N_TOKENS):
                distance = N_TOKENS - 1 - position
                rows.append(
                    {
                        "memory": memory,
                        "d": d,
                        "lambda": lam,
                        "distance": distance,
                        "recall": rates[position],
                        "predicted": predicted_recall(d, lam, distance) if lam else None,
                        "false_alarms": rates[N_TOKENS],
                    }
                )
    return pd.DataFrame(rows).sort_values(["memory", "d", "lambda", "distance"], ignore_index=True)


def label(memory: str, d: int, lam: float | None) -> str:
    """A memory's name in the page's tables and the figure."""
    return f"state d={d} λ={lam:g}" if memory == "state" else f"attention d={d}"
