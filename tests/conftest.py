"""pytest's fixtures and hooks for the tests. What the tests share besides fixtures (paths,
presets, running the entry points, reading results, composing configs) is in tests/helpers/,
imported as `from helpers.<module> import ...`: pytest's default `prepend` import mode puts
tests/ (not a package) first on sys.path before it imports this file and every test file."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import EXAMPLE, FIXTURES
from helpers.presets import QUICK, TWO_THRESHOLDS
from helpers.runs import multirun


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A user's directory outside the repo holding the example package `mylab`."""
    home = tmp_path_factory.mktemp("lab")
    shutil.copytree(EXAMPLE, home / "mylab", ignore=shutil.ignore_patterns("__pycache__"))
    return home


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


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory) -> Path:
    """A sweep directory of two finished runs (TWO_THRESHOLDS); tests read it, never change it."""
    sweep = tmp_path_factory.mktemp("outputs") / "two"
    results = multirun(sweep, *QUICK, TWO_THRESHOLDS)
    assert sorted(r["status"] for r in results) == ["max_epochs", "solved"]
    return sweep


# The files that take longest, slowest first: `make test` hands whole files to its workers in
# the order collected (--dist loadfile --no-loadscope-reorder), so these start first and the
# short files fill in at the end. The other files follow in their usual order.
SLOWEST_FIRST = (  # by each file's time in a `make test` (--durations=0), longest first
    "test_packed.py",
    "test_reliability.py",
    "test_train_models.py",
    "test_launchers.py",
    "test_collect.py",
    "test_train.py",
    "test_collect_any_sweep.py",
    "test_recipes.py",
    "test_archive.py",
    "test_plugins.py",
    "test_command_line.py",
    "test_claims.py",
    "test_order_battery.py",
    "test_memory_comparison.py",
    "test_fused.py",
    "test_faults.py",
    "test_tensorboard.py",
    "test_order_tracking_recall.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order kept within


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module of small tensors, where a second thread only adds
    synchronisation (tenfold on a busy machine): `pytestmark = pytest.mark.usefixtures(
    "one_thread")`. A test of thread counts sets its own."""
    import torch  # here, not at the top: most test modules never load torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
