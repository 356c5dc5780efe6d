"""Sequence models: an encoder of per-step states, a readout over time, and a head."""

from longterm.models.feedback import FeedbackEncoder, feedback
from longterm.models.feedforward import StepEncoder, feedforward
from longterm.models.head import MLPHead
from longterm.models.linear_memory import LinearMemory, linear_memory
from longterm.models.recurrent import RecurrentEncoder, lstm, rnn
from longterm.models.sequence import SequenceModel
from longterm.models.transformer import AttentionStack, all_attention, transformer

__all__ = [
    "AttentionStack",
    "FeedbackEncoder",
    "LinearMemory",
    "MLPHead",
    "RecurrentEncoder",
    "SequenceModel",
    "all_attention",
    "feedback",
    "StepEncoder",
    "feedforward",
    "linear_memory",
    "lstm",
    "rnn",
    "transformer",
]
