"""The papers' claims against the runs here: one row per claim with the claim in one sentence, the
test made here, the numbers and a verdict computed from them by one stated rule (RULE,
claims/verdicts.py).

    python -m longterm.experiments.claims.page outputs/claims outputs/selection --out docs/claims.md

The sweeps are claims/runs.py's (conf/experiment/claims.yaml) and, for the Mamba paper's rows
(claims/selection.py), conf/experiment/selection.yaml. Each run counts with
its best validation accuracy (over the labelled steps for per-step tasks), or its accuracy at a
tested length where a comparison says so; a model's numbers are each seed's. A model on a task
(`task_name`, `model_name`) joins runs of one setting but their learning rates and seeds
(analysis/identity.py): runs of another length, budget, recipe or model key under the same names
are refused in one line naming what differs. The rows on Raffel
& Ellis (2015) and on the fixed-state bottleneck read the tables this repository already
generated (docs/results/table1.csv, docs/bottleneck/recall.csv) and link to them.
"""

import shlex
from pathlib import Path

import pandas as pd

from longterm.analysis.formats import pct
from longterm.analysis.identity import one_setting
from longterm.analysis.page_cli import page_cli
from longterm.analysis.provenance import sweeps_markdown
from longterm.analysis.runs import load_runs
from longterm.experiments.claims.selection import selection_rows, setting_table
from longterm.experiments.claims.verdicts import (
    NUMBERS,
    RULE,
    Claim,
    Comparison,
    chance_of,
    claim_cells,
    claim_stats,
    verdict,
)
from longterm.tasks.knowledge import LARGE_VOCAB, VOCAB

DOCS = Path(__file__).resolve().parents[4] / "docs"

FEEDBACK = "feedback L=2"
TRANSFORMER, DEEP = "transformer L=2", "transformer L=4"
NO_SLOTS, SLOTS = "all_attention N=0 L=2", "all_attention N=64 L=2"
# fixed_knowledge with a table too large for the embedding and the head (docs/tasks.md)
LARGE_TABLE = f"fixed_knowledge V={LARGE_VOCAB}"
TASK_TESTS = {
    "fixed_knowledge": "the fixed_knowledge task",
    LARGE_TABLE: f"the fixed_knowledge task with {LARGE_VOCAB} tokens (a table of "
    f"{LARGE_VOCAB**2:,} pairs, more than the embedding and the head can hold: docs/tasks.md)",
    "algorithmic": "the algorithmic task",
}
FAN = "Fan et al. 2020 (Feedback Transformer), §4.1.2"
SUKHBAATAR = "Sukhbaatar et al. 2019 (all-attention, persistent memory)"
CLAIMS = (
    Claim(
        FAN,
        "At equal width a shallow Feedback Transformer tracks variables far better than a "
        "Transformer, even a deeper one (4-layer Feedback 99.1% against 8-layer Transformer "
        "33.7%, 3 variables).",
        "Feedback at 2 layers against the transformer at 2 and 4 layers, D = 64, the same "
        "updates, on the algorithmic task.",
        "algorithmic",
        (Comparison(FEEDBACK, TRANSFORMER), Comparison(FEEDBACK, DEEP)),
    ),
    *(
        Claim(
            SUKHBAATAR,
            "Persistent slots can replace the feed-forward sublayer without loss at a "
            "comparable parameter count.",
            f"All-attention with N = 64 slots per head (the transformer's parameter count at "
            f"d_ff = 64) against the transformer, 2 layers, on {on}.",
            task,
            (Comparison(SLOTS, TRANSFORMER, "no_loss"),),
        )
        for task, on in TASK_TESTS.items()
    ),
    *(
        Claim(
            SUKHBAATAR,
            "Removing both the feed-forward sublayer and the persistent slots (N = 0) hurts.",
            f"All-attention with N = 0 against the transformer and against N = 64, 2 layers, on "
            f"{on}.",
            task,
            (Comparison(TRANSFORMER, NO_SLOTS), Comparison(SLOTS, NO_SLOTS)),
        )
        for task, on in TASK_TESTS.items()
    ),
)


def model_name(config: dict) -> str:
    """A run's model with the keys the claims vary: `transformer L=2`, `all_attention N=0 L=2`."""
    m = config["model"]
    slots = f" N={m['n_persistent']}" if "n_persistent" in m else ""
    layers = f" L={m['layers']}" if "layers" in m else ""
    return f"{m['name']}{slots}{layers}"


def task_name(config: dict) -> str:
    """A run's task as the claims name it: fixed_knowledge with another vocabulary than its
    default is a task of its own, `fixed_knowledge V=95`."""
    task = config["task"]
    vocab = task.get("params", {}).get("vocab", VOCAB)
    return f"{task['name']} V={vocab}" if vocab != VOCAB else task["name"]


def load(dirs: list[Path]) -> pd.DataFrame:
    """The finished runs under `dirs` (analysis.runs), with their model's name and their task's
    (`task_name`)."""
    runs = load_runs(dirs)
    if runs.empty:
        return runs
    return runs.assign(
        name=[model_name(c) for c in runs.config], task=[task_name(c) for c in runs.config]
    )


def claim_row(claim: Claim, runs: pd.DataFrame) -> dict[str, str]:
    """One claim's row: paper, claim, test, numbers, verdict with its reason."""
    found = claim_stats(claim, runs)
    chance = chance_of(runs, claim.task)
    numbers = [s.cell() for s in found.values() if s is not None]
    if chance is not None:
        numbers.append(f"chance {pct(chance)}")
    return claim_cells(claim, numbers, verdict(claim, found, chance))


