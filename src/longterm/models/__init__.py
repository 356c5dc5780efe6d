"""Sequence models: an encoder of per-step states, a readout over time, and a head."""

from longterm.models.feedforward import StepEncoder, feedforward
from longterm.models.head import MLPHead
from longterm.models.sequence import SequenceModel

__all__ = ["MLPHead", "SequenceModel", "StepEncoder", "feedforward"]
