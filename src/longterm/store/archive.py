"""The committed archive of runs (`runs/`): what docs/results is collected from, and where a long
run continues from on another machine.

`outputs/`, where runs are made, is not kept with the repository; `runs/` is. `put` copies what
the collector and `continue_run` read from each run of a sweep, and nothing else:

    <sweep>/sweep.json, commands.json, multirun.yaml  the commands (analysis/provenance.py), of
                                                       each sweep in it when it holds several
    <run>/result.json, <run>/.hydra/{overrides,config}.yaml, <run>/events.out.tfevents.*
    <run>/checkpoints/last.ckpt                        unless the run is solved or beaten (below):
                                                       a run that may be continued, resumed or
                                                       evaluated (one cut off in its first epoch
                                                       has none: its command starts it again)

    python -m longterm.store.archive put outputs/table1_long outputs/variable_length_100
    python -m longterm.store.archive get runs/table1_long            # back into outputs/table1_long

A run is beaten when it ended unsolved at its epoch limit while another learning rate of its cell
(the same task, model, pooling, lengths and seed in the sweep) solved within that limit: under the
paper's rule (the fewest epochs to 100% over the learning rates, §2.2) it can no longer win, which
is why `longterm.experiments.lr_race` capped it there, so nothing reads its checkpoint (a
variable-length run keeps its own: the collector evaluates it by length). Its record and events are
kept, and the same command makes it again, bit for bit on the same machine.

A sweep put with `--final` (an experiment whose runs end at a fixed budget, not to be continued:
conf/experiment/recall.yaml, selection.yaml, claims.yaml, and every_memory.yaml, whose CPU limit
of 5 epochs a larger limit would rerun from the start on a GPU or SLURM) keeps the checkpoint of
no finished run (solved, at its limit or diverged), only of those cut off (interrupted or failed),
which its command resumes; its archived copy holds FINAL_MARK, so the rule stays with the sweep
when it is put again after `get`.

    python -m longterm.store.archive put --final outputs/recall

`put` replaces the archived copies of the sweeps it is given (and only those), and refuses
when the archive would grow past BUDGET_MB. A checkpoint that holds the training state of its
archived copy (one that `get` only relocated) keeps the archived bytes, so that putting back an
unchanged sweep changes nothing in the repository. `get` copies an archived sweep back to where its
commands run, so that rerunning a command resumes its unfinished runs from last.ckpt, and
`python -m longterm.store.continue_run` takes a finished run to a larger epoch limit; it never
overwrites a run directory that exists.
"""

import argparse
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

from longterm.store.checkpoint_files import UnsafeCheckpointError, load_checkpoint, relocate
from longterm.store.records import COMMANDS_RECORD, FINAL_STATUSES, RESULT_FILE, SWEEP_RECORD
from longterm.store.run_dir import CHECKPOINTS, RunDirError, event_files, run_record

ARCHIVE = Path("runs")
OUTPUTS = Path("outputs")
BUDGET_MB = 60.0  # the whole archive: small enough to clone with the code
FINAL_MARK = "final_sweep"  # in an archived sweep: its finished runs keep no checkpoint
SWEEP_FILES = (SWEEP_RECORD, COMMANDS_RECORD, "multirun.yaml", FINAL_MARK)
RUN_FILES = (RESULT_FILE, ".hydra/overrides.yaml", ".hydra/config.yaml")
LAST = f"{CHECKPOINTS}/last.ckpt"


class ArchiveError(RuntimeError):
    """An archive operation that would lose or overwrite something, or exceed the budget."""


def run_dirs(sweep: Path) -> list[Path]:
    """The run directories of a sweep: those holding a result.json."""
    return sorted(p.parent for p in sweep.glob(f"**/{RESULT_FILE}"))


# What makes runs one cell of Table 1: all they record but the learning rate and the limit.
CELL_KEYS = ("task", "model", "pool", "data", "T0", "seed", "mask_padding", "batch_size")
CELL_KEYS += ("lengths", "min_length", "max_length")


def cell(result: dict) -> tuple:
    return tuple(result.get(key) for key in CELL_KEYS)


def beaten(result: dict, results: list[dict]) -> bool:
    """Whether a fixed-length run ended unsolved at a limit within which another learning rate of
    its cell solved (the module docstring says why its checkpoint is not kept)."""
    if result.get("status") != "max_epochs" or result.get("data") != "fixed":
        return False
    return any(
        other.get("status") == "solved"
        and other.get("lr") != result.get("lr")
        and cell(other) == cell(result)
        and other["epochs"] <= result["max_epochs"]
        for other in results
    )


def needs_checkpoint(result: dict, results: list[dict], final: bool) -> bool:
    """Whether the archive keeps a run's last checkpoint (the module docstring): not when it is
    solved or beaten, nor, in a final sweep, when it finished at all, nor when the run was cut off
    before the end of its first epoch, where the first checkpoint is written (its command starts
    it again)."""
    if not result.get("val_acc_history"):
        return False
    if final:
        return result.get("status") not in FINAL_STATUSES
    return result.get("status") != "solved" and not beaten(result, results)


def is_final(sweep: Path) -> bool:
    return (sweep / FINAL_MARK).exists()


