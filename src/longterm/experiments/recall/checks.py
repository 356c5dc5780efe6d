"""The published statements on multi-query associative recall (MQAR) against state size, each a
check computed from the recall sweep's points (recall/page.py) with a verdict: holds, does not
hold, inconclusive or not reproduced within N updates (analysis/plateau.py: what the runs can
show), or not tested here (no runs where the check needs them).

A point is one model at one width and one setting (T0, key-value pairs): per seed, the race's
winner, the best validation accuracy over the learning rates (zoology reports "the maximum
performance for each model over four learning rates"); its `acc` is the median over seeds, its
`cell` (plateau.Cell) every seed's value and how much its run was still rising. Its `kind` is
what the model declares (recall/page.py, `kinds`): *attention* for a state that grows with the
length, *fixed* for one that does not; the gated convolution the statements name
(CONVOLUTION) grows too and is read apart. The quotes are the sources' own words.
"""

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from longterm.analysis.formats import pct
from longterm.analysis.plateau import TIE, Cell, judged
from longterm.analysis.plateau import rule as plateau_rule

SOLVED = 0.99  # "near 1.0": the best validation accuracy at or above this
MARGIN = TIE  # A above B: higher by more than this; smaller gaps are ties
# The gated convolution the statements name: it carries its whole input (N·D·T numbers a layer),
# a state that grows with the length as attention's does, but it is the statements' other side.
CONVOLUTION = "hyena"
ATTENTION, FIXED, GATED_CONV = "attention", "fixed", "convolution"  # a point's `kind`

ZOOLOGY = "https://arxiv.org/abs/2312.04927"
ZOOLOGY_BLOG = "https://hazyresearch.stanford.edu/blog/2023-12-11-zoology1-analysis"
BASED = "https://arxiv.org/abs/2402.18668"
DELTANET = "https://arxiv.org/abs/2406.06484"
# zoology's Figure 2 sweep (HazyResearch/zoology at this commit)
ZOOLOGY_CONFIG = (
    "https://github.com/HazyResearch/zoology/blob/4261f62eecc372d0af99e57890f922caf0d188c2/"
    "zoology/experiments/paper_configs/iclr24_zoology_figure2/configs.py"
)


@dataclass(frozen=True)
class Outcome:
    verdict: str  # "holds", "does not hold", "inconclusive", "not reproduced within N updates"
    why: str  # or "not tested here"


def untested(why: str) -> Outcome:
    return Outcome("not tested here", why)


def cells(points: pd.DataFrame) -> list[Cell]:
    """The points' cells (plateau.Cell): their seeds, or a point without them as one seed."""
    label = [f"{p.model} D={p.width} at T0 = {p.T0}" for p in points.itertuples()]
    if "cell" not in points:
        return [Cell(name, (acc,)) for name, acc in zip(label, points.acc, strict=True)]
    found = zip(label, points.cell, strict=True)
    return [Cell(name, c.values, c.rises, c.updates) for name, c in found]


def read(verdict: str, why: str, points: pd.DataFrame) -> Outcome:
    """A verdict computed from `points`, as their runs can show it (plateau.judged)."""
    return Outcome(*judged(verdict, why, cells(points)))


