"""The paper's problems across every memory (Raffel & Ellis 2015, §2.2, Table 1): which memory
solves the addition and multiplication problems at which T0, from the runs' result.json files
(conf/experiment/every_memory.yaml, every_memory/runs.py):

    python -m longterm.experiments.every_memory.page runs/every_memory runs/table1 \\
        runs/table1_long --out docs/every_memory.md

A directory given is a sweep (it holds run directories), or holds one sweep per memory
(`every_memory/<model>/`). The paper's network with attention and mean pooling is read from the
archived Table 1 runs. One table per task, a row per memory, a column per T0; each cell is Table
1's (analysis/seeds.py: each seed's best learning rate, then the median [range] over seeds of the
epochs to 100%, or the accuracy at the epoch limit in italics when unsolved), with the seeds
solved out of the seeds run; "not run" where no run has finished. A cell joins runs of one
setting but their learning rates and seeds, a race's rivals at their capped epoch limits
(analysis/identity.py): runs of another budget, recipe or model key are refused in one line
naming what differs. With --out, the same cells as
a figure beside the page, `<page without .md>/solved.png` (every_memory/figure.py). The
verdicts follow the checks pages' rule of what runs can show (every_memory/rule.py,
analysis/plateau.py), and the page reads what the plain PyTorch loop found beside it
(scripts/plain_lstm_addition.py). Nothing in the page or the figure depends on when it is
written.
"""

import shlex
from pathlib import Path

import pandas as pd

from longterm.analysis.arch_runs import arch_name, rank
from longterm.analysis.page_cli import page_cli
from longterm.analysis.provenance import sweeps_markdown
from longterm.analysis.published import T0S
from longterm.analysis.runs import load_runs
from longterm.analysis.seeds import cell_text, per_seed, summarise
from longterm.analysis.state_sizes import declared
from longterm.config.builtins import conf_file
from longterm.experiments.every_memory.figure import FIGURE, plot
from longterm.experiments.every_memory.rule import (
    RULE,
    differences,
    listing,
    plain_loop,
    qualified,
    rises,
    seeded,
    setting,
)
from longterm.store.records import COMMANDS_RECORD, SWEEP_RECORD
from longterm.training.memory_estimate import longest_width

ARCHIVED = ("attention", "mean")  # the paper's network, read from the archived Table 1 runs
# The memories trained here -> the T0 their cost allows on a 2-core CPU: the measured seconds per
# update in conf/experiment/every_memory.yaml's header. The other lengths are for a GPU or SLURM.
CPU_T0S: dict[str, tuple[int, ...]] = {
    "rnn": (50, 100),
    "lstm": (50, 100),
    "linear_memory": (50, 100),
    "transformer": (50,),
    "all_attention": (50,),
    "feedback": (50,),
    "s4d": (50, 100),
    "hyena": (50,),
    "mamba": (50,),
    "gla": (50, 100),
    "deltanet": (50, 100),
}
MEMORIES = (*ARCHIVED, *CPU_T0S)  # the rows, in table order
# Lengths no machine is planned for: the Feedback Transformer runs its T steps one after another
# in every update (models/feedback.py), on a GPU as on the CPU.
NOT_PLANNED = {"feedback": (5000, 10000)}
SWEEP_ROOT = Path("outputs/every_memory")
TASKS = ("addition", "multiplication")
KEYS = ["task", "memory", "T0"]
PLANNER = "python -m longterm.experiments.every_memory.runs"


def sweeps(dirs: list[Path]) -> list[Path]:
    """The sweeps under `dirs`: a directory that records a sweep or holds run directories is
    one; any other, its subdirectories that are (one per memory)."""

    def is_sweep(d: Path) -> bool:
        records = (SWEEP_RECORD, COMMANDS_RECORD, "multirun.yaml")
        return any((d / r).exists() for r in records) or any(d.glob("*/.hydra"))

    found = []
    for d in dirs:
        inner = [] if is_sweep(d) or not d.is_dir() else sorted(filter(is_sweep, d.iterdir()))
        found += inner or [d]  # one that is neither: load_runs says why it holds no run
    return found


def memory_name(run: dict) -> str:
    """A run's row: its architecture (arch_runs), a model read at its last step by the model's
    name alone (a model of your own too), all-attention with its default slots plain."""
    name = arch_name(run)
    if name == f"{run['model']}+last":
        name = run["model"]
    default = f"all_attention N={conf_file('model', 'all_attention').n_persistent}"
    return "all_attention" if name == default else name


