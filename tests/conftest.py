import atexit
import contextlib
import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures" / "lstm_problems_reference.npz"

# A short run: 20 updates an epoch, two epochs, validation on 200 sequences, no progress bar.
QUICK = [
    "data.batches_per_epoch=20",
    "data.val_size=200",
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=10",
]


def quick(*changes: str, drop: tuple[str, ...] = (), base: list[str] = QUICK) -> list[str]:
    """`base` with `key=value` changes: a key it already sets takes the new value where it
    stands, any other key is added at the end; the keys in `drop` are left to the config."""
    values = dict(change.split("=", 1) for change in changes)
    kept = []
    for override in base:
        key = override.split("=", 1)[0]
        if key not in drop:
            kept.append(f"{key}={values.pop(key)}" if key in values else override)
    return kept + [f"{key}={value}" for key, value in values.items()]


# Epochs long enough that a process can be stopped part-way through one (about 2 s each).
LONGER = quick("data.batches_per_epoch=100")
# A few updates on short sequences: enough to run forward, backward and Adam on every model.
TINY = quick(
    "T0=20",
    "data.batch_size=8",
    "data.batches_per_epoch=3",
    "data.val_size=16",
    "trainer.max_epochs=1",
    "trainer.log_every_n_steps=1",
)
# Four updates an epoch, each one logged, on the reference pooling (nothing compiled per process).
FOUR_STEPS = quick(
    "data.batches_per_epoch=4",
    "data.val_size=100",
    "trainer.log_every_n_steps=1",
    "model.impl=reference",
)


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
    its own, forked from tests/forkserver.py (the libraries already imported), or a fresh
    interpreter with LONGTERM_TESTS_FRESH=1."""
    command = [sys.executable, str(ROOT / "src" / script), *args]
    return run_command(command, cwd, {**os.environ, **(env or {})}, timeout)


def run_command(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess:
    """`command` (python SCRIPT ARGS...) with its output captured, forked from this test
    process's server (tests/forkserver.py), or in a fresh interpreter with
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


FRESH = "LONGTERM_TESTS_FRESH"


