"""Train one model on one long-term memory task, or sweep many: `python src/train.py --help`.

Examples:
    python src/train.py                                  # addition, attention, T0=50, lr 1e-3
    python src/train.py -m task=addition,multiplication pool=attention,mean lr=1e-3,3e-3
    python src/train.py experiment=table1                # the paper's grid
"""

import os
import sys
import traceback
from pathlib import Path

import hydra
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from longterm.config.command_line import check
from longterm.config.help_page import answer_help
from longterm.config.validate import ConfigError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "conf"


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    # torch and Lightning load only once the command line is good
    from longterm.sweeps.failures import FAILURES
    from longterm.training.faults import Interrupted, RunError, failure_line, keep_traceback
    from longterm.training.run import train
    from longterm.training.tensorboard import on_search_path

    sweep = HydraConfig.get().mode == RunMode.MULTIRUN
    full = os.environ.get("HYDRA_FULL_ERROR") == "1"
    try:  # what the run needs of Hydra is handed to it: the conf files HPARAMS lists
        return train(cfg, on_search_path(GlobalHydra.instance().config_loader()))["best_acc"]
    except Interrupted as e:  # a signal: one line, then the command that resumes
        raise Interrupted(f"{e.code}{resume(sweep, cfg.run_dir)}") from e
    except RunError as e:  # the run's situation, not the code: one line (training/faults.py)
        if full:
            raise
        if not sweep:
            sys.exit(f"error: {e}")
        line = str(e)
    except Exception as e:  # a fault of the code (a plugin's, say): its traceback in train.log
        log_file = keep_traceback(e)
        if full:
            raise
        traceback.print_exc()
        line = failure_line(e, Path(cfg.run_dir), log_file)
        if not sweep:
            sys.exit(f"error: {line}{resume(sweep, cfg.run_dir)}")
    # a sweep's other jobs go on; it ends with its table, then exits non-zero (sweeps/)
    FAILURES.tell(line)
    return None


def resume(sweep: bool, run_dir: str) -> str:
    """The end of a stopped run's last line: the command that resumes it in its directory, or
    its sweep in the sweep's (training/faults.py: resume_command); none in a process that runs
    another command line (a SLURM job's)."""
    from longterm.training.faults import resume_command

    if Path(sys.argv[0]).resolve() != Path(__file__).resolve():
        return ""
    if sweep:
        command = resume_command(sys.argv, "hydra.sweep.dir", HydraConfig.get().sweep.dir)
        return f"; resume the sweep with: {command}"
    return f"; resume it with: {resume_command(sys.argv, 'hydra.run.dir', run_dir)}"


if __name__ == "__main__":
    try:
        if answer_help(sys.argv[1:], CONFIG_DIR):  # the project's page; Hydra's: --hydra-help
            sys.exit(0)
        check(sys.argv[1:], CONFIG_DIR)
    except ConfigError as e:
        sys.exit(f"error: {e}")
    main()
