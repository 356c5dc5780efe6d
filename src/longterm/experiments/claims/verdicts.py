"""The verdict rule of the claims page (docs/claims.md; claims/page.py): a claim is a set of
comparisons of models on one task, each model's numbers are its seeds' accuracies (the
best validation accuracy, or another column of the runs such as the accuracy at a tested
length), and one stated rule (RULE) turns them into a verdict.

The claims of each paper live in their own module (page.py, selection.py); this one
holds what they share, so that every row is judged by the same rule; what runs can show (seeds,
runs still rising at their cutoff) is analysis/plateau.py's rule, shared with the other checks
pages.
"""

from dataclasses import dataclass

import pandas as pd

from longterm.analysis.formats import pct
from longterm.analysis.plateau import ABOVE_CHANCE, Cell, judged, rise
from longterm.analysis.plateau import rule as plateau_rule
from longterm.analysis.references import references

BEST = "best_acc"  # the value compared unless a comparison names another column of the runs

RULE = (
    f"A model's numbers are its seeds' best validation accuracies, each shown. *A beats B* when "
    f"every seed of A is above every seed of B (the ranges do not overlap); overlapping ranges "
    f"are a tie, so seeds that disagree by more than the gap between the models give no "
    f"verdict. A claim that A does better than B holds here when A beats B, does not hold when "
    f"B beats A, and is inconclusive when the ranges overlap. A claim that A loses nothing "
    f"against B holds when B does not beat A and does not hold when it does. A claim of several "
    f"comparisons holds when each holds and does not hold when any does not. Any comparison is "
    f"inconclusive when no model in it is {pct(ABOVE_CHANCE)} points above chance (the best "
    f"constant predictor on the same validation set): runs that learned nothing test nothing. "
    + plateau_rule("their ranges compared as above")
)


@dataclass(frozen=True)
class Comparison:
    """`first` does better than `second` (`better`), or loses nothing against it (`no_loss`),
    on the runs' column `value` (the best validation accuracy unless another is named)."""

    first: str
    second: str
    kind: str = "better"
    value: str = BEST


@dataclass(frozen=True)
class Claim:
    """A paper's claim tested on one task by comparisons of models (names as `model_name`)."""

    paper: str
    claim: str
    test: str
    task: str
    comparisons: tuple[Comparison, ...]


@dataclass(frozen=True)
class Stats:
    """A model's accuracies over its seeds on one task."""

    name: str
    accs: tuple[float, ...]
    params: int
    rises: tuple[float, ...] = ()  # each seed's run's rise at its cutoff (plateau.rise)
    updates: int = 0  # the most updates of its runs
    lrs: tuple[float, ...] = ()  # the learning rates its runs trained at

    @property
    def mean(self) -> float:
        return sum(self.accs) / len(self.accs)

    @property
    def low(self) -> float:
        return min(self.accs)

    @property
    def high(self) -> float:
        return max(self.accs)

    def span(self) -> str:
        """Each seed's value in %: `77.6 / 78.0 / 78.3`."""
        return " / ".join(pct(a) for a in self.accs)

    def seeds(self) -> Cell:
        """Its seeds as the plateau rule reads them."""
        return Cell(self.name, self.accs, self.rises, self.updates)

    def cell(self) -> str:
        """`name: each seed, n seeds, parameters`, accuracies in %."""
        seeds = f"{len(self.accs)} seed{'s' if len(self.accs) > 1 else ''}"
        return f"{self.name}: {self.span()}, {seeds}, {self.params:,} parameters"


def stats(runs: pd.DataFrame, task: str, name: str, value: str = BEST) -> Stats | None:
    """`name`'s runs on `task`, one per seed, by the column `value` (a seed whose run lacks it is
    left out; a model named `name value` when the column is not the best validation accuracy);
    None if none. A seed trained at several learning rates counts with the rate of its best
    validation accuracy (the papers' "best of the rates", chosen at the training length, as a
    race chooses), a rate run twice with its latest run; `lrs` are every rate run."""
    own = runs[(runs.task == task) & (runs.name == name)] if not runs.empty else runs
    if own.empty or value not in own:
        return None
    lrs = tuple(sorted(set(own.lr))) if "lr" in own else ()
    latest = ["seed", "lr"] if "lr" in own else ["seed"]
    own = own.sort_values("finished_at").drop_duplicates(latest, keep="last")
    own = own.sort_values(BEST, kind="stable").drop_duplicates("seed", keep="last")
    own = own.sort_values("seed").dropna(subset=[value])
    if own.empty:
        return None
    label = name if value == BEST else f"{name} {value}"
    rises = (
        tuple(rise(h, st) for h, st in zip(own.history, own.status, strict=True))
        if "history" in own
        else ()
    )
    updates = int(own.updates.max()) if "updates" in own else 0
    return Stats(label, tuple(own[value]), int(own.n_params.max()), rises, updates, lrs)


