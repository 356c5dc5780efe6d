"""What the libraries may print during a run: Lightning's lines once, through Hydra's handlers,
and none of the warnings that say nothing about the run. Called when a run or a pack starts
(never at import, so importing the package changes no global state)."""

import logging
import warnings

IGNORED_WARNINGS = (
    # Batches are generated in the main process by default; it costs well under a millisecond
    # at T0=50.
    ".*does not have many workers.*",
    # Raised inside Lightning 2.6 under torch 2.13; nothing in this project uses the API it names.
    ".*LeafSpec.*is deprecated.*",
    # A run directory with checkpoints is one being resumed (longterm.store.run_dir), no mistake.
    ".*Checkpoint directory .* exists and is not empty.*",
    # On a cluster's login node every local run would be told that SLURM is there;
    # launcher=slurm is how a run uses it (docs/slurm.md).
    ".*The `srun` command is available on your system.*",
    # PlainLoopModule keeps batches made on the CPU where they are (training/module.py); the
    # data modules have no transfer of their own that it would hide.
    ".*overridden `transfer_batch_to_device` in `LightningModule` but have passed in a.*",
)


def not_a_tip(record: logging.LogRecord) -> bool:
    """Lightning's advertisement for a hosted logger is no message about the run."""
    return not str(record.msg).startswith("💡 Tip")


def quiet_libraries() -> None:
    """Print each Lightning message once, through Hydra's handlers (console and train.log), and
    a log line that cannot be written (train.log on a full disk) not as a traceback of its own:
    the run's one-line error says what failed (training/faults.py). Idempotent: the jobs of a
    local multirun share one process.

    Lightning gives its "pytorch_lightning" logger a console handler of its own and also lets it
    propagate to the root logger, so under Hydra every line would appear twice.
    """
    for message in IGNORED_WARNINGS:
        warnings.filterwarnings("ignore", message)
    for name in ("pytorch_lightning", "lightning_fabric"):
        # imported before Hydra set up logging (a preflight check), Lightning gives its logger a
        # handler of its own and stops it propagating
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    logging.raiseExceptions = False
    logging.getLogger("pytorch_lightning.utilities.rank_zero").addFilter(not_a_tip)
