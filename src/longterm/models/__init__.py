"""Sequence models: an encoder of per-step states, a readout over time, and a head."""

from longterm.models.feedforward import StepEncoder, feedforward
from longterm.models.head import MLPHead
from longterm.models.linear_memory import LinearMemory, linear_memory
from longterm.models.recurrent import RecurrentEncoder, lstm, rnn
from longterm.models.sequence import SequenceModel

__all__ = [
    "LinearMemory",
    "MLPHead",
    "RecurrentEncoder",
    "SequenceModel",
    "StepEncoder",
    "feedforward",
    "linear_memory",
    "lstm",
    "rnn",
]