def of_kind(points: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    return points[points.kind.isin(kinds)] if "kind" in points else points.iloc[0:0]


def names(points: pd.DataFrame) -> str:
    return ", ".join(sorted(points.model.unique()))


def complete(points: pd.DataFrame) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The grid the checks read, a line for each setting run in part, and a line for each model
    placed beside the grid. The grid's models are those run at more than one setting (all of
    them where no model is): a model run at one length only, a user's among them, is shown in the
    tables and the figure but read by no check, so that it changes no verdict on the others. The
    grid's settings (T0, pairs) are those that hold every width of every grid model: a verdict
    on a setting still running, or run for some models only, would be one of whichever ran
    first."""
    if points.empty:
        return points, [], []
    where = points.groupby(["model", "width"]).apply(
        lambda g: len(set(zip(g.T0, g.kv, strict=True))), include_groups=False
    )
    core = set(where[where > 1].index) or set(where.index)
    beside = sorted({m for m, w in set(where.index) - core})
    in_grid = pd.Series(
        [(m, w) in core for m, w in zip(points.model, points.width, strict=True)], points.index
    )
    grid = points[in_grid]
    kept, partial = [], []
    for (T0, kv), g in grid.groupby(["T0", "kv"]):
        have = len(core & set(zip(g.model, g.width, strict=True)))
        if have == len(core):
            kept.append(g)
        else:
            partial.append(f"T0 = {T0}, {kv} pairs ({have} of {len(core)} model-width points)")
    notes = []
    for m in beside:
        own = points[points.model == m]
        notes.append(f"{m} (run at T0 = {lengths(own)} only)")
    return (pd.concat(kept) if kept else points.iloc[0:0]), partial, notes


def point(p: pd.Series) -> str:
    """`hyena D=32 at T0 = 128: 41.2%`, each seed's value where there are several."""
    seeds = getattr(p, "cell", None)
    value = seeds.text() if isinstance(seeds, Cell) and len(seeds.values) > 1 else pct(p.acc)
    return f"{p.model} D={p.width} at T0 = {p.T0}: {value}%"


def lengths(points: pd.DataFrame) -> str:
    return ", ".join(str(t) for t in sorted(points.T0.unique()))


def attention_solves(points: pd.DataFrame) -> Outcome:
    att = of_kind(points, ATTENTION)
    if att.empty:
        return untested("no runs of an attention model (a state that grows with the length)")
    below = att[att.acc < SOLVED]
    if below.empty:
        low = att.loc[att.acc.idxmin()]
        return read(
            "holds",
            f"all {len(att)} attention points ({names(att)}) at T0 = {lengths(att)} reach "
            f"{pct(SOLVED)}% (lowest {point(low)})",
            att,
        )
    return read(
        "does not hold",
        f"{len(below)} of {len(att)} attention points below {pct(SOLVED)}%: "
        + "; ".join(point(p) for _, p in below.iterrows()),
        att,
    )


def convolution_needs_width(points: pd.DataFrame, model: str = CONVOLUTION) -> Outcome:
    own = points[points.model == model]
    T0s = sorted(own.T0.unique())
    if len(T0s) < 2:
        at = f" (only at T0 = {T0s[0]})" if T0s else ""
        return untested(f"no {model} runs at two lengths{at}")
    short, long = (own[own.T0.eq(t)].set_index("width").acc for t in (T0s[0], T0s[-1]))
    both = sorted(set(short.index) & set(long.index))
    if not both or len(long) < 2:
        return untested(f"no {model} width run at both T0 = {T0s[0]} and {T0s[-1]}, or one width")
    falls = [long[w] < short[w] - MARGIN for w in both]
    narrow, wide = long.sort_index().iloc[[0, -1]].items()
    rises = wide[1] > narrow[1] + MARGIN
    numbers = "; ".join(
        f"D={w}: {pct(short[w])}% at T0 = {T0s[0]} → {pct(long[w])}% at {T0s[-1]}" for w in both
    )
    numbers += f"; at T0 = {T0s[-1]}: D={narrow[0]} {pct(narrow[1])}% → D={wide[0]} {pct(wide[1])}%"
    holds = all(falls) and rises
    read_here = own[own.T0.isin([T0s[0], T0s[-1]])]
    return read("holds" if holds else "does not hold", numbers, read_here)


def fixed_state_below_attention(points: pd.DataFrame) -> Outcome:
    fixed, att = of_kind(points, FIXED), of_kind(points, ATTENTION)
    tested, failing, parts = [], [], []
    for T0 in sorted(set(fixed.T0) & set(att.T0)):
        best = att[att.T0 == T0].acc.max()
        per_model = fixed[fixed.T0 == T0].groupby("model").acc.max()
        tested.append(T0)
        top = per_model.idxmax()
        parts.append(
            f"T0 = {T0}: attention {pct(best)}%, best fixed state {top} {pct(per_model[top])}%"
        )
        failing += [f"{m} at T0 = {T0}" for m, a in per_model.items() if a >= best - MARGIN]
    if not tested:
        return untested("no setting with runs of both an attention and a fixed-state model")
    both = pd.concat([fixed, att])
    both = both[both.T0.isin(tested)]
    if failing:
        return read("does not hold", "; ".join(parts) + f"; not below: {', '.join(failing)}", both)
    return read("holds", "; ".join(parts), both)


