"""What the every-memory runs can show (docs/every_memory.md), by the checks pages' one rule
(analysis/plateau.py): a cell's verdict (solved by every seed, or by none) stands where it has at
least MIN_SEEDS seeds that agree (all solved or none) and, for seeds that did not solve, none
whose run was still rising when it stopped; such a cell reads *not solved within N updates* or
*inconclusive*. Also the page's table of differences from the paper's protocol, and what the
plain PyTorch loop (scripts/plain_lstm_addition.py) found beside the framework's LSTM.
"""

import json
from pathlib import Path

import pandas as pd

from longterm.analysis import published
from longterm.analysis.formats import joined, pct
from longterm.analysis.plateau import ABOVE_CHANCE, EPS, MIN_SEEDS, RISE_EPOCHS, TIE, rise
from longterm.analysis.plateau import rule as plateau_rule
from longterm.analysis.runs import config_values

PLAIN_LOOP = "plain_lstm_addition.json"  # beside the page's figure: <page without .md>/
NEAR = ABOVE_CHANCE  # the checks pages' rule: within this of chance, a run learned nothing

RULE = (
    "A cell reads *solved* where every seed solved and *no seed* where none did. "
    + plateau_rule("agreeing (all solved or none)")
    + " Here: a cell with fewer seeds reads *inconclusive*, one whose seeds split (some solved) "
    "too, and one whose unsolved seeds were still rising reads *not solved within N updates*."
)


def rises(seeds: pd.DataFrame, runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell (`keys`): `rises`, each unsolved seed's rise at its cutoff (plateau.rise of its
    chosen run, the largest where several learning rates tie), and `updates`, the most updates of
    its runs."""
    by_dir = {r.run_dir: r for r in runs.itertuples()}
    found = []
    for s in seeds.itertuples():
        chosen = [by_dir[d] for d in s.run_dirs if d in by_dir]
        up = max((rise(r.history, r.status) for r in chosen), default=0.0)
        updates = max((int(r.updates) for r in chosen), default=0)
        found.append((*(getattr(s, k) for k in keys), 0.0 if s.solved else up, updates))
    table = pd.DataFrame(found, columns=[*keys, "rise", "updates"])
    return table.groupby(keys).agg(rises=("rise", tuple), updates=("updates", "max")).reset_index()


def still_rising(cell) -> bool:
    return any(r > TIE + EPS for r in getattr(cell, "rises", ()) or ())


def qualified(what: str, cells: list) -> list[str]:
    """The unsolved cells of one memory said by the rule: `no seed at T0 = 50` at a plateau,
    `not solved within N updates at T0 = 100 (still rising: +2.1 / +0.4 / +3.0 points ...)`."""
    plateau = [c for c in cells if not still_rising(c)]
    rising = [c for c in cells if still_rising(c)]
    said = [(what, plateau)] if plateau else []
    for c in rising:
        gained = " / ".join(f"+{pct(r)}" for r in c.rises)
        said.append(
            (
                f"not solved within {int(c.updates):,} updates, still rising (points gained "
                f"over the last {RISE_EPOCHS} epochs, each seed: {gained})",
                [c],
            )
        )
    return said


def few(n: int) -> str:
    return f" (*inconclusive*: {n} seed{'s' if n != 1 else ''} run, fewer than {MIN_SEEDS})"


def setting(runs: pd.DataFrame) -> str:
    """The protocol of the runs trained here (`runs`: every one but the archived paper's
    network)."""
    own = runs
    if own.empty:
        return "No memory beside the paper's network has a finished run yet."
    data = pd.DataFrame([c["data"] for c in own.config]).drop_duplicates(
        ["batch_size", "batches_per_epoch", "val_size"]
    )
    return (
        "The memories trained here: "
        + "; ".join(
            f"batches of {d.batch_size} sequences, epochs of {d.batches_per_epoch} updates, "
            f"validation on {d.val_size} sequences"
            for d in data.itertuples()
        )
        + f"; learning rates {', '.join(f'{lr:g}' for lr in sorted(set(own.lr)))} (3e-3 leads)."
    )


def listing(T0s: list[int]) -> str:
    """T0 = 50, 100 and 500."""
    text = ", ".join(map(str, T0s[:-1])) + (" and " if len(T0s) > 1 else "") + str(T0s[-1])
    return f"T0 = {text}"


def seeded(what: str, lengths: list[tuple[int, int]], most: int) -> list[str]:
    """`what` at `lengths` ((T0, seeds run) pairs), those with fewer seeds than `most` said apart
    with their count: ["every seed at T0 = 50 (1 of 3 seeds run)"]."""
    counts = sorted({n for _, n in lengths}, reverse=True)
    said = []
    for n in counts:
        at = listing([t for t, m in lengths if m == n])
        note = few(n) if n < MIN_SEEDS else f" ({n} of {most} seeds run)" if n < most else ""
        said.append(f"{what} at {at}{note}")
    return said


def differences(runs: pd.DataFrame) -> str:
    """Where the memories trained here differ from the paper's protocol (§2.2; published.py):
    the runs' values read from their configs."""
    own = runs
    if own.empty:
        return ""

    def read(*keys: str, default: object = None) -> str:
        return joined(config_values(own, *keys, default=default))

    rows = {
        "updates an epoch": (
            read("data", "batches_per_epoch"),
            published.PROTOCOL["batches_per_epoch"],
        ),
        "validation sequences": (read("data", "val_size"), published.PROTOCOL["val_size"]),
        "learning rates": (
            ", ".join(f"{lr:g}" for lr in sorted(set(own.lr))),
            ", ".join(f"{lr:g}" for lr in published.LEARNING_RATES),
        ),
        "epoch limit": (
            f"{int(own.max_epochs.max())} (a race's rivals capped at its leader's epochs)",
            published.EPOCH_LIMIT,
        ),
        "optimizer": (
            f"{read('optim', 'name', default='adam')}, weight decay "
            f"{read('optim', 'weight_decay', default=0)}, schedule "
            f"{read('optim', 'schedule', default='none')}",
            "Adam",
        ),
        "stop": (
            f"at {thresholds(own)} validation accuracy",
            "100% validation accuracy (Table 1 counts the epochs to it)",
        ),
    }
    lines = ["| | here (the runs' configs) | the paper (§2.2) |", "|---|---|---|"]
    lines += [f"| {k} | {here} | {paper} |" for k, (here, paper) in rows.items()]
    return "\n".join(lines)


