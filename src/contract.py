"""Check a model's encoder, its readout (pool=) and a task's generator against their contract
(docs/plugins.md): shapes, padding, causality, determinism, gradients; the task's shapes, labels
and chance level.

    python src/contract.py model=lstm task=temporal_order
    PYTHONPATH=. python src/contract.py --config-dir mylab/conf model=gru task=ordered_difference
    PYTHONPATH=. python src/contract.py --config-dir mylab/conf model=gru pool=gated

The overrides are those of one src/train.py run; the exit status is 1 if a check fails.
"""

import sys
from pathlib import Path

from omegaconf import OmegaConf

from longterm.config.command_line import composed
from longterm.config.validate import ConfigError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "conf"


def main(argv: list[str]) -> int:
    try:
        cfg = composed(argv, CONFIG_DIR)
    except ConfigError as e:
        sys.exit(f"error: {e}")
    from longterm.contract.encoder import encoder_report  # torch once the line is good
    from longterm.contract.readout import readout_report
    from longterm.contract.task import task_report
    from longterm.tasks.inputs import encoder_in_features

    model = OmegaConf.to_container(cfg.model, resolve=True)
    pool = OmegaConf.to_container(cfg.pool, resolve=True)
    task = OmegaConf.to_container(cfg.task, resolve=True)
    shortest = {"fixed": "T0", "mad": "steps"}.get(cfg.data.name, "min_length")
    shortest = cfg.data[shortest]  # data=mad: its setting's length
    keys = {k: v for k, v in model.items() if k not in ("encoder", "dim")}
    in_features = encoder_in_features(task, model["dim"])  # token inputs: the embedding's width
    reports = {
        f"model={cfg.model.name}": encoder_report(
            model["encoder"], in_features, model["dim"], keys
        ),
        f"pool={cfg.pool.name}": readout_report(pool, model["dim"], model),
        f"task={cfg.task.name}": task_report(task, shortest),
    }
    for name, report in reports.items():
        print(f"{name}: {report}")
    failed = [name for name, report in reports.items() if not report.ok]
    print(f"contract: {'failed for ' + ', '.join(failed) if failed else 'every check passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
