"""Sequence models: an encoder of per-step states, a readout over time, and a head; one
constructor, `sequence_model`, builds each of them from the encoder its conf file names. One file
per family here, beside the parts they share; kernels/ holds the compiled CPU kernels and the
scan and convolution kernels the families share."""

from longterm.models.build import sequence_model
from longterm.models.feedback import FeedbackEncoder
from longterm.models.feedforward import FusedSequenceModel, StepEncoder
from longterm.models.head import MLPHead
from longterm.models.linear_memory import LinearMemory
from longterm.models.recurrent import RecurrentEncoder
from longterm.models.sequence import SequenceModel
from longterm.models.transformer import AttentionStack

__all__ = [
    "AttentionStack",
    "FeedbackEncoder",
    "FusedSequenceModel",
    "LinearMemory",
    "MLPHead",
    "RecurrentEncoder",
    "SequenceModel",
    "StepEncoder",
    "sequence_model",
]