def equal_state(points: pd.DataFrame, a: str, b: str, T0: int) -> tuple[float, float, int] | None:
    """Each model's best accuracy among its points of state size at most S at one length: S the
    smaller of the two models' largest state sizes where their ranges meet, else the larger of
    their smallest (one model read at its smallest point, the other at all its points): (acc a,
    acc b, S), or None when either has no point at this length."""
    own = {m: points[(points.model == m) & (points.T0 == T0)] for m in (a, b)}
    if any(p.empty for p in own.values()):
        return None
    states = own.values()
    limit = max(min(p.state.max() for p in states), max(p.state.min() for p in states))
    best = [own[m][own[m].state <= limit].acc.max() for m in (a, b)]
    return None if any(pd.isna(x) for x in best) else (best[0], best[1], int(limit))


def above_at_equal_state(points: pd.DataFrame, pairs: tuple[tuple[str, str], ...]) -> Outcome:
    """Each pair's first model above its second at equal state (equal_state) at every length
    where both have points."""
    parts, below, unmet = [], [], []
    for a, b in pairs:
        found = {T0: equal_state(points, a, b, T0) for T0 in sorted(points.T0.unique())}
        found = {T0: r for T0, r in found.items() if r is not None}
        unmet += [] if found else [f"{a} and {b}"]
        for T0, (x, y, s) in found.items():
            parts.append(f"T0 = {T0}, state ≤ {s:,}: {a} {pct(x)}%, {b} {pct(y)}%")
            below += [] if x > y + MARGIN else [f"{a} not above {b} at T0 = {T0}"]
    models = {m for pair in pairs for m in pair}
    both = points[points.model.isin(models)]
    if below:
        not_above = f"; {', '.join(below)}" if len(pairs) > 1 else ""
        return read("does not hold", "; ".join(parts) + not_above, both)
    if unmet:
        return untested(f"no setting where {' or '.join(unmet)} both have points")
    return read("holds", "; ".join(parts), both)


def delta_rule_above_additive(points: pd.DataFrame) -> Outcome:
    return above_at_equal_state(points, (("deltanet", "gla"),))


ORDER = (("deltanet", "mamba"), ("gla", "mamba"), ("mamba", "hyena"))


def recall_order(points: pd.DataFrame) -> Outcome:
    return above_at_equal_state(points, ORDER)


def state_size_tradeoff(points: pd.DataFrame) -> Outcome:
    parts, signs = [], []
    for T0, p in points.dropna(subset=["state"]).groupby("T0"):
        if len(p) < 3 or p.acc.nunique() < 2:
            continue
        rho = p.state.rank().corr(p.acc.rank())  # Spearman's ρ: Pearson's on the ranks
        parts.append(f"T0 = {T0}: ρ = {rho:.2f} over {len(p)} points")
        signs.append(rho > 0)
    if not parts:
        return untested("fewer than 3 points of different accuracy at every length")
    return read("holds" if all(signs) else "does not hold", "; ".join(parts), points)


@dataclass(frozen=True)
class Check:
    source: str  # the paper and where
    url: str
    quote: str  # the source's words ("" where `statement` says it)
    rule: str  # the check made here
    test: Callable[[pd.DataFrame], Outcome]
    statement: str = ""  # where no sentence of the source says it: what it shows, in our words


