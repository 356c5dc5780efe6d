"""What runs can show: the one rule every checks page (docs/recall.md, docs/claims.md,
docs/every_memory.md) reads its runs by before it gives a verdict.

A cell is one model at one setting: its seeds' values (one run per seed, the best of its learning
rates where it raced several), each with how much its run was still rising when it stopped. A
verdict computed from cells' values (*holds*, *does not hold*) stands only where every cell it
reads has at least MIN_SEEDS seeds, agreeing within TIE (on pages that compare single values;
the claims page compares seed ranges, so it asks only that they not overlap), and no run still
rising at its cutoff (RISE: its best of the last RISE_EPOCHS validations above its best before
them by more than TIE). Otherwise a *holds* is *inconclusive*, and a *does not hold* is *not
reproduced within N updates* (N the updates the runs had) where a run was still rising, else
*inconclusive*. A run whose best accuracy is within ABOVE_CHANCE of chance learned nothing, and a
comparison where no model beats chance by that much tests nothing (the claims and every-memory
pages).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from longterm.analysis.formats import pct

MIN_SEEDS = 3  # fewer seeds of a cell: no verdict
TIE = 0.01  # 1 point: seeds further apart disagree; a rise larger than this is still rising
RISE_EPOCHS = 2  # a run's rise at its cutoff: its last two validations against those before
EPS = 1e-9  # a difference of exactly TIE (in floating point) is within it
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
ABOVE_CHANCE = 0.05  # a comparison where no model beats chance by this much tests nothing


def rise(history: Sequence[float] | None, status: str = "max_epochs") -> float:
    """How much a run was still rising when it stopped: its best validation accuracy over the
    last RISE_EPOCHS epochs minus its best before them (0 for a run stopped because it solved
    the task, or with too short a history to tell)."""
    h = [float(v) for v in (history or []) if v is not None]
    if status == "solved" or len(h) <= RISE_EPOCHS:
        return 0.0
    return max(0.0, max(h[-RISE_EPOCHS:]) - max(h[:-RISE_EPOCHS]))


def not_reproduced(updates: int) -> str:
    return f"not reproduced within {updates:,} updates"


@dataclass(frozen=True)
class Cell:
    """One model at one setting: its seeds' values, each run's rise at its cutoff (`rise`), and
    the most updates any of its runs had."""

    label: str
    values: tuple[float, ...]
    rises: tuple[float, ...] = ()
    updates: int = 0

    @property
    def median(self) -> float:
        v = sorted(self.values)
        n = len(v)
        return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

    @property
    def spread(self) -> float:
        return max(self.values) - min(self.values)

    @property
    def rising(self) -> bool:
        return any(r > TIE + EPS for r in self.rises)

    def text(self) -> str:
        """Each seed's value in %: `95.7 / 99.7 / 39.4`."""
        return " / ".join(pct(v) for v in self.values)

    @property
    def few(self) -> bool:
        return len(self.values) < MIN_SEEDS

    def split(self, agree: bool = True) -> bool:
        return agree and not self.few and self.spread > TIE + EPS

    def bears(self, agree: bool = True) -> bool:
        """Whether the cell bears a verdict: enough seeds, agreeing (`agree`), none rising."""
        return not (self.few or self.split(agree) or self.rising)


def listed(cells: list[Cell], say, most: int = 6) -> str:
    """Up to `most` cells said by `say`, then how many more."""
    shown = "; ".join(say(c) for c in cells[:most])
    return shown + (f"; {len(cells) - most} more" if len(cells) > most else "")


def problems(cells: list[Cell], agree: bool = True) -> str:
    """Why `cells` bear no verdict, grouped: runs still rising (each rise), seeds that disagree
    (each seed), too few seeds; empty when they all bear one."""
    rising = sorted((c for c in cells if c.rising), key=lambda c: -max(c.rises))
    split = sorted((c for c in cells if c.split(agree)), key=lambda c: -c.spread)
    few = [c for c in cells if c.few]
    said = []
    if rising:
        updates = max(c.updates for c in rising)
        rises = listed(rising, lambda c: f"{c.label} +" + " / +".join(pct(r) for r in c.rises))
        said.append(
            f"{len(rising)} still rising at {updates:,} updates (points gained over their last "
            f"{RISE_EPOCHS} epochs, each seed: {rises})"
        )
    if split:
        seeds = listed(split, lambda c: f"{c.label} {c.text()}")
        said.append(f"{len(split)} with seeds more than {pct(TIE)} points apart ({seeds})")
    if few:
        counts = sorted({len(c.values) for c in few})
        said.append(
            f"{len(few)} with fewer than {MIN_SEEDS} seeds ({' or '.join(map(str, counts))}: "
            + listed(few, lambda c: c.label, most=4)
            + ")"
        )
    return f"of the {len(cells)} cells it reads, " + ", ".join(said) if said else ""


def judged(verdict: str, why: str, cells: Iterable[Cell], agree: bool = True) -> tuple[str, str]:
    """A verdict computed from `cells`' values, with its reasons, as the runs can show it: kept
    where every cell bears one (Cell.bears); else *not reproduced within N updates* for a *does
    not hold* read on runs still rising, *inconclusive* otherwise (why, appended to `why`)."""
    cells = list(cells)
    if verdict not in (HOLDS, FAILS) or all(c.bears(agree) for c in cells):
        return verdict, why
    rising = [c for c in cells if c.rising]
    updates = max((c.updates for c in cells), default=0)
    kind = not_reproduced(updates) if verdict == FAILS and rising else INCONCLUSIVE
    return kind, f"{why}. The values say *{verdict}*, but {problems(cells, agree)}"


def rule(agree: str) -> str:
    """The rule's sentence for a page; `agree` says how that page asks seeds to agree."""
    return (
        f"A verdict stands only where every cell it reads (one model at one setting) has at least "
        f"{MIN_SEEDS} seeds, {agree}, and no run still rising when it stopped (its best validation "
        f"accuracy of the last {RISE_EPOCHS} epochs above its best before them by more than "
        f"{pct(TIE)} points; a run stopped because it solved the task is at its plateau). "
        f"Otherwise a *holds* reads *inconclusive*, and a *does not hold* reads *not reproduced "
        f"within N updates* (N the updates the runs had) where a run was still rising, else "
        f"*inconclusive*; the verdict says which cells and by how much."
    )
