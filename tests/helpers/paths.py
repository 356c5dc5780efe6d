"""The paths the tests read: the repository, its configs, the shared fixtures beside it, and the
plugin packages the tests load."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures" / "lstm_problems_reference.npz"

EXAMPLE = ROOT / "examples" / "mylab"  # a user's package: a model, a readout and a task
PLUGINS = ROOT / "tests" / "plugins"  # broken plugins: leaky.py (an encoder), peek.py (a readout)