def table1_row(path: Path) -> dict[str, str]:
    """Raffel & Ellis 2015 (Table 1): attention pooling against the unweighted mean, from the
    collector's Table 1 (epochs to 100%, fewer is better) at the longest T0 with both."""
    row = {
        "paper": "Raffel & Ellis 2015, Table 1",
        "claim": "Feed-forward attention solves the multiplication problem in fewer epochs than "
        "the unweighted mean as sequences grow (T0 = 1000: 2 against 33 epochs).",
        "test here": "Attention and mean pooling, the paper's grid of learning rates, 3 seeds "
        "([docs/results.md](results.md), `results/table1.csv`).",
    }
    if not path.exists():
        return row | {NUMBERS: "", "verdict": f"**inconclusive**: no {path}"}
    t = pd.read_csv(path)
    t = t[(t.task == "multiplication") & (t.solved_seeds == t.seeds)]
    both = t.groupby("T0").pool.nunique()
    T0 = int(both[both == 2].index.max())
    cells = t[t.T0 == T0].set_index("pool")
    a, m = cells.loc["attention"], cells.loc["mean"]
    epochs = {
        p: f"{p} {c.epochs_median:g} [{c.epochs_min:g}–{c.epochs_max:g}]"
        for p, c in (("attention", a), ("mean", m))
    }
    if a.epochs_max < m.epochs_min:
        verdict = (
            f"**holds**: every attention seed needs fewer epochs than every mean seed at T0 = {T0}"
        )
    elif a.epochs_min > m.epochs_max:
        verdict = f"**does not hold**: every mean seed needs fewer epochs at T0 = {T0}"
    else:
        verdict = f"**inconclusive**: the epoch ranges overlap at T0 = {T0}"
    numbers = (
        f"epochs to 100% at T0 = {T0}, median [range]: {epochs['attention']}; {epochs['mean']}"
    )
    return row | {NUMBERS: numbers, "verdict": verdict}


def bottleneck_row(path: Path, far: int = 16) -> dict[str, str]:
    """The fixed-state bottleneck (docs/bottleneck/): a state of d numbers read by h <- lh + x
    recalls tokens less the further back they are; attention, which keeps every token, does not."""
    row = {
        "paper": "The fixed-state bottleneck plate (docs/bottleneck/)",
        "claim": "A fixed-size state forgets a token as it recedes; attention over every step "
        "recalls it at any distance.",
        "test here": "Recall of a token at distance 1 and at distance "
        f"{far} by states and by attention, no training "
        "([docs/bottleneck/](bottleneck/README.md)).",
    }
    if not path.exists():
        return row | {NUMBERS: "", "verdict": f"**inconclusive**: no {path}"}
    r = pd.read_csv(path)
    r["name"] = (
        r.memory
        + " d="
        + r.d.astype(str)
        + r["lambda"].map(lambda x: "" if pd.isna(x) else f" λ={x:g}")
    )
    near = r[r.distance == 1].set_index("name").recall
    away = r[r.distance == far].set_index("name").recall
    states, attention = (
        away[away.index.str.startswith("state")],
        away[~away.index.str.startswith("state")],
    )
    numbers = "<br>".join(f"{n}: {pct(near[n])} → {pct(away[n])}" for n in near.index)
    if states.max() < attention.min():
        verdict = (
            f"**holds**: at distance {far} every state recalls less than every attention memory"
        )
    else:
        verdict = f"**does not hold**: a state recalls as much as attention at distance {far}"
    return row | {
        NUMBERS: f"recall %, distance 1 → {far}:<br>{numbers}",
        "verdict": verdict,
    }


REPORT = """# The papers' claims, tested here

Generated by `{command}` from the runs' `result.json` files (the sweep:
`python -m longterm.experiments.claims.runs`, conf/experiment/claims.yaml). One row per claim: the
claim in one sentence, the test made here, the numbers, and a verdict.

**Verdict rule.** {rule}

{table}

{setting}{sweeps}"""


SETTING = """## Where the Mamba paper's rows differ from its setting

The runs of the selective-copying and induction-heads rows beside the paper's setting (§4.1), the
runs' values read from their configs."""

NO_RUNS = """## Sweeps

No finished runs under the given directories: the rows above that need runs say so. Run the sweep
(`python -m longterm.experiments.claims.runs --run`, about 2 hours on two cores) and regenerate this
page with the command at the top.
"""


def report(runs: pd.DataFrame, dirs: list[Path], out: Path | None, docs: Path = DOCS) -> str:
    """The claims page: the table, then each sweep's commands, commits, machine and time."""
    one_setting(runs, ["task", "name"])  # a model on a task: its seeds and learning rates
    rows = [claim_row(c, runs) for c in CLAIMS] + selection_rows(runs)
    rows += [
        table1_row(docs / "results" / "table1.csv"),
        bottleneck_row(docs / "bottleneck" / "recall.csv"),
    ]
    command = shlex.join(
        ["python", "-m", "longterm.experiments.claims.page", *map(str, dirs)]
        + (["--out", str(out)] if out else [])
    )
    table = pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True)
    sweeps = sweeps_markdown(runs) if not runs.empty else NO_RUNS
    mamba = setting_table(runs)
    setting = f"{SETTING}\n\n{mamba}\n\n" if mamba else ""
    return REPORT.format(command=command, rule=RULE, table=table, setting=setting, sweeps=sweeps)


def main(argv: list[str] | None = None) -> None:
    docs = {"type": Path, "default": DOCS, "help": "where results/ and bottleneck/ are"}
    page_cli(__doc__, load, report, argv, empty="warn", options=[("--docs", docs)])


if __name__ == "__main__":
    main()
