"""The client of tests/helpers/forkserver.py: one server per test process, started on first use,
through which the tests' commands run (`fork_server`), and a command started without waiting for
it (`Started`). `LONGTERM_TESTS_FRESH=1` runs every command in a fresh interpreter instead."""

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
from pathlib import Path

FRESH = "LONGTERM_TESTS_FRESH"


class ForkServer:
    """The client of tests/helpers/forkserver.py: one server per test process; commands are
    started one at a time and may run side by side."""

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
            assert data, f"tests/helpers/forkserver.py ended (status {self.server.poll()})"
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
