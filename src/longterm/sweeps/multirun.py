"""Hydra callbacks of a multirun (conf/hydra/default.yaml, `callbacks`), run in the process that
launched the sweep, whatever the launcher: `RecordCommand` appends the command to the sweep
directory's commands.json, with the environment variables a rerun needs (`env`: PYTHONPATH when
set; the collector's sweeps.md lists every command a directory was run with), and `JobsTable`
ends the sweep with a table of its jobs: settings (the job's directory name,
longterm.config.run_names), its end (records.end_of), best validation accuracy and epochs,
and, when a job did not finish, one line ending with the command that resumes the sweep in its
directory."""

import os
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from tabulate import tabulate

from longterm.store.records import (
    COMMANDS_RECORD,
    RESULT_FILE,
    append_record,
    end_of,
    git_commit,
    now,
)
from longterm.store.run_dir import RunDirError, run_record
from longterm.sweeps.failures import FAILURES


def job_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """A row per job directory (one holding Hydra's `.hydra/`), in name order."""
    rows = []
    for job in sorted(p for p in sweep_dir.iterdir() if (p / ".hydra").is_dir()):
        try:
            result = run_record(job) or {}
        except RunDirError:
            result = {"status": f"unreadable {RESULT_FILE}"}
        best = result.get("best_acc")
        rows.append(
            {
                "job": job.name,
                "status": end_of(result) if "status" in result else "no result",
                "best val/acc": "" if best is None else f"{best:.4f}",
                "epochs": f"{result['epochs']}/{result['max_epochs']}"
                if "epochs" in result
                else "",
            }
        )
    return rows


def jobs_table(sweep_dir: Path) -> str:
    rows = job_rows(sweep_dir)
    return f"{len(rows)} jobs in {sweep_dir}:\n" + tabulate(
        rows, headers="keys", disable_numparse=True
    )


class JobsTable(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if sweep_dir.is_dir():
            print(jobs_table(sweep_dir), flush=True)
        from longterm.training.faults import resume_command  # torch: once the sweep ends

        resume = resume_command(sys.argv, "hydra.sweep.dir", sweep_dir)
        verdict = FAILURES.verdict(resume)
        if verdict is not None:
            sys.exit(f"error: {verdict}")


def command(config: DictConfig) -> str:
    """The command line of a multirun, as a user would type it again."""
    hydra = config.hydra
    extra = [s.path for s in hydra.runtime.config_sources if s.provider == "command-line"]
    flags = [f"--config-dir {path.removeprefix('file://')}" for path in extra]
    where = [o for o in hydra.overrides.hydra if o.startswith("hydra.sweep.dir=")]
    return " ".join(["python src/train.py -m", *flags, *hydra.overrides.task, *where])


# The environment variables a rerun of a command needs: PYTHONPATH, where a user's plugins import.
RERUN_ENV = ("PYTHONPATH",)


def environment() -> dict[str, str]:
    """The RERUN_ENV variables set in this process, each path made absolute (as --config-dir is
    recorded), so that the command reruns from any directory."""
    return {
        name: os.pathsep.join(os.path.abspath(p) for p in os.environ[name].split(os.pathsep) if p)
        for name in RERUN_ENV
        if os.environ.get(name)
    }


class RecordCommand(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        entry = {"command": command(config), "started_at": now(), "commit": git_commit()}
        env = environment()
        append_record(sweep_dir / COMMANDS_RECORD, {**entry, **({"env": env} if env else {})})