def load(dirs: list[Path]) -> pd.DataFrame:
    """Every finished run under `dirs` in Table 1's setting: the paper's two tasks at fixed
    lengths, each sequence its own length (the paper's network with its padding unmasked)."""
    runs = load_runs(sweeps(dirs))
    if runs.empty:
        return runs
    paper = (runs.model != "feedforward") | ~runs.mask_padding.astype(bool)
    runs = runs[(runs.data == "fixed") & runs.task.isin(TASKS) & (runs.lengths == "per_sequence")]
    runs = runs[paper.loc[runs.index]]
    runs = runs.assign(memory=[memory_name(r) for r in runs.to_dict("records")])
    return runs.assign(state_size=[state_size(r) for r in runs.to_dict("records")])


def state_size(run: dict) -> float:
    """The run's recorded state size; for a run recorded before result.json held it (the
    archived Table 1 runs of the paper's network), what its model and pool declare at its width
    (analysis.state_sizes)."""
    if pd.notna(run["state_size"]) or run["memory"] not in ARCHIVED:
        return run["state_size"]
    config = run["config"]
    return declared(
        run["model"], run["pool"], config["model"]["dim"], longest_width(config["data"])
    )


def table_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """A row per task, memory and T0: analysis.seeds' summary over seeds of each seed's best
    learning rate."""
    seeds = per_seed(runs, KEYS)
    if seeds.empty:
        return pd.DataFrame(columns=[*KEYS, "seeds", "solved_seeds", "in_part"])
    cells = seeds.groupby(KEYS).apply(summarise, include_groups=False).reset_index()
    return cells.merge(raced_in_part(seeds), on=KEYS).merge(rises(seeds, runs, KEYS), on=KEYS)


def raced_in_part(seeds: pd.DataFrame) -> pd.DataFrame:
    """A row per task, memory and T0: `in_part`, the seeds with fewer learning rates finished
    than the memory's grid (every rate any of its runs used), as ((seed, rates finished, rates
    in the grid), ...). Such a seed is read at the best of its rates: a race still running (lr_race
    runs the rivals after the leader) or a grid cut for cost."""
    grid = seeds.groupby("memory").lrs_run.agg(lambda lrs: set().union(*lrs))
    part = [
        (s.seed, len(s.lrs_run), len(grid[s.memory]))
        if len(s.lrs_run) < len(grid[s.memory])
        else None
        for s in seeds.itertuples()
    ]
    listed = seeds.assign(part=part).groupby(KEYS).part
    return (
        listed.agg(lambda p: tuple(x for x in p if x is not None)).rename("in_part").reset_index()
    )


def rows(runs: pd.DataFrame) -> list[str]:
    """The memories, in table order; any other architecture of the runs after them."""
    seen = set(runs.memory) if len(runs) else set()
    return [*MEMORIES, *sorted(seen - set(MEMORIES), key=rank)]


def numbers(values: pd.Series, T0s: pd.Series) -> str:
    """One recorded number, or its range with the T0 it changes over; blank where none is."""
    known = pd.DataFrame({"v": values, "T0": T0s}).dropna().sort_values(["v", "T0"])
    if known.empty:
        return ""
    low, high = known.iloc[0], known.iloc[-1]
    if low.v == high.v:
        return f"{int(low.v):,}"
    return f"{int(low.v):,} (T0={low.T0:g}) – {int(high.v):,} (T0={high.T0:g})"


def cell(c: pd.Series | None) -> str:
    """Table 1's cell with the seeds solved out of those run ("2/3 solved" stands in a mixed
    cell already), † where the runs did not follow the paper's protocol."""
    if c is None:
        return "not run"
    text = cell_text(c)
    if c.solved_seeds in (0, c.seeds):
        text += f" ({c.solved_seeds}/{c.seeds})"
    return text + (" †" if isinstance(c.protocol_note, str) else "") + (" ‡" if c.in_part else "")


def seeds_at(in_part: tuple[tuple[int, int, int], ...]) -> str:
    """((1, 2, 4), (2, 2, 4), (3, 1, 4)) -> "seeds 1, 2 (2 of 4 rates), seed 3 (1 of 4 rates)"."""
    by_count: dict[tuple[int, int], list[int]] = {}
    for seed, n, grid in in_part:
        by_count.setdefault((n, grid), []).append(seed)
    return ", ".join(
        f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))} ({n} of {grid} rates)"
        for (n, grid), seeds in by_count.items()
    )


