"""What a user's situation makes go wrong once a run has started, in one line: what failed and
what to do (the command line's mistakes are refused before, by config/).

`RunError` carries that line; src/train.py prints it after `error: ` with no traceback
(`HYDRA_FULL_ERROR=1` shows the traceback). `explain` turns the errors a user can cause into one:
a run directory in use, a disk that is full or cannot be written, a checkpoint that cannot be
read or would run code, a key a library refuses. Anything else is a fault of the code and keeps
its traceback. A run stopped by a signal ends with `Interrupted`'s line. The line of a run that
stopped or failed ends with the command that resumes it (`resume_command`): a default run or
sweep directory is new at each command, so "the same command" alone would start afresh.
"""

import errno
import logging
import re
import shlex
import traceback
from collections.abc import Sequence
from pathlib import Path

from longterm.store.checkpoint_files import UnsafeCheckpointError
from longterm.store.run_dir import RunDirError


class RunError(RuntimeError):
    """A run stopped by its situation, not by the code; the message is one line."""


class Interrupted(SystemExit):
    """A run stopped by a signal (Ctrl-C, SIGTERM, a requeue), recorded as interrupted: the
    process ends with its message, one line (the same command in the same directory resumes
    it)."""


class RunFailed(RunError):  # noqa: N818  a RunError, named for what befell the run
    """A run stopped by a fault of the code (a plugin's, say): one line naming the error and
    where its traceback is kept."""


# errno -> what to do, for an OSError while a run writes its directory.
WRITE_ERRORS = {
    errno.ENOSPC: "free some space",
    errno.EDQUOT: "free some of your quota",
    errno.EACCES: "make it writable",
    errno.EPERM: "make it writable",
    errno.EROFS: "give the run a writable directory (hydra.run.dir=... or hydra.sweep.dir=...)",
}


def oserror(error: BaseException) -> OSError | None:
    """The OSError behind `error` (a library may wrap it), if there is one."""
    seen = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in WRITE_ERRORS:
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def explain(error: BaseException, run_dir: Path, resume_from: Path | None) -> str | None:
    """One line for an error a user's situation causes; None for any other. `resume_from` is the
    checkpoint the same command would resume from."""
    if isinstance(error, RunError | RunDirError | UnsafeCheckpointError):
        return str(error)
    found = oserror(error)
    if found is not None:
        where = found.filename or run_dir
        then = (
            f"rerun the same command: it resumes from {resume_from}"
            if resume_from is not None
            else "rerun the same command"
        )
        return f"cannot write {where}: {found.strerror}; {WRITE_ERRORS[found.errno]}, then {then}"
    return None


def keep_traceback(error: BaseException) -> Path | None:
    """Write the traceback of `error` to the log file of this process's run (Hydra's file
    handler: the run's train.log), where a job whose terminal output is lost (a SLURM job's)
    still has it; return that file (None without one). The terminal is left to the caller."""
    text = "".join(traceback.format_exception(error)).rstrip()
    record = logging.LogRecord(__name__, logging.ERROR, __file__, 0, text, None, None)
    kept = None
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
            kept = Path(handler.baseFilename)
    return kept


def failure_line(error: BaseException, run_dir: Path, log_file: Path | None) -> str:
    """One line for a run that a fault of the code stopped: the error, and where its traceback
    is kept."""
    message = str(error).splitlines()[0] if str(error) else ""
    if log_file is None:
        where = ""
    elif log_file.parent.resolve() == run_dir.resolve():
        where = f" (traceback in its {log_file.name})"
    else:
        where = f" (traceback in {log_file})"
    return f"{run_dir} failed: {type(error).__name__}: {message}{where}"


# A value Hydra reads as the plain string it is; any other is quoted for Hydra, its quotes escaped
# (a path with a comma would read as a sweep, one with a bracket as a list).
HYDRA_PLAIN = re.compile(r"[\w/.+-]+")


def resume_command(argv: Sequence[str], key: str, directory: str | Path) -> str:
    """The command line that resumes a run or a sweep in `directory`: `argv` (sys.argv, the
    script and its arguments as typed) after `python`, with `key=directory` in place of any
    `key` it gave (`key`: hydra.run.dir for a run, hydra.sweep.dir for a sweep), quoted for the
    shell. A rerun in a sweep's directory trains only what did not finish: a job whose
    result.json is final is not trained again (store/run_dir.py: finished)."""
    value = str(directory)
    if not HYDRA_PLAIN.fullmatch(value):
        value = "'" + value.replace("'", "\\'") + "'"
    kept = [a for a in argv[1:] if a.split("=", 1)[0].lstrip("+~") != key]
    return shlex.join(["python", argv[0], *kept, f"{key}={value}"])
