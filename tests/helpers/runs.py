"""Running the entry points as a user does, output captured: `src/train.py` (`train_py`,
`multirun`, `run_once`, `start`), `src/contract.py` (`contract_py`), any `python SCRIPT ARGS`
(`run_command`, `forked`), each a process of its own forked from the fork server
(fork_client.py), or a fresh interpreter with LONGTERM_TESTS_FRESH=1; and waiting on a process
started without waiting for it."""

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.fork_client import FRESH, Started, fork_server
from helpers.paths import ROOT
from helpers.results import sweep_results


def train_py(
    *args: str, cwd: Path = ROOT, timeout: int = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run the real entry point `src/train.py` with these arguments (and `env` added to this
    process's environment)."""
    return src_py("train.py", *args, cwd=cwd, timeout=timeout, env=env)


def src_py(
    script: str,
    *args: str,
    cwd: Path = ROOT,
    timeout: int = 300,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run `src/<script>` (train.py, contract.py) as a user does, output captured: a process of
    its own, forked from tests/helpers/forkserver.py (the libraries already imported), or a fresh
    interpreter with LONGTERM_TESTS_FRESH=1."""
    command = [sys.executable, str(ROOT / "src" / script), *args]
    return run_command(command, cwd, {**os.environ, **(env or {})}, timeout)


def run_command(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess:
    """`command` (python SCRIPT ARGS...) with its output captured, forked from this test
    process's server (tests/helpers/forkserver.py), or in a fresh interpreter with
    LONGTERM_TESTS_FRESH=1."""
    if os.environ.get(FRESH) == "1":
        return subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
        )
    return fork_server().run(command, cwd, env, timeout)


def forked(command: list[str], cwd: Path) -> int:
    """The runner for code that starts `python SCRIPT ARGS` itself (longterm.experiments.lr_race's
    `runner`): the same command through `run_command`, its output printed here."""
    out = run_command(command, cwd, dict(os.environ), timeout=300)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    return out.returncode


def multirun(sweep_dir: Path, *args: str, timeout: int = 300) -> list[dict]:
    """`src/train.py -m` with these arguments into `sweep_dir`, which must succeed; each job's
    result.json, in the order of the job folders."""
    out = train_py("-m", *args, f"hydra.sweep.dir={sweep_dir}", timeout=timeout)
    assert out.returncode == 0, out.stderr
    return sweep_results(sweep_dir)


def in_lab(lab: Path) -> dict[str, str]:
    """The environment in which `mylab` imports, as the user's shell has it."""
    return {"PYTHONPATH": str(lab)}


def contract_py(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return src_py("contract.py", *args, cwd=cwd, env=env, timeout=120)


def start(*args: str, cwd: Path = ROOT) -> subprocess.Popen | Started:
    """Start src/train.py without waiting for it (forked from the fork server, or a fresh
    interpreter with LONGTERM_TESTS_FRESH=1), its stdout discarded."""
    command = [sys.executable, str(ROOT / "src" / "train.py"), *args]
    if os.environ.get(FRESH) == "1":
        return subprocess.Popen(
            command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    return Started(fork_server(), command, cwd)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def wait_for_file(pattern: str, root: Path, process: subprocess.Popen) -> Path:
    """The first path under `root` matching `pattern` once it exists; fails if `process` ends."""
    wait_for(lambda: any(root.glob(pattern)) or process.poll() is not None, pattern)
    assert process.poll() is None, process.stderr.read()
    return next(root.glob(pattern))


def run_once(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Path:
    """A run of src/train.py with `args` in a new directory `name`, which must succeed."""
    run_dir = tmp_path_factory.mktemp(name)
    out = train_py(*args, f"hydra.run.dir={run_dir}")
    assert out.returncode == 0, out.stderr
    return run_dir