def beats(a: Stats, b: Stats) -> bool:
    return a.low > b.high


def compare(c: Comparison, a: Stats | None, b: Stats | None, chance: float | None) -> tuple:
    """(verdict, why) of one comparison: `holds`, `does not hold` or `inconclusive`."""
    named = (lambda n: n) if c.value == BEST else (lambda n: f"{n} {c.value}")
    missing = [named(n) for n, s in ((c.first, a), (c.second, b)) if s is None]
    if missing:
        return "inconclusive", f"no runs of {', '.join(missing)}"
    return judged(*values_say(c, a, b, chance), (a.seeds(), b.seeds()), agree=False)


def values_say(c: Comparison, a: Stats, b: Stats, chance: float | None) -> tuple[str, str]:
    """(verdict, why) of one comparison from its models' values alone."""
    if chance is not None and max(a.high, b.high) < chance + ABOVE_CHANCE:
        return "inconclusive", f"neither {a.name} nor {b.name} is above chance ({pct(chance)}%)"
    span = f"{a.name} {pct(a.low)}–{pct(a.high)}, {b.name} {pct(b.low)}–{pct(b.high)}"
    if c.kind == "no_loss":
        if beats(b, a):
            return "does not hold", f"{b.name} beats {a.name} ({span})"
        return "holds", f"{b.name} does not beat {a.name} ({span})"
    if beats(a, b):
        return "holds", f"{a.name} beats {b.name} ({span})"
    if beats(b, a):
        return "does not hold", f"{b.name} beats {a.name} ({span})"
    return "inconclusive", f"ranges overlap ({span})"


def combine(verdicts: list[tuple[str, str]]) -> tuple[str, str]:
    """A claim's verdict from its comparisons'."""
    kinds = [v for v, _ in verdicts]
    unreached = [v for v in kinds if v.startswith("not reproduced")]
    verdict = (
        "does not hold"
        if "does not hold" in kinds
        else unreached[0]
        if unreached
        else "holds"
        if all(v == "holds" for v in kinds)
        else "inconclusive"
    )
    return verdict, "; ".join(why for _, why in verdicts)


def chance_of(runs: pd.DataFrame, task: str) -> float | None:
    """The best constant predictor on `task`'s validation set (its first run's)."""
    own = runs[runs.task == task] if not runs.empty else runs
    return None if own.empty else references(own.config.iloc[0]["data"], own.loss.iloc[0])[0]


def claim_stats(claim: Claim, runs: pd.DataFrame) -> dict[tuple[str, str], Stats | None]:
    """Each compared model's Stats by (name, value column), in the order the comparisons name
    them."""
    keys = [(n, c.value) for c in claim.comparisons for n in (c.first, c.second)]
    return {key: stats(runs, claim.task, *key) for key in dict.fromkeys(keys)}


def verdict(claim: Claim, found: dict[tuple[str, str], Stats | None], chance: float | None) -> str:
    """`**verdict**: why` of a claim from its models' Stats (`claim_stats`)."""
    judged = [
        compare(c, found[c.first, c.value], found[c.second, c.value], chance)
        for c in claim.comparisons
    ]
    kind, why = combine(judged)
    return f"**{kind}**: {why}"


NUMBERS = "best val acc %, each seed"  # the page's column of numbers


def claim_cells(claim: Claim, numbers: list[str], judged: str) -> dict[str, str]:
    """A row of the claims table: paper, claim, test, numbers (one per line), verdict."""
    return {
        "paper": claim.paper,
        "claim": claim.claim,
        "test here": claim.test,
        NUMBERS: "<br>".join(numbers) or "no runs",
        "verdict": judged,
    }
