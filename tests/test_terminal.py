"""What a run shows while it trains: a bar with the epoch out of the limit, the loss and the last
val/acc on a terminal; one line per epoch when piped; a table of the jobs at a multirun's end."""

import pytorch_lightning as L
from conftest import composed, quick, train_py

from longterm.training.parts import build_model, instantiate_named
from longterm.training.terminal import EpochBar

SHOWN = quick("trainer.enable_progress_bar=true")  # QUICK turns the bar off


def test_the_bar_shows_the_epoch_of_the_limit_the_loss_and_the_accuracy(capsys):
    cfg = composed(*quick("trainer.max_epochs=2", "data.batches_per_epoch=5", "T0=20"))
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