CHECKS = (
    Check(
        "Zoology, blog post 1 (Eyuboglu, Arora, Zhang 2023), §2",
        ZOOLOGY_BLOG,
        "to solve AR on longer and longer sequences, gated-convolutions needed more and more "
        "dimensionality (and, thus, FLOPs) while attention did not",
        f"Attention (every model whose declared state grows with the length, {CONVOLUTION} "
        f"apart) at or above {pct(SOLVED)}% at every length and width.",
        attention_solves,
    ),
    Check(
        "Zoology, blog post 1 (Eyuboglu, Arora, Zhang 2023), §2",
        ZOOLOGY_BLOG,
        "to solve AR on longer and longer sequences, gated-convolutions needed more and more "
        "dimensionality",
        f"Hyena (a gated convolution): at each width, lower at the longest T0 than at the "
        f"shortest, and at the longest T0 the widest above the narrowest (by more than "
        f"{pct(MARGIN)} points).",
        convolution_needs_width,
    ),
    Check(
        "Based (Arora et al. 2024), abstract",
        BASED,
        "efficient alternatives to attention (e.g. H3, Mamba, RWKV) maintain a fixed-size "
        "recurrent state, but struggle at recall",
        "At every length, each fixed-state model's best point (a declared state that does not "
        f"grow with the length) more than {pct(MARGIN)} points below the best attention point.",
        fixed_state_below_attention,
    ),
    Check(
        "Based (Arora et al. 2024), abstract",
        BASED,
        "we identify a key tradeoff between a model's state size and recall ability",
        "At every length, accuracy rises with state size across all points (Spearman ρ > 0).",
        state_size_tradeoff,
    ),
    Check(
        "DeltaNet (Yang et al. 2024), abstract",
        DELTANET,
        "more expressive variants of linear transformers which replace the additive update in "
        "linear transformers with the delta rule [DeltaNet] have been found to be more effective "
        "at associative recall",
        "At equal state size (the rule above), deltanet more than "
        f"{pct(MARGIN)} points above gla (additive, gated) at every length with both.",
        delta_rule_above_additive,
    ),
    Check(
        "Zoology (Arora et al. 2023) and the MQAR figures that extend it (Based, DeltaNet)",
        ZOOLOGY,
        "",
        "At equal state size (the rule above), deltanet and gla each more than "
        f"{pct(MARGIN)} points above mamba, and mamba above hyena, at every length.",
        recall_order,
        statement="the delta rule and gated linear attention recall above Mamba, and Mamba "
        "above Hyena, at equal state size (a summary of their MQAR comparisons in our words, not a "
        "quotation; their figures' numbers are not read here)",
    ),
)

RULE = (
    f"A point is one model at one width and length: per seed, the best validation accuracy (over "
    f"the query steps) of the learning rates its race ran; a point with several seeds is read at "
    f"their median and shown seed by seed. *Attention* is every model whose declared state grows "
    f"with the length (its recorded state size at two lengths, or what its configuration "
    f"declares at a longer one), {CONVOLUTION} apart (the gated convolution the statements "
    f"name); a *fixed-state* model's does not grow. *A above B* means higher by more than "
    f"{pct(MARGIN)} points; smaller gaps are ties. *At equal "
    f"state size* compares, at one length, each model's best point among those of state size at "
    f"most S, where S is the smaller of the two models' largest state sizes (so the model with "
    f"the smaller states uses all its points and the other only those no larger), or, where "
    f"every state of one model is smaller than every state of the other, the other's smallest "
    f"(its narrowest point against all of the first model's). The checks read the grid: the "
    f"models run at more than one length, at the settings that hold each of them at every "
    f"width; a setting run in part, or a model run at one length only (a model of your own), is "
    f"shown below but read by no check. "
    + plateau_rule(f"agreeing within {pct(TIE)} points")
    + " A check with no runs where it needs them says *not tested here* and why."
)


def check_rows(points: pd.DataFrame) -> list[dict[str, str]]:
    """One row per published statement: source, quote, the check here, its verdict and numbers."""
    rows = []
    for c in CHECKS:
        outcome = c.test(points) if not points.empty else untested("no runs")
        rows.append(
            {
                "source": f"[{c.source}]({c.url})",
                "published statement": f"“{c.quote}”" if c.quote else c.statement,
                "check here": c.rule,
                "verdict": f"**{outcome.verdict}**: {outcome.why}",
            }
        )
    return rows