def kept_files(sweep: Path, final: bool = False) -> Iterator[Path]:
    """The files of `sweep` that the archive keeps, as paths under `sweep` (`final`, or the
    sweep's FINAL_MARK: the checkpoints of unfinished runs only)."""
    final = final or is_final(sweep)
    runs = run_dirs(sweep)
    # A sweep may hold sweeps (one directory per race: experiments/recall/runs.py), each with
    # its own commands: every directory between the sweep and its runs keeps them.
    holders = {sweep} | {d for run in runs for d in run.parents if d.is_relative_to(sweep)}
    for holder in sorted(holders):
        yield from (holder / name for name in SWEEP_FILES if (holder / name).exists())
    results = [run_record(run) for run in runs]  # RunDirError for one that cannot be read
    for run, result in zip(runs, results, strict=True):
        yield from (run / name for name in RUN_FILES if (run / name).exists())
        yield from event_files(run)
        if needs_checkpoint(result, results, final) and (run / LAST).exists():
            yield run / LAST


def size_mb(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20


def same_training(a: Path, b: Path) -> bool:
    """Whether two checkpoints hold one training state: the same step, epoch and weights (`get`
    rewrites only the paths a checkpoint's callbacks recorded)."""
    x, y = (load_checkpoint(p) for p in (a, b))
    wx, wy = x["state_dict"], y["state_dict"]
    return (
        (x["global_step"], x["epoch"]) == (y["global_step"], y["epoch"])
        and wx.keys() == wy.keys()
        and all(torch.equal(wx[k], wy[k]) for k in wx)
    )


def copy_sweep(source: Path, target: Path, files: list[Path]) -> None:
    """Copy `files` (under `source`) to the same places under `target`, via a temporary directory
    so that an interrupted copy never leaves half a sweep. A checkpoint with the training state
    of the one already under `target` keeps that one's bytes."""
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    for path in files:
        dest, archived = tmp / path.relative_to(source), target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".ckpt" and archived.exists() and same_training(path, archived):
            path = archived
        shutil.copy2(path, dest)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def put(
    sweeps: list[Path], archive: Path = ARCHIVE, budget_mb: float = BUDGET_MB, final: bool = False
) -> float:
    """Archive each sweep as `archive/<sweep name>` (`final`: as a final sweep, the module
    docstring); return the archive's size in MB."""
    plans = {}
    for sweep in sweeps:
        if not run_dirs(sweep):
            raise ArchiveError(f"{sweep} holds no run (no {RESULT_FILE} under it)")
        plans[sweep] = list(kept_files(sweep, final))
    new = sum(p.stat().st_size for files in plans.values() for p in files) / 2**20
    replaced = sum(size_mb(archive / s.name) for s in sweeps if (archive / s.name).exists())
    total = (size_mb(archive) if archive.exists() else 0.0) - replaced + new
    if total > budget_mb:
        raise ArchiveError(
            f"the archive would hold {total:.1f} MB, over its budget of {budget_mb:g} MB "
            f"(longterm.store.archive.BUDGET_MB): archive fewer sweeps, or fewer unsolved runs"
        )
    archive.mkdir(parents=True, exist_ok=True)
    for sweep, files in plans.items():
        copy_sweep(sweep, archive / sweep.name, files)
        if final:
            (archive / sweep.name / FINAL_MARK).write_text(
                "Finished runs of this sweep are archived without checkpoints "
                "(longterm.store.archive, --final).\n"
            )
    return size_mb(archive)


def get(sweep: Path, outputs: Path = OUTPUTS) -> Path:
    """Copy the archived `sweep` to `outputs/<sweep name>`, every run directory that is not there
    yet; a run directory that exists is left as it is and named in the error."""
    runs = run_dirs(sweep)
    if not runs:
        siblings = sweep.parent.iterdir() if sweep.parent.is_dir() else []
        archived = sorted(p.name for p in siblings if p.is_dir() and run_dirs(p))
        where = f" ({sweep.parent} holds {', '.join(archived)})" if archived else ""
        raise ArchiveError(f"{sweep} holds no archived sweep (no {RESULT_FILE} under it){where}")
    target = outputs / sweep.name
    present = [r for r in runs if (target / r.relative_to(sweep)).exists()]
    if present:
        names = ", ".join(str(target / r.relative_to(sweep)) for r in present[:3])
        raise ArchiveError(f"{len(present)} run directories exist already: {names}")
    for path in sweep.rglob("*"):
        dest = target / path.relative_to(sweep)
        if not path.is_file() or dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".ckpt":  # its recorded paths moved to where it now lies
            relocate(path, dest, dest.parent.parent)
        else:
            shutil.copy2(path, dest)
    return target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    put_p = sub.add_parser("put", help="archive sweeps (replacing their archived copies)")
    put_p.add_argument("sweeps", nargs="+", type=Path)
    put_p.add_argument("--into", type=Path, default=ARCHIVE)
    put_p.add_argument(
        "--final", action="store_true", help="keep the checkpoints of unfinished runs only"
    )
    get_p = sub.add_parser("get", help="copy archived sweeps back to where they run")
    get_p.add_argument("sweeps", nargs="+", type=Path)
    get_p.add_argument("--into", type=Path, default=OUTPUTS)
    a = p.parse_args(argv)
    try:
        if a.command == "put":
            print(f"{a.into}: {put(a.sweeps, a.into, final=a.final):.1f} MB of {BUDGET_MB:g} MB")
        else:
            for sweep in a.sweeps:
                print(f"{sweep} -> {get(sweep, a.into)}")
    except (ArchiveError, RunDirError, UnsafeCheckpointError) as e:
        print(f"archive: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
