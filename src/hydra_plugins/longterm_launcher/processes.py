"""The processes of `launcher=parallel` and `launcher=packed`: each call (a job, or a pack) in a
process forked from the launcher, at most `jobs` at a time, and what a stopped sweep does.

A sweep is stopped by a signal to its command: SIGTERM (`kill`, a scheduler), SIGINT (Ctrl-C),
SIGHUP (its terminal closed), sent to the command alone or to its whole process group. The
launcher then starts no further call and sends each running process SIGTERM, on which its runs
stop after the current batch and record themselves as `interrupted` (a second signal kills them
at once; each keeps its last.ckpt). It waits for them, so no process outlives the command, and
the sweep ends with its table and one line (longterm.sweeps.multirun.JobsTable); the same command
resumes it. A child is sent SIGTERM too if the launcher dies without a word (SIGKILL): Linux's
PR_SET_PDEATHSIG. The children ignore SIGINT and SIGHUP, so that Ctrl-C or a hang-up reaches
their runs once, as the launcher's SIGTERM.
"""

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import wait
from types import FrameType
from typing import Any

import cloudpickle

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass
class Unfinished:
    """A call that returned nothing: `error` is what it raised, or why its process ended; None
    for a call that never started (the sweep was stopped first)."""

    error: BaseException | None


class Stop:
    """The signals this launcher received, and the children it tells."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.children: list[multiprocessing.Process] = []

    def __bool__(self) -> bool:
        return bool(self.signals)

    @property
    def name(self) -> str:
        return signal.Signals(self.signals[0]).name

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The first signal: SIGTERM to each child; a second: SIGKILL."""
        self.signals.append(signum)
        hard = len(self.signals) > 1
        for child in self.children:
            if child.is_alive():
                os.kill(child.pid, signal.SIGKILL if hard else signal.SIGTERM)

    @contextmanager
    def installed(self) -> Iterator["Stop"]:
        """Its handler for STOP_SIGNALS inside (the main thread's only; elsewhere none)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        saved = {s: signal.signal(s, self.handle) for s in STOP_SIGNALS}
        try:
            yield self
        finally:
            for s, handler in saved.items():
                signal.signal(s, handler)


def side_by_side(calls: list[tuple[Callable, tuple]], jobs: int, stop: Stop) -> list[Any]:
    """Each call's result, or Unfinished, at most `jobs` at a time, each started as soon as a
    process is free, in a process forked from this one once it has imported torch and Lightning
    (longterm.sweeps.pack), so that a job or pack starts at once (a fresh worker spends seconds
    importing them first). A forked child runs its call as it is, nothing pickled; only its
    result comes back (cloudpickle: a JobReturn holds Hydra's configs, which the standard pickle
    refuses). Nothing here has run a parallel torch op, so the children inherit no thread pool.
    Once `stop` has a signal, no call starts (see the module docstring)."""
    import longterm.sweeps.pack  # noqa: F401

    fork = multiprocessing.get_context("fork")
    results: list[Any] = [Unfinished(None)] * len(calls)
    running: dict[Any, tuple[int, multiprocessing.Process]] = {}  # a child's pipe -> (call, child)
    waiting = list(enumerate(calls))
    while running or (waiting and not stop):
        while waiting and len(running) < jobs and not stop:
            i, (call, args) = waiting.pop(0)
            reader, writer = fork.Pipe(duplex=False)
            child = fork.Process(target=send_result, args=(writer, call, args, os.getpid()))
            # held while it forks: the child never runs this handler, and one that comes now
            # reaches the child once it is among the children, through the handler
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            try:
                child.start()
                stop.children.append(child)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            writer.close()
            running[reader] = (i, child)
        for reader in wait(list(running)):
            i, child = running.pop(reader)
            try:
                ok, value = cloudpickle.loads(reader.recv_bytes())
            except EOFError:  # the child died before it could answer (killed)
                child.join()
                ok, value = False, ChildProcessError(f"its process ended {ended(child.exitcode)}")
            reader.close()
            child.join()
            stop.children.remove(child)
            results[i] = value if ok else Unfinished(value)
    return results


def ended(exitcode: int | None) -> str:
    """How a process ended, from its exit code: `with status 1`, `by SIGKILL`."""
    if exitcode is not None and exitcode < 0:
        return f"by {signal.Signals(-exitcode).name}"
    return f"with status {exitcode}"


def send_result(writer: Any, call: Callable, args: tuple, parent: int) -> None:
    """Run `call` in a forked child and send back (True, its result) or (False, its exception).
    The child is sent SIGTERM if the launcher dies (Linux), as a run is when its own process is:
    each run still training is recorded as interrupted, and the same command resumes it."""
    for signum in (signal.SIGINT, signal.SIGHUP):  # the launcher's SIGTERM stops it (see above)
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the launcher's handler, forked with it
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked while it was forked
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the launcher died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)
    try:
        answer = (True, call(*args))
    except BaseException as e:  # an interrupted run's SystemExit too
        answer = (False, e)
    with contextlib.suppress(BrokenPipeError):  # the launcher is gone: its runs are recorded
        writer.send_bytes(cloudpickle.dumps(answer))
    writer.close()
