"""Configuration: the schema of a run's config, its validation (one line per error, before any
work), the command-line check that composes every job of a sweep first, Hydra's composition, what
identifies a run and the check of its directory's settings (run_settings.py), Lightning's
debugging keys and what makes a run a debug run (debug.py), and the names of run directories.
No model, no torch, no Lightning: the contract check of a plugin, which runs small models, is
contract/.
"""

from longterm.config import mad_settings  # noqa: E402, F401  registers ${mad_setting:...}