def thresholds(runs: pd.DataFrame) -> str:
    """The stop callback's thresholds over the runs, in %."""
    found = {
        c.get("callbacks", {}).get("stop_when_solved", {}).get("threshold") for c in runs.config
    }
    return ", ".join(f"{100 * t:g}%" for t in sorted(found - {None})) or "not recorded"


def short(commit: str) -> str:
    """`0123456789ab`, with a word where the checkout had uncommitted changes (`-dirty`)."""
    dirty = commit.endswith("-dirty")
    return commit.removesuffix("-dirty")[:12] + (" with uncommitted changes" if dirty else "")


def plain_loop(folder: Path | None) -> str:
    """What the plain PyTorch loop found, read from its record beside the page (`folder`); empty
    where there is none."""
    path = folder / PLAIN_LOOP if folder else None
    if path is None or not path.exists():
        return ""
    r = json.loads(path.read_text())
    said, near = [], []
    for run in r["runs"]:
        near.append(max(c["val_acc"] for c in run["curve"]) < run["constant_predictor_acc"] + NEAR)
        accs = [c["val_acc"] for c in run["curve"]]
        said.append(
            f"at T0 = {run['T0']}, {pct(min(accs))}–{pct(max(accs))}% over "
            f"{run['curve'][-1]['update']:,} updates (every {run['curve'][0]['update']:,}: "
            + ", ".join(pct(a) for a in accs)
            + f"; the constant predictor {pct(run['constant_predictor_acc'])}%)"
        )
    verdict = (
        f"stays within {pct(NEAR)} points of the constant predictor at every length it ran"
        if all(near)
        else f"rises more than {pct(NEAR)} points above the constant predictor at some length"
    )
    return (
        f"A plain PyTorch loop written apart from the framework on addition {verdict} "
        f"({r['model']}; `{r['command']}`, commit {short(r['commit'])}, {r['machine']}; "
        f"[its record]({folder.name}/{PLAIN_LOOP})): " + "; ".join(said) + ". Beside it, the "
        "rnn, lstm and linear_memory rows of the addition table."
    )
