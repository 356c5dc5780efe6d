"""Train one model on one long-term memory task, or sweep many: `python src/train.py --help`.

Examples:
    python src/train.py                                  # addition, attention, T0=50, lr 1e-3
    python src/train.py -m task=addition,multiplication pool=attention,mean lr=1e-3,3e-3
    python src/train.py experiment=table1                # the paper's grid
"""

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from longterm.config.command_line import check
from longterm.config.validate import ConfigError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "conf"


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    # torch and Lightning load only once the command line is good
    from longterm.sweeps.failures import FAILURES
    from longterm.training.faults import RunError
    from longterm.training.run import train

    try:
        return train(cfg)["best_acc"]
    except RunError as e:  # the run's situation, not the code: one line (training/faults.py)
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            sys.exit(f"error: {e}")
        # a sweep's other jobs go on; it ends with its table, then exits non-zero (sweeps/)
        print(f"error: {e}", file=sys.stderr, flush=True)
        FAILURES.report(str(e))
        return None


if __name__ == "__main__":
    try:
        check(sys.argv[1:], CONFIG_DIR)
    except ConfigError as e:
        sys.exit(f"error: {e}")
    main()
