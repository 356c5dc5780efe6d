import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures" / "lstm_problems_reference.npz"

# A short run: 20 updates an epoch, validation on 200 sequences, no progress bar.
QUICK = [
    "data.batches_per_epoch=20",
    "data.val_size=200",
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=10",
]


def train_py(*args: str, cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run the real entry point `src/train.py` with these arguments."""
    return subprocess.run(
        [sys.executable, str(ROOT / "src" / "train.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def reference_cases():
    """The paper's generator outputs (../shared/fixtures); skipped when shared/ is absent."""
    if not FIXTURES.exists():
        pytest.skip(f"reference fixtures not found at {FIXTURES} (../shared is absent)")
    data = np.load(FIXTURES)
    return [
        (case, data[f"X{case['index']}"], data[f"y{case['index']}"], data[f"mask{case['index']}"])
        for case in json.loads(str(data["meta"]))
    ]
