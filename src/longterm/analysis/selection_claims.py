"""The Mamba paper's synthetic-task claims (Gu & Dao 2023, arXiv 2312.00752, §4.1) as rows of the
claims page (longterm.analysis.claims), judged by its rule (analysis/claim_verdicts.py):

- selective copying (§4.1.1, Table 1): selection against time-invariant mixers, mamba against
  s4d and hyena at the same width and updates, by the best validation accuracy over the marker
  steps;
- induction heads (§4.1.2, Table 2): trained at one length and tested far beyond it
  (`eval.lengths`, training/eval_lengths.py), mamba against the transformer by the accuracy at
  the longest tested length, with both models' accuracy at every tested length beside it.

The runs: conf/experiment/selection.yaml (its header gives the commands). Each row shows the
models' parameters and state sizes (result.json's `state_size`: numbers carried per sequence at
inference after the training width).
"""

import pandas as pd

from longterm.analysis.claim_verdicts import (
    ABOVE_CHANCE,
    Claim,
    Comparison,
    chance_of,
    claim_cells,
    claim_stats,
    stats,
    verdict,
)
from longterm.analysis.formats import pct

MAMBA, S4D, HYENA, ATTENTION = "mamba L=2", "s4d L=2", "hyena L=2", "transformer L=2"
COPYING, INDUCTION = "selective_copying", "induction_heads"
# The experiment's design (the commands in conf/experiment/selection.yaml): induction heads trained
# at T0 = 64 and tested up to eval.lengths' longest, 1,024 steps.
TRAINED, LONGEST = 64, 1024
GU_DAO = "Gu & Dao 2023 (Mamba)"


def at_length(length: int) -> str:
    """The runs' column of the accuracy at a tested length (result.json's `eval_lengths`)."""
    return f"at T = {length}"


COPYING_CLAIM = Claim(
    f"{GU_DAO}, §4.1.1, Table 1",
    "Selective copying (the tokens to copy at random places among noise) needs a time-varying "
    "model: time-invariant (LTI) layers such as S4 and global convolutions have difficulty "
    "with it for lack of content-awareness (§3.1, Figure 2), while Mamba solves it easily (§1); "
    "Table 1 sets the selective S6 layer against S4 and Hyena's convolution.",
    "Mamba (selective) against S4D and Hyena (time-invariant), 2 layers, D = 64, the same "
    "updates, on selective copying at T0 = 128 with 16 data tokens and 16 token ids (the "
    "paper's 4,096 steps), read at every marker step (conf/experiment/selection.yaml).",
    COPYING,
    (Comparison(MAMBA, S4D), Comparison(MAMBA, HYENA)),
)
INDUCTION_CLAIM = Claim(
    f"{GU_DAO}, §4.1.2, Table 2",
    "A selective state space model trained on induction heads at one length extrapolates far "
    "beyond it: Mamba solves the task and extrapolates its solution to over 1M tokens (§1), "
    "trained at 256 steps and tested up to 2^20 (Table 2, against attention models).",
    f"Mamba against the transformer (attention span {LONGEST:,}: every step of the longest "
    f"test), 2 layers, D = 64, trained on induction heads at T0 = {TRAINED} with 16 token ids "
    f"(the paper's 256) and tested at longer lengths (eval.lengths, up to {LONGEST:,} = "
    f"{LONGEST // TRAINED}x; conf/experiment/selection.yaml): mamba beats the transformer at "
    f"T = {LONGEST:,}.",
    INDUCTION,
    (Comparison(MAMBA, ATTENTION, value=at_length(LONGEST)),),
)


def tested_lengths(runs: pd.DataFrame) -> list[int]:
    """Every length the runs were tested at after training (`eval_lengths`), ascending."""
    if runs.empty or "eval_lengths" not in runs:
        return []
    found = {int(t) for e in runs.eval_lengths if isinstance(e, dict) for t in e}
    return sorted(found)


