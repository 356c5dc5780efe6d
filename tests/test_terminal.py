"""What a run shows while it trains: a bar with the epoch out of the limit, the loss and the last
val/acc on a terminal; one line per epoch when piped; a table of the jobs at a multirun's end."""

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytorch_lightning as L
from helpers.configs import composed
from helpers.paths import ROOT
from helpers.presets import TINY, quick
from helpers.runs import train_py

from longterm.training.parts import build_model, instantiate_named
from longterm.training.quiet import quiet_libraries
from longterm.training.terminal import REDRAW_S, EpochBar

SHOWN = quick("trainer.enable_progress_bar=true")  # QUICK turns the bar off


def test_the_bar_shows_the_epoch_of_the_limit_the_loss_and_the_accuracy(capsys):
    cfg = composed(*quick("trainer.max_epochs=2", "data.batches_per_epoch=5", "T0=20"))
    quiet_libraries()  # as a run starts: no warning that says nothing about it
    bar = EpochBar()
    trainer = L.Trainer(
        max_epochs=2,
        callbacks=[bar],
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(build_model(cfg), datamodule=instantiate_named(cfg.data))
    shown = capsys.readouterr().out.replace("\r", "\n")
    assert "epoch 1/2: 100%" in shown and "epoch 2/2: 100%" in shown
    last = [line for line in shown.splitlines() if line.startswith("epoch 2/2: 100%")][-1]
    assert "loss=" in last and "val/acc=" in last and "v_num" not in last


def test_piped_runs_print_a_line_per_epoch_and_the_multirun_a_table_of_its_jobs(tmp_path):
    """Captured output is no terminal: each epoch's line says the epoch of the limit, the loss
    and the last val/acc, no carriage return is written; the multirun ends with its jobs."""
    out = train_py("-m", "task=addition,xor", *SHOWN, f"hydra.sweep.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "[longterm.training.terminal]" in line]
    epochs = [line.split(" - ")[1].split(":")[0] for line in lines]
    assert epochs == ["epoch 1/2", "epoch 2/2"] * 2
    assert all(", val/acc " in line and ": loss " in line for line in lines)
    assert "\r" not in out.stdout + out.stderr
    logged = [
        (p / "train.log").read_text().count("[longterm.training.terminal]")
        for p in tmp_path.iterdir()
        if p.is_dir()
    ]
    assert logged == [2, 2]
    table = out.stdout[out.stdout.index(f"2 jobs in {tmp_path}:") :].splitlines()
    assert table[1].split() == ["job", "status", "best", "val/acc", "epochs"]
    rows = [line.split() for line in table[3:5]]
    assert [r[0].split("-")[0] for r in rows] == ["addition", "xor"]
    assert all(r[1] == "max_epochs" and r[3] == "2/2" for r in rows)


def in_a_terminal(*args: str, cwd: Path) -> tuple[bytes, float]:
    """src/train.py run in a pseudo-terminal of 120 columns, as a user's shell runs it: all it
    wrote there, and the seconds it took."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.monotonic()
    command = [sys.executable, str(ROOT / "src" / "train.py"), *args]
    process = subprocess.Popen(command, cwd=cwd, stdin=side, stdout=side, stderr=side)
    os.close(side)
    written = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        written += chunk
    assert process.wait(timeout=300) == 0, written.decode(errors="replace")[-2000:]
    os.close(main)
    return bytes(written), time.monotonic() - started


def test_the_bar_redraws_a_few_times_a_second_not_at_every_update(tmp_path):
    """1,500 short updates in a terminal: the bar is drawn (the epoch of the limit, at 100% at
    the end) at most REDRAW_S apart, where Lightning's redraws twice per update."""
    updates = 1500
    args = ["T0=20", "lr=1e-9", "data.batch_size=8", f"data.batches_per_epoch={updates}"]
    args += ["data.val_size=64", "trainer.max_epochs=1", "logger=none", f"hydra.run.dir={tmp_path}"]
    written, seconds = in_a_terminal(*args, cwd=tmp_path)
    redraws = written.count(b"\r") - written.count(b"\r\n")
    assert b"epoch 1/1: 100%" in written and f"{updates}/{updates}".encode() in written
    assert redraws <= seconds / REDRAW_S + 10, (redraws, seconds)
    assert redraws < updates / 10


def test_jobs_side_by_side_name_themselves_in_their_lines(tmp_path):
    """launcher=parallel with two jobs at once: each epoch line and each result line begins
    with its job's directory name, as a pack's members' do (sweeps/members.py)."""
    args = ["-m", "launcher=parallel", "launcher.jobs=2", "task=addition,xor", *TINY]
    out = train_py(*args, "trainer.enable_progress_bar=true", f"hydra.sweep.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    jobs = sorted(p.name for p in tmp_path.iterdir() if (p / ".hydra").is_dir())
    said = [line.split(" - ", 1)[1] for line in out.stdout.splitlines() if " - " in line]
    epochs = [line for line in said if ": epoch 1/1: loss " in line]
    results = [line for line in said if line.endswith("result.json")]
    assert sorted(line.split(": epoch")[0] for line in epochs) == jobs
    assert sorted(line.split(": max_epochs after")[0] for line in results) == jobs
