"""Runs the project's entry points (src/train.py, src/contract.py) for the tests, each in a
process of its own, without paying for an interpreter and its imports every time.

A command of the tests is `python src/<script> ARGS` in a directory, with an environment. Most of
the few seconds such a process takes before it does anything is spent importing torch, Lightning
(which imports torch._dynamo) and Hydra; the suite starts a few hundred of them. This server
imports those libraries once (PRELOAD: third-party only, so that nothing of the package is
imported before a command's environment is in place) and forks a child for each command: the
child changes to the command's directory, takes its environment and argv, sends its stdout and
stderr to files and runs the script as `python` would run it (`runpy`, as __main__, the script's
folder first on sys.path, then PYTHONPATH's), exit status included. The script and the package
are imported afresh in every child; only the libraries come from the parent. Python's
multiprocessing has a forkserver too, but it runs functions, not scripts, and its children
prepare a `__main__` of their own.

Protocol, one JSON object per line: the client writes {"script", "args", "cwd", "env",
"stdout", "stderr"}; the server answers {"pid"} once the child is started and {"pid",
"returncode"} when it has ended (negative: the signal that ended it, as subprocess reports it).
Commands may run side by side (a test that starts two runs together, or one while another
trains): the server forks each as it comes and reports each end as it happens. Started by
tests/helpers/fork_client.py (`fork_server`); `LONGTERM_TESTS_FRESH=1` runs every command in a
fresh interpreter instead.
"""

import atexit
import contextlib
import importlib
import json
import os
import runpy
import select
import signal
import sys
import threading
import traceback

# What src/train.py and src/contract.py import from outside the package, the slow part first.
PRELOAD = (
    "torch",
    "pytorch_lightning",
    "torchmetrics",
    "hydra",
    "hydra.core.global_hydra",
    "hydra.utils",
    "hydra._internal.utils",
    "hydra._internal.config_loader_impl",
    "hydra._internal.core_plugins.basic_launcher",
    "omegaconf",
    "numpy",
    "tensorboard.compat.proto.summary_pb2",
    "torch.utils.tensorboard",
)


def exit_status(code: object) -> int:
    """The status `python` exits with for SystemExit(code): a string is printed and means 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_child(request: dict, channel: tuple[int, ...]) -> None:
    """In the forked child: become `python <script> <args>` in the request's directory and
    environment, and exit with its status. Never returns."""
    signal.set_wakeup_fd(-1)  # the server's way of hearing of its children, not the command's
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in channel:  # the server's pipes are not the command's
        os.close(fd)
    os.setpgid(0, 0)  # a group of its own, like a command a test starts: signals reach it alone
    status = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        script = request["script"]
        sys.argv = [script, *request["args"]]
        sys.path[0] = os.path.dirname(script)
        # PYTHONPATH's folders after the script's, as the interpreter puts them at its start.
        pythonpath = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[1:1] = [os.path.abspath(p) for p in pythonpath]
        try:
            runpy.run_path(script, run_name="__main__")
            status = 0
        except SystemExit as e:
            status = exit_status(e.code)
        except BaseException:
            traceback.print_exc()
            status = 1
        # What the interpreter does at exit, in its order: wait for the threads that are not
        # daemons, run what they registered to run first (concurrent.futures' executors, loky's),
        # then the atexit functions (logging's flush among them).
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


def answer(reply: int, message: dict) -> None:
    os.write(reply, (json.dumps(message) + "\n").encode())


def reap(reply: int, running: set[int], block: bool = False) -> None:
    """Answer {"pid", "returncode"} for every child that has ended (all of them when `block`)."""
    while running:
        pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        if pid == 0:
            return
        running.discard(pid)
        answer(reply, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})


def serve() -> None:
    """Read requests from stdin, answer on the stdout the server was started with. A child's end
    wakes the loop through SIGCHLD's wake-up pipe (signal.set_wakeup_fd)."""
    for name in PRELOAD:
        importlib.import_module(name)
    requests, reply = sys.stdin.fileno(), os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # a child's prints never reach the client
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wake-up byte is sent
    running: set[int] = set()
    unread = b""
    while True:
        readable, _, _ = select.select([requests, woken], [], [])
        if woken in readable:
            os.read(woken, 4096)
            reap(reply, running)
        if requests not in readable:
            continue
        data = os.read(requests, 65536)
        if not data:  # the client closed its end: wait for what still runs, then stop
            reap(reply, running, block=True)
            return
        unread += data
        while b"\n" in unread:
            line, unread = unread.split(b"\n", 1)
            request = json.loads(line)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                run_child(request, (requests, reply, woken, wake))
            running.add(pid)
            answer(reply, {"pid": pid})


if __name__ == "__main__":
    serve()
