"""Drivers that launch runs (the learning-rate race) or simulate without training (the
bottleneck)."""