def with_lengths(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with a column of accuracies per tested length (`at_length`), empty where a run
    was not tested there."""
    found = [e if isinstance(e, dict) else {} for e in runs.eval_lengths]
    columns = {at_length(t): [e.get(str(t)) for e in found] for t in tested_lengths(runs)}
    return runs.assign(**columns)


def state_note(runs: pd.DataFrame, task: str, name: str) -> str:
    """`, state N numbers`: what `name` carries per sequence at inference on `task` (result.json's
    `state_size`, at the training width); empty where the runs record none."""
    own = runs[(runs.task == task) & (runs.name == name)]
    size = own.state_size.dropna().max() if "state_size" in own else None
    return "" if size is None or pd.isna(size) else f", state {int(size):,} numbers"


def constant_answer(runs: pd.DataFrame, task: str) -> float | None:
    """Chance at any tested length: the target is uniform on vocab - 1 token ids (docs/tasks.md,
    tasks/induction_heads.py), so a constant answer scores 1/(vocab - 1); the vocabulary is the
    runs' own (their first run's config)."""
    own = runs[runs.task == task] if not runs.empty else runs
    return None if own.empty else 1 / (own.config.iloc[0]["task"]["params"]["vocab"] - 1)


def copying_row(runs: pd.DataFrame) -> dict[str, str]:
    """Selective copying: the best validation accuracies, parameters, state sizes and chance (the
    best constant predictor on the validation set)."""
    claim = COPYING_CLAIM
    found = claim_stats(claim, runs)
    chance = chance_of(runs, claim.task)
    numbers = [
        s.cell() + state_note(runs, claim.task, name)
        for (name, _), s in found.items()
        if s is not None
    ]
    if chance is not None:
        numbers.append(f"chance {pct(chance)}")
    return claim_cells(claim, numbers, verdict(claim, found, chance))


def length_line(runs: pd.DataFrame, name: str) -> str | None:
    """`name: seeds, parameters, state; T = 64 (trained) mean (range); T = 128 ...`: the best
    validation accuracy at the training length, then the accuracy at every tested length."""
    best = stats(runs, INDUCTION, name)
    if best is None:
        return None
    trained = int(runs[(runs.task == INDUCTION) & (runs.name == name)].T0.max())
    spans = [f"T = {trained} (trained, best val) {best.span()}"] + [
        f"T = {t} {s.span()}"
        for t in tested_lengths(runs[(runs.task == INDUCTION) & (runs.name == name)])
        if (s := stats(runs, INDUCTION, name, at_length(t))) is not None
    ]
    seeds = f"{len(best.accs)} seed{'s' if len(best.accs) > 1 else ''}"
    head = f"{name}: {seeds}, {best.params:,} parameters{state_note(runs, INDUCTION, name)}"
    return "; ".join([head, *spans])


def induction_row(runs: pd.DataFrame) -> dict[str, str]:
    """Induction heads: each model's accuracy at the training length and at every tested length,
    parameters and state sizes; the verdict at the longest, against chance 1/(vocab - 1)."""
    claim = INDUCTION_CLAIM
    runs = with_lengths(runs) if not runs.empty else runs
    found = claim_stats(claim, runs)
    chance = constant_answer(runs, claim.task)
    lines = [length_line(runs, name) for name in (MAMBA, ATTENTION)] if not runs.empty else []
    numbers = [line for line in lines if line is not None]
    if numbers:
        numbers.insert(0, "accuracy %, mean (range):")
    if chance is not None:
        numbers.append(f"chance {pct(chance)} (a constant answer: 1/(vocab − 1))")
    unlearned = not_learned(runs, chance)
    judged = verdict(claim, found, chance)
    if unlearned and not judged.startswith("**inconclusive**"):
        judged = f"**inconclusive**: {unlearned}"
    return claim_cells(claim, numbers, judged)


def not_learned(runs: pd.DataFrame, chance: float | None) -> str:
    """Why the comparison at a longer length tests no extrapolation: a model none of whose seeds
    learned the task at its training length (best validation accuracy within ABOVE_CHANCE of
    chance; the claims page's rule that runs which learned nothing test nothing); empty when
    both learned it."""
    if chance is None or runs.empty:
        return ""
    found = {name: stats(runs, INDUCTION, name) for name in (MAMBA, ATTENTION)}
    below = [
        f"{name} (best {pct(s.high)}%)"
        for name, s in found.items()
        if s is not None and s.high < chance + ABOVE_CHANCE
    ]
    if not below:
        return ""
    return (
        f"{' and '.join(below)} did not learn the task at its training length (chance "
        f"{pct(chance)}%), so its accuracy at longer lengths tests no extrapolation"
    )


def selection_rows(runs: pd.DataFrame) -> list[dict[str, str]]:
    """The two rows, in the paper's order."""
    return [copying_row(runs), induction_row(runs)]
