"""Encoders that fail part-way through a run, for the tests of faults (tests/test_faults.py): one
whose output turns NaN, one that raises. Each counts its training forward passes."""

import os
import signal

import torch
from torch import Tensor, nn


class Faulty(nn.Module):
    """h_t = W x_t, until `after` training passes have run; then `fault`."""

    causal = True

    def __init__(self, in_features: int, dim: int, after: int = 20):
        super().__init__()
        self.step, self.after, self.passes = nn.Linear(in_features, dim), after, 0

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        h = self.step(x)
        if self.training:
            self.passes += 1
            if self.passes > self.after:
                return self.fault(h)
        return h

    def fault(self, h: Tensor) -> Tensor:
        raise NotImplementedError


class TurnsNaN(Faulty):
    """NaN from pass `after + 1` on: the run diverges there."""

    def fault(self, h: Tensor) -> Tensor:
        return h * torch.nan


class Raises(Faulty):
    """A RuntimeError at pass `after + 1`: a fault of the plugin's code."""

    def fault(self, h: Tensor) -> Tensor:
        raise RuntimeError(f"the plugin failed at training pass {self.passes}")


BATCHES: dict[int, int] = {}  # batches drawn, by process (a pack's is forked from the launcher)


def addition_until(rng, min_length, n_sequences, max_length=None, after: int = 1000):
    """The paper's addition task (longterm.tasks.addition) until `after` batches have been drawn
    in this process, validation sets and the config's checks included; then a RuntimeError."""
    from longterm.tasks import addition

    drawn = BATCHES[os.getpid()] = BATCHES.get(os.getpid(), 0) + 1
    if drawn > after:
        raise RuntimeError(f"the task plugin failed at batch {drawn}")
    return addition(rng, min_length, n_sequences, max_length)


def addition_signalled(rng, min_length, n_sequences, max_length=None, at: int = 60):
    """The paper's addition task; drawing a batch of more than 2 sequences at length `at` (scoring
    at eval.lengths, not the config's check of 2) sends this process the signal named by
    $SIGNAL_ONCE once: while the file $SIGNAL_ONCE_FLAG exists, which the signal removes."""
    from longterm.tasks import addition

    flag = os.environ.get("SIGNAL_ONCE_FLAG")
    if min_length == at and n_sequences > 2 and flag and os.path.exists(flag):
        os.remove(flag)
        signum = signal.Signals[os.environ["SIGNAL_ONCE"]]
        if signal.getsignal(signum) is signal.SIG_IGN:
            # A command started in the background of a shell script ignores SIGINT; a terminal's
            # Ctrl-C reaches a process in the foreground, where Python raises KeyboardInterrupt.
            signal.signal(signum, signal.default_int_handler)
        os.kill(os.getpid(), signum)
    return addition(rng, min_length, n_sequences, max_length)
