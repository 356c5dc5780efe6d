"""A user's own Lightning logger, brought in by import path (`logger._target_=lines.JSONLines`
or `--config-dir tests/plugins/conf logger=lines`): each call to log_metrics a line of JSON in
`<save_dir>/metrics.jsonl`, the hyperparameters in `<save_dir>/params.json`."""

import json
from pathlib import Path
from typing import Any

from pytorch_lightning.loggers import Logger


class JSONLines(Logger):
    def __init__(self, save_dir: str):
        super().__init__()
        self.path = Path(save_dir)

    @property
    def name(self) -> str:
        return "lines"

    @property
    def version(self) -> str:
        return "0"

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        (self.path / "params.json").write_text(json.dumps(dict(params), default=str))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        line = {"step": step, **{k: float(v) for k, v in metrics.items()}}
        with open(self.path / "metrics.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
