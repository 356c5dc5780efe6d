"""The published statements on multi-query associative recall (MQAR) against state size, each a
check computed from the recall sweep's points (longterm.analysis.recall) with a verdict: holds,
does not hold, or not tested here (no runs where the check needs them).

A point is one model at one width and one setting (T0, key-value pairs): its accuracy is the
race's winner, the best validation accuracy over the learning rates (zoology reports "the maximum
performance for each model over four learning rates"). The quotes are the sources' own words.
"""

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from longterm.analysis.formats import pct

SOLVED = 0.99  # "near 1.0": the best validation accuracy at or above this
MARGIN = 0.01  # A above B: higher by more than this (one seed a point: smaller gaps are ties)
ATTENTION = ("all_attention", "feedback", "transformer")  # a key and a value of every step kept
GROWING = ("hyena",)  # carries its whole input (N·D·T numbers a layer): no fixed-size state

ZOOLOGY = "https://arxiv.org/abs/2312.04927"
ZOOLOGY_BLOG = "https://hazyresearch.stanford.edu/blog/2023-12-11-zoology1-analysis"
BASED = "https://arxiv.org/abs/2402.18668"
DELTANET = "https://arxiv.org/abs/2406.06484"
# zoology's Figure 2 sweep (HazyResearch/zoology at this commit)
ZOOLOGY_CONFIG = (
    "https://github.com/HazyResearch/zoology/blob/4261f62eecc372d0af99e57890f922caf0d188c2/"
    "zoology/experiments/paper_configs/iclr24_zoology_figure2/configs.py"
)
# Its settings as that file sets them, set beside ours on the page (quantity -> value).
ZOOLOGY_SETTING = {
    "vocabulary": "8,192",
    "lengths (key-value pairs)": "64 (4), 128 (8), 256 (16)",
    "widths D": "64, 128, 256, 512",
    "layers": "2",
    "batch": "512 sequences at lengths up to 128",
    "training": "100,000 sequences, up to 64 epochs",
    "learning rates": "4, log-spaced from 1e-4 to 1e-2",
    "evaluation": "3,000 sequences",
}


@dataclass(frozen=True)
class Outcome:
    verdict: str  # "holds", "does not hold" or "not tested here"
    why: str


def untested(why: str) -> Outcome:
    return Outcome("not tested here", why)


def complete(points: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The points of the settings (T0, pairs) that hold every model and width found at any
    setting, and a line for each other setting saying how much of it there is: a verdict on a
    setting still running, or run for some models only, would be one of whichever ran first."""
    everyone = set(zip(points.model, points.width, strict=True))
    kept, partial = [], []
    for (T0, kv), g in points.groupby(["T0", "kv"]):
        have = len(everyone & set(zip(g.model, g.width, strict=True)))
        if have == len(everyone):
            kept.append(g)
        else:
            partial.append(f"T0 = {T0}, {kv} pairs ({have} of {len(everyone)} model-width points)")
    return (pd.concat(kept) if kept else points.iloc[0:0]), partial


def point(p: pd.Series) -> str:
    """`hyena D=32 at T0 = 128: 41.2%`."""
    return f"{p.model} D={p.width} at T0 = {p.T0}: {pct(p.acc)}%"


def lengths(points: pd.DataFrame) -> str:
    return ", ".join(str(t) for t in sorted(points.T0.unique()))


def attention_solves(points: pd.DataFrame) -> Outcome:
    att = points[points.model.isin(ATTENTION)]
    if att.empty:
        return untested("no runs of an attention model")
    below = att[att.acc < SOLVED]
    if below.empty:
        low = att.loc[att.acc.idxmin()]
        return Outcome(
            "holds",
            f"all {len(att)} attention points at T0 = {lengths(att)} reach {pct(SOLVED)}% "
            f"(lowest {point(low)})",
        )
    return Outcome(
        "does not hold",
        f"{len(below)} of {len(att)} attention points below {pct(SOLVED)}%: "
        + "; ".join(point(p) for _, p in below.iterrows()),
    )


def convolution_needs_width(points: pd.DataFrame, model: str = "hyena") -> Outcome:
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
    return Outcome("holds" if holds else "does not hold", numbers)


def fixed_state_below_attention(points: pd.DataFrame) -> Outcome:
    fixed = points[~points.model.isin(ATTENTION + GROWING)]
    att = points[points.model.isin(ATTENTION)]
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
    if failing:
        return Outcome("does not hold", "; ".join(parts) + f"; not below: {', '.join(failing)}")
    return Outcome("holds", "; ".join(parts))


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
    if below:
        not_above = f"; {', '.join(below)}" if len(pairs) > 1 else ""
        return Outcome("does not hold", "; ".join(parts) + not_above)
    if unmet:
        return untested(f"no setting where {' or '.join(unmet)} both have points")
    return Outcome("holds", "; ".join(parts))


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
    return Outcome("holds" if all(signs) else "does not hold", "; ".join(parts))


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
        f"Attention (transformer, all_attention, feedback) at or above {pct(SOLVED)}% at every "
        "length and width.",
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
        "At every length, each fixed-state model's best point (mamba, gla, deltanet, s4d, lstm, "
        f"rnn, linear_memory) more than {pct(MARGIN)} points below the best attention point.",
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
    f"A point is one model at one width and length: the best validation accuracy (over the query "
    f"steps) of the learning rates its race ran, the mean over seeds where there are several. *A "
    f"above B* means higher by more than {pct(MARGIN)} points; smaller gaps are ties. *At equal "
    f"state size* compares, at one length, each model's best point among those of state size at "
    f"most S, where S is the smaller of the two models' largest state sizes (so the model with "
    f"the smaller states uses all its points and the other only those no larger), or, where "
    f"every state of one model is smaller than every state of the other, the other's smallest "
    f"(its narrowest point against all of the first model's). The checks "
    f"read only the settings that hold every model at every width; a setting run in part is "
    f"shown below but left out of them. A check with no runs where it needs them says *not "
    f"tested here* and why."
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
