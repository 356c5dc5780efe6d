"""The channel by which a job of a sweep that stopped on its situation (a RunError: its one line,
training/faults.py) reaches the end of the sweep: the sweep's other jobs go on, and the sweep
ends with its table and then non-zero (sweeps/multirun.py: JobsTable).

Hydra runs a local sweep's jobs and its end-of-sweep callbacks in one process, and the launchers
that run jobs elsewhere (parallel workers, packs, SLURM) hand each job's lines back to that
process; so the channel lives in the process that launched the sweep. `report` adds a job's
line; a launcher's worker takes the lines its job added with `mark` and `since`. A launcher that
was stopped by a signal says so with `stopped` (hydra_plugins/longterm_launcher/processes.py).
"""

import sys


class Failures:
    """The lines of the jobs of this process's sweep that stopped, in the order they stopped."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self.signal: str | None = None  # the signal that stopped the sweep
        self.interrupted = self.not_started = 0  # its jobs then running, and not yet started

    def report(self, *lines: str) -> None:
        self._lines.extend(lines)

    def tell(self, line: str) -> None:
        """Say a job's line on the terminal (`error: <line>`) and report it."""
        print(f"error: {line}", file=sys.stderr, flush=True)
        self.report(line)

    def mark(self) -> int:
        """Where the channel stands now; `since(mark)` gives the lines added after it."""
        return len(self._lines)

    def since(self, mark: int) -> list[str]:
        return self._lines[mark:]

    def __len__(self) -> int:
        return len(self._lines)

    def stopped(self, signal: str, interrupted: int, not_started: int) -> None:
        """The sweep was stopped by `signal`: its running jobs interrupted, the others not
        started."""
        self.signal = signal
        self.interrupted += interrupted
        self.not_started += not_started

    def verdict(self, resume: str | None = None) -> str | None:
        """The line the sweep ends with when not every job ended (None when every one did),
        ending with `resume`, the command that resumes it (training/faults.py:
        resume_command)."""
        stopped = f"{len(self)} job(s) of the sweep stopped; each said why above"
        if self.signal is None and not self:
            return None
        if self.signal is None:
            line = stopped
        else:
            line = (
                f"the sweep was stopped by {self.signal}: {self.interrupted} job(s) "
                f"interrupted, {self.not_started} not started"
            )
            if resume is None:
                line += "; rerun the same command to resume them"
            if self:
                line += f"; and {stopped}"
        return line if resume is None else f"{line}; resume them with: {resume}"


FAILURES = Failures()  # this process's sweep