def in_part_note(task: str, cells: pd.DataFrame) -> str:
    """The footnote to `task`'s table naming its cells with seeds read at fewer learning rates
    than their memory's grid (raced_in_part); blank where there are none."""
    mine = cells[(cells.task == task) & cells.in_part.astype(bool)]
    order = {m: i for i, m in enumerate(rows(mine))}
    said = [
        f"{c.memory} at T0 = {c.T0:g}, " + seeds_at(c.in_part)
        for c in sorted(mine.itertuples(), key=lambda c: (order[c.memory], c.T0))
    ]
    if not said:
        return ""
    return (
        "‡ seeds read at the best of fewer learning rates than their memory's grid (a race "
        "still running, or a grid cut for cost): " + "; ".join(said) + "."
    )


def task_table(task: str, cells: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """One task's Markdown table: a row per memory with its parameters, its state size at the
    training width and its epoch limit, then a column per T0."""
    mine = runs[runs.task == task]
    by_cell = {(c.memory, c.T0): c for _, c in cells[cells.task == task].iterrows()}
    T0s = sorted(set(T0S) | set(cells.T0))
    lines = [
        "| memory | parameters | state size | epoch limit | "
        + " | ".join(f"T0={t}" for t in T0s)
        + " |",
        "|---|---:|---:|---:|" + "---|" * len(T0s),
    ]
    for memory in rows(runs):
        own = mine[mine.memory == memory]
        limits = sorted({int(c.limit) for (m, _), c in by_cell.items() if m == memory})
        sizes = [numbers(own.n_params, own.T0), numbers(own.state_size, own.T0)]
        values = [cell(by_cell.get((memory, T0))) for T0 in T0s]
        limit = ", ".join(map(str, limits))
        lines.append(f"| {memory} | " + " | ".join([*sizes, limit, *values]) + " |")
    return lines


def task_section(task: str, cells: pd.DataFrame, runs: pd.DataFrame) -> str:
    """`task`'s heading, its table and, where it has cells raced in part, their footnote."""
    note = in_part_note(task, cells)
    table = "\n".join(task_table(task, cells, runs))
    return f"## {task}\n\n{table}" + (f"\n\n{note}" if note else "")


def verdict(task: str, cells: pd.DataFrame, runs: pd.DataFrame) -> str:
    """Which memories solve `task` at which lengths, within their epoch limits: the memories
    with the same lengths solved, partly solved and unsolved named together."""
    mine = cells[cells.task == task]
    most = int(cells.seeds.max())  # the seeds of the fullest cell: the plan's, once run
    said: dict[str, list[str]] = {}
    for memory in rows(runs):
        own = mine[mine.memory == memory].sort_values("T0")
        if own.empty:
            continue
        cells_of = list(zip(own.T0, own.solved_seeds, own.seeds, strict=True))
        some = [f"{t} ({s}/{n})" for t, s, n in cells_of if 0 < s < n]
        parts = seeded("every seed", [(t, n) for t, s, n in cells_of if s == n], most)
        parts += (
            [f"some seeds at T0 = {', '.join(some)} (*inconclusive*: seeds split)"] if some else []
        )
        for what, unsolved in qualified("no seed", list(own[own.solved_seeds == 0].itertuples())):
            parts += seeded(what, [(c.T0, c.seeds) for c in unsolved], most)
        said.setdefault("; ".join(parts), []).append(memory)
    missing = [m for m in rows(runs) if m not in set(mine.memory)]
    text = ". ".join(f"{', '.join(names)}: {what}" for what, names in said.items())
    text += (". " if text else "") + (f"Not run: {', '.join(missing)}." if missing else "")
    part = mine[mine.in_part.astype(bool)]
    if len(part):
        text = text.rstrip() + " Read at fewer learning rates than the memory's grid (‡ below): "
        text += "; ".join(
            f"{m} at {listing(sorted(part[part.memory == m].T0))}"
            for m in rows(runs)
            if m in set(part.memory)
        )
        text += "."
    return f"**{task}** (solved: 100% validation accuracy within the epoch limit). {text}"


def plan(cells: pd.DataFrame) -> list[str]:
    """Each memory's lengths without a finished run for both tasks: those planned on a 2-core
    CPU (CPU_T0S), those for a GPU or SLURM, and those not planned."""
    done = {(m, t) for (m, t), g in cells.groupby(["memory", "T0"]) if set(g.task) >= set(TASKS)}
    lines = ["| memory | 2-core CPU | GPU or SLURM | not planned |", "|---|---|---|---|"]
    for memory in MEMORIES:
        left = [t for t in T0S if (memory, t) not in done]
        cpu = [t for t in left if t in CPU_T0S.get(memory, ())]
        off = [t for t in left if t in NOT_PLANNED.get(memory, ())]
        gpu = [t for t in left if t not in cpu and t not in off]
        if left:
            lines.append(
                f"| {memory} | "
                + " | ".join(", ".join(map(str, x)) for x in (cpu, gpu, off))
                + " |"
            )
    return lines if len(lines) > 2 else []


REPORT = """# The paper's problems across every memory

The addition and multiplication problems of Raffel & Ellis (2015, §2.2) at fixed lengths (each
sequence T0 to 1.1 T0 steps) for every memory of the framework, three seeds, read as Table 1:
each seed takes its best learning rate (the fewest epochs to 100% validation accuracy, else the
best accuracy at the epoch limit; longterm.experiments.lr_race), and a cell is the median
[min–max] over seeds of the epochs to 100%, *in italics* the accuracy at the limit where no seed
solved, with the seeds solved out of those run. Models other than the paper's network are read at
their last step (`pool=last`); all_attention has its default persistent slots. The rows attention
and mean are the paper's network from the archived Table 1 runs (its epoch limit 100, the
paper's); the others have the CPU epoch limit of conf/experiment/every_memory.yaml, so "no seed"
means not within that limit. State size: the numbers a memory carries per sequence at inference
after the training width (result.json, docs/models.md); for the archived Table 1 runs, recorded
before result.json held it, what the model and pool declare at the runs' width.
{setting}

{differences}

## Verdict

**Rule.** {rule}

{verdicts}

{plain}

{figure}{tables}

## Plan for the cells not run

{plan}

## Commands

```
{commands}
```

{provenance}
"""


def drawn(cells: pd.DataFrame, runs: pd.DataFrame, out: Path | None) -> str:
    """With cells and `out`, the figure beside the page (`<out without .md>/FIGURE`) and the
    page's line showing it; else nothing."""
    if cells.empty or out is None:
        return ""
    figure = Path(out.stem) / FIGURE
    (out.parent / figure).parent.mkdir(parents=True, exist_ok=True)
    memories = [m for m in rows(runs) if m in set(cells.memory)]
    plot(cells, TASKS, memories, out.parent / figure)
    return f"![which memory solves which problem at which T0]({figure})\n\n"


def report(runs: pd.DataFrame, dirs: list[Path], out: Path | None) -> str:
    """The page, from the runs under `dirs`; `out` is named in its command, and the figure is
    written beside it."""
    cells = table_cells(runs)
    tables, verdicts = "", "No run has finished yet."  # the plan and the commands all the same
    if not runs.empty:
        notes = sorted(set(cells.protocol_note.dropna()))
        tables = "\n\n".join(
            [task_section(task, cells, runs) for task in TASKS] + [f"† {note}." for note in notes]
        )
        verdicts = "\n\n".join(verdict(task, cells, runs) for task in TASKS)
    page = shlex.join(
        ["python", "-m", "longterm.experiments.every_memory.page", *map(str, dirs)]
        + (["--out", str(out)] if out else [])
    )
    plan_lines = plan(cells)
    return (
        REPORT.format(
            setting=setting(runs[~runs.memory.isin(ARCHIVED)]) if len(runs) else "",
            differences=differences(runs[~runs.memory.isin(ARCHIVED)]) if len(runs) else "",
            rule=RULE,
            verdicts=verdicts,
            plain=plain_loop(out.parent / out.stem if out else None),
            figure=drawn(cells, runs, out),
            tables=tables,
            plan="\n".join(plan_lines) if plan_lines else "Every cell has runs.",
            commands="\n".join(
                [f"{PLANNER}          # the 2-core CPU plan (--run runs them, one per core)", page]
            ),
            provenance=sweeps_markdown(runs) if len(runs) else "",
        ).rstrip()
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    page_cli(__doc__, load, report, argv, empty="warn")


if __name__ == "__main__":
    main()
