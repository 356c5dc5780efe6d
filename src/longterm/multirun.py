"""The table a multirun ends with: each job of the sweep directory, its settings (the job's
directory name, longterm.naming), status, best validation accuracy and epochs; a Hydra callback
(conf/hydra/default.yaml, `callbacks.jobs_table`), run in the process that launched the sweep,
whatever the launcher."""

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from tabulate import tabulate

from longterm.records import RESULT_FILE, read_result


def job_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """A row per job directory (one holding Hydra's `.hydra/`), in name order."""
    rows = []
    for job in sorted(p for p in sweep_dir.iterdir() if (p / ".hydra").is_dir()):
        result = read_result(job) if (job / RESULT_FILE).exists() else {}
        best = result.get("best_acc")
        rows.append(
            {
                "job": job.name,
                "status": result.get("status", "no result"),
                "best val/acc": "" if best is None else f"{best:.4f}",
                "epochs": f"{result['epochs']}/{result['max_epochs']}" if result else "",
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
