"""The Mamba paper's synthetic-task claims (Gu & Dao 2023, arXiv 2312.00752, §4.1) as rows of the
claims page (claims/page.py), judged by its rule (claims/verdicts.py):

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

from longterm.analysis.formats import joined, pct
from longterm.analysis.plateau import ABOVE_CHANCE
from longterm.analysis.runs import config_values
from longterm.experiments.claims.verdicts import (
    Claim,
    Comparison,
    chance_of,
    claim_cells,
    claim_stats,
    stats,
    verdict,
)

MAMBA, S4D, HYENA, ATTENTION = "mamba L=2", "s4d L=2", "hyena L=2", "transformer L=2"
COPYING, INDUCTION = "selective_copying", "induction_heads"
# The experiment's design (the commands in conf/experiment/selection.yaml): induction heads trained
# at T0 = 64 and tested up to eval.lengths' longest, 1,024 steps.
TRAINED, LONGEST = 64, 1024
GU_DAO = "Gu & Dao 2023 (Mamba)"
# The learning rate the Mamba paper reports for its attention models on induction heads (its
# training details for §4.1.2): at 1e-3 they did not learn.
PAPER_ATTENTION_LR = 2e-4


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
    """`name: seeds, parameters, state; T = 64 (trained) each seed; T = 128 ...`: the best
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
        numbers.insert(0, "accuracy %, each seed:")
    if chance is not None:
        numbers.append(f"chance {pct(chance)} (a constant answer: 1/(vocab − 1))")
    unlearned = not_learned(runs, chance)
    judged = verdict(claim, found, chance)
    if unlearned and not judged.startswith("**inconclusive**"):
        judged = f"**inconclusive**: {unlearned}"
    rates = learning_rates(runs)
    if rates:
        numbers.append(rates)
    off = off_rate(found.get((ATTENTION, at_length(LONGEST))))
    if off:
        kind, _, why = judged.removeprefix("**").partition("**: ")
        judged = f"**inconclusive**: {off}" + (f"; {why}" if kind == "inconclusive" else "")
    return claim_cells(claim, numbers, judged)


def rates_text(lrs) -> str:
    return ", ".join(f"{lr:.0e}".replace("e-0", "e-") for lr in lrs)


def learning_rates(runs: pd.DataFrame) -> str:
    """`learning rates: mamba L=2 1e-3; transformer L=2 1e-3`, read from the runs."""
    if runs.empty or "lr" not in runs:
        return ""
    own = runs[runs.task == INDUCTION]
    said = [
        f"{name} {rates_text(sorted(set(own[own.name == name].lr)))}"
        for name in (MAMBA, ATTENTION)
        if (own.name == name).any()
    ]
    return "learning rates: " + "; ".join(said) if said else ""


def off_rate(attention) -> str:
    """Why the comparison is not the paper's: the transformer never trained at the learning rate
    the Mamba paper reports for its attention models (the runs' rates read from them); empty when
    it did."""
    if attention is None or not attention.lrs or PAPER_ATTENTION_LR in attention.lrs:
        return ""
    return (
        f"the transformer trained only at {rates_text(attention.lrs)}, where the Mamba paper says "
        f"its attention models did not learn (it reports {rates_text([PAPER_ATTENTION_LR])}): no "
        f"run here at the paper's rate"
    )


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


# The Mamba paper's setting for the two rows (§4.1.1, §4.1.2 and its training details), where
# this page states it; the runs' values beside it are read from their configs.
PAPER_SETTING = {
    "training length (selective copying)": "4,096 steps",
    "training length (induction heads)": "256 steps, tested up to 2^20",
    "vocabulary": "16",
    "layers, width": "2, D = 64",
    "learning rate (attention, induction heads)": "2e-4 (at 1e-3 its attention models did not "
    "learn)",
    "Mamba's dt_rank": "ceil(D / 16) = 4 at D = 64",
}


def setting_table(runs: pd.DataFrame) -> str:
    """Where the Mamba rows' runs differ from the paper's setting: the runs' values read from
    their configs (a key an older run lacks reads as its default: adam, no weight decay, no
    schedule, the MLP head), beside PAPER_SETTING or what this page does not state."""
    own = runs[runs.task.isin([COPYING, INDUCTION])] if not runs.empty else runs
    if own.empty:
        return ""

    def read(rows: pd.DataFrame, *keys: str, default: object = None) -> str:
        return joined(config_values(rows, *keys, default=default))

    copying, induction = (own[own.task == t] for t in (COPYING, INDUCTION))
    attention = induction[induction.name == ATTENTION]
    mamba = own[own.name == MAMBA]
    unstated = "not stated on this page (the paper's training details)"
    here = {
        "training length (selective copying)": f"{read(copying, 'data', 'T0')} steps",
        "training length (induction heads)": f"{read(induction, 'data', 'T0')} steps, tested "
        f"up to {max(tested_lengths(induction), default=0):,}",
        "vocabulary": read(own, "task", "params", "vocab"),
        "layers, width": f"{read(own, 'model', 'layers')}, D = {read(own, 'model', 'dim')}",
        "learning rate (attention, induction heads)": rates_text(sorted(set(attention.lr))),
        "Mamba's dt_rank": read(mamba, "model", "dt_rank"),
        "optimizer": f"{read(own, 'optim', 'name', default='adam')}, weight decay "
        f"{read(own, 'optim', 'weight_decay', default=0)}, schedule "
        f"{read(own, 'optim', 'schedule', default='none')}",
        "head": read(own, "model", "head", default="mlp"),
        "batch": read(own, "data", "batch_size"),
        "updates": f"at most {int(own.updates.max()):,}",
        "seeds": ", ".join(
            f"{n} {int(g.seed.nunique())}" for n, g in own.groupby("name") if len(g)
        ),
    }
    lines = ["| | here (the runs' configs) | Gu & Dao 2023 |", "|---|---|---|"]
    lines += [f"| {k} | {v} | {PAPER_SETTING.get(k, unstated)} |" for k, v in here.items()]
    return "\n".join(lines)