class ForkServer:
    """The client of tests/forkserver.py: one server per test process; commands are started one
    at a time and may run side by side."""

    def __init__(self) -> None:
        self.server = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("forkserver.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.unread = b""  # answers read from the pipe and not yet taken
        self.ended: dict[int, int] = {}  # pid -> exit status, for the commands that have ended
        self.files = tempfile.TemporaryDirectory(prefix="forkserver-")  # the commands' output
        atexit.register(self.close)

    def close(self) -> None:
        """End the server (it stops at the end of its input, once its commands have ended) and
        close its pipes."""
        self.server.stdin.close()
        self.server.wait(timeout=30)
        self.server.stdout.close()
        self.files.cleanup()

    def answer(self, timeout: float | None = None) -> dict:
        """The server's next answer; TimeoutExpired after `timeout` seconds without one. The pipe
        is read with os.read, not a buffered reader: a buffer could hold the next answer where
        select does not see it. An answer that a command ended is noted in `ended`."""
        fd = self.server.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.unread:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                raise subprocess.TimeoutExpired("forkserver", timeout)
            data = os.read(fd, 65536)
            assert data, f"tests/forkserver.py ended (status {self.server.poll()})"
            self.unread += data
        line, self.unread = self.unread.split(b"\n", 1)
        message = json.loads(line)
        if "returncode" in message:
            self.ended[message["pid"]] = message["returncode"]
        return message

    def start(self, command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, Path]:
        """Start `command` (python SCRIPT ARGS...) in `cwd` with `env`; its pid, and the file of
        its stdout (its stderr beside it, with suffix .err) in a folder of its own."""
        stdout = Path(tempfile.mkdtemp(dir=self.files.name)) / "stdout"
        request = {
            "script": command[1],
            "args": command[2:],
            "cwd": str(cwd),
            "env": env,
            "stdout": str(stdout),
            "stderr": str(stdout.with_suffix(".err")),
        }
        self.server.stdin.write(json.dumps(request) + "\n")
        self.server.stdin.flush()
        while "returncode" in (message := self.answer()):  # another command's end
            pass
        return message["pid"], stdout

    def wait(self, pid: int, timeout: float | None = None) -> int:
        """The exit status of the command `pid` once it has ended; TimeoutExpired after
        `timeout` seconds (0: only what the server has already said)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while pid not in self.ended:
            self.answer(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self.ended[pid]

    def run(
        self, command: list[str], cwd: Path, env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess:
        """`command` (python SCRIPT ARGS...) in `cwd` with `env`, as subprocess.run(...,
        capture_output=True, text=True, timeout=timeout) runs it; on the timeout the command's
        process group is killed."""
        pid, out = self.start(command, cwd, env)
        try:
            returncode = self.wait(pid, timeout)
        except subprocess.TimeoutExpired:
            os.killpg(pid, signal.SIGKILL)
            self.wait(pid)
            raise subprocess.TimeoutExpired(command, timeout) from None
        stdout, stderr = (p.read_text(errors="replace") for p in (out, out.with_suffix(".err")))
        shutil.rmtree(out.parent)
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)


class Started:
    """A command started through the fork server without waiting for it, with what the tests
    use of subprocess.Popen: pid, returncode, poll, wait, send_signal, kill and stderr (its
    stderr so far, as a file to read)."""

    def __init__(self, server: ForkServer, command: list[str], cwd: Path) -> None:
        self.server, self.command = server, command
        self.pid, self.out = server.start(command, cwd, dict(os.environ))

    @property
    def returncode(self) -> int | None:
        return self.server.ended.get(self.pid)

    def poll(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.server.wait(self.pid, timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        try:
            return self.server.wait(self.pid, timeout)
        except subprocess.TimeoutExpired:
            raise subprocess.TimeoutExpired(self.command, timeout) from None

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # the pid is not another process's yet
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    @property
    def stderr(self) -> io.StringIO:
        return io.StringIO(self.out.with_suffix(".err").read_text(errors="replace"))


_server: list[ForkServer] = []


def fork_server() -> ForkServer:
    """This test process's server, started on first use."""
    if not _server or _server[0].server.poll() is not None:
        _server[:] = [ForkServer()]
    return _server[0]


def sweep_results(sweep_dir: Path) -> list[dict]:
    """Each finished job's result.json in a sweep directory, in the order of the job folders."""
    return [read_json(p) for p in sorted(sweep_dir.glob("*/result.json"))]


def multirun(sweep_dir: Path, *args: str, timeout: int = 300) -> list[dict]:
    """`src/train.py -m` with these arguments into `sweep_dir`, which must succeed; each job's
    result.json, in the order of the job folders."""
    out = train_py("-m", *args, f"hydra.sweep.dir={sweep_dir}", timeout=timeout)
    assert out.returncode == 0, out.stderr
    return sweep_results(sweep_dir)


EXAMPLE = ROOT / "examples" / "mylab"  # a user's package: a model, a readout and a task
PLUGINS = ROOT / "tests" / "plugins"  # broken plugins: leaky.py (an encoder), peek.py (a readout)


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """A user's directory outside the repo holding the example package `mylab`."""
    home = tmp_path_factory.mktemp("lab")
    shutil.copytree(EXAMPLE, home / "mylab", ignore=shutil.ignore_patterns("__pycache__"))
    return home


def in_lab(lab: Path) -> dict[str, str]:
    """The environment in which `mylab` imports, as the user's shell has it."""
    return {"PYTHONPATH": str(lab)}


def contract_py(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return src_py("contract.py", *args, cwd=cwd, env=env, timeout=120)


def composed(*overrides: str, with_hydra: bool = False) -> DictConfig:
    """conf/train.yaml with these overrides, composed in-process as Hydra composes it (with its
    `hydra` node when `with_hydra`)."""
    with initialize_config_dir(str(CONF), version_base="1.3"):
        return compose("train", overrides=list(overrides), return_hydra_config=with_hydra)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


# What a run measured; everything else in result.json says where, when and how long.
METRICS = (
    "status",
    "epochs",
    "updates",
    "epoch_solved",
    "diverged_step",
    "best_acc",
    "final_acc",
    "val_acc_history",
    "n_params",
)


def metrics(run_dir: Path) -> dict:
    result = read_json(run_dir / "result.json")
    return {k: result[k] for k in METRICS}


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


# Two real runs of one sweep: one solved at its first epoch (a threshold every run passes), one
# that reaches its epoch limit unsolved (tests of the archive and of runs in progress).
TWO_THRESHOLDS = "callbacks.stop_when_solved.threshold=0.05,1.0"


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
    "test_preflight.py",
    "test_claims.py",
    "test_battery.py",
    "test_memory_comparison.py",
    "test_fused.py",
    "test_faults.py",
    "test_tensorboard.py",
    "test_task_families.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order kept within


def conf_names(group: str, **keys: str) -> list[str]:
    """The built-in conf files of `group` (model, task) by name, those whose `keys` have these
    values; the conf files are the registry (longterm.plugins.resolve), so no list is kept here."""
    return [
        path.stem
        for path in sorted((CONF / group).glob("*.yaml"))
        if all(str(OmegaConf.load(path).get(k)) == v for k, v in keys.items())
    ]


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
