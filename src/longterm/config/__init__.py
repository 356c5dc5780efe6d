"""Configuration: the schema of a run's config, its validation (one line per error, before any
work), the command-line check that composes every job of a sweep first, Hydra's composition, the
names of run directories, and the contract check of a model and a task. No Lightning.
"""
