"""The memory comparison: its experiment config, and the tables built from its runs' result.json."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from helpers.paths import CONF, ROOT
from helpers.presets import quick
from helpers.results import refuses_mix
from helpers.runs import train_py

from longterm.analysis.arch_runs import load
from longterm.config.command_line import check
from longterm.config.validate import ConfigError
from longterm.experiments.memory_comparison.page import COMMANDS, described, main
from longterm.tasks import default_width


def test_the_comparison_launches_every_architecture_on_every_task():
    """Both commands compose and validate their jobs (one task and seed of the first: the
    architectures are what changes the config; the seeds and the tasks are checked elsewhere)."""
    first, second = (command.split()[2:] for command in COMMANDS)
    check([*first, "task=addition", "seed=0"], CONF)
    check([*second, "seed=0"], CONF)
    with pytest.raises(ConfigError, match="model.n_persistent=-1 is invalid"):
        check([*second[:2], "model.n_persistent=-1"], CONF)


def test_tables_from_a_small_comparison(tmp_path: Path):
    """All-attention with N = 0 and 64 persistent slots, two seeds, on temporal order."""
    out = train_py(
        "experiment=memory_comparison",
        "arch=all_attention",
        "model.n_persistent=0,64",
        "task=temporal_order",
        "seed=0,1",
        *quick("T0=20", "data.batches_per_epoch=2", "data.val_size=100", "trainer.max_epochs=1"),
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    runs = load([tmp_path])
    assert list(zip(runs.arch, runs.seed, strict=True)) == [
        ("all_attention N=0", 0),
        ("all_attention N=0", 1),
        ("all_attention N=64", 0),
        ("all_attention N=64", 1),
    ]
    main([str(tmp_path), "--out", str(tmp_path / "table.md")])
    text = (tmp_path / "table.md").read_text()
    lines = text.splitlines()
    for n in (0, 64):
        arch = f"all_attention N={n}"
        acc, params = runs[runs.arch == arch].best_acc, runs[runs.arch == arch].n_params.iloc[0]
        state = int(runs[runs.arch == arch].state_size.iloc[0])  # 2 layers' keys and values, D = 64
        assert state == 2 * 2 * 64 * min(default_width(20), 64 - 1)  # the batches' width, span 64
        low, high = sorted(acc)
        summary = next(line for line in lines if line.startswith(f"| {arch} "))
        assert f"{100 * acc.mean():.1f} ({100 * low:.1f}–{100 * high:.1f})" in summary
        detail = next(line for line in lines if line.startswith(f"| {arch} ") and "," in line)
        cells = rf"\|\s+{params:,}\s+\|\s+{state:,}\s+\|\s+{100 * acc.mean():.1f}\s+\|"
        assert re.search(cells, detail)
    assert (runs.n_params[runs.arch == "all_attention N=64"] > runs.n_params.min()).all()
    assert "4 runs" in text and re.search(r"Chance .*: temporal_order \d+\.\d%", text)
    page = "longterm.experiments.memory_comparison.page"
    assert f"python -m {page} {tmp_path} --out {tmp_path / 'table.md'}" in text


def test_the_header_says_what_the_runs_given_were():
    """The page's first paragraph is read from its runs (tasks, lengths, updates, sizes, seeds),
    not the experiment's defaults."""
    data = {"T0": 64, "batch_size": 32, "val_size": 200}
    runs = pd.DataFrame(
        {
            "arch": ["lstm", "lstm", "mamba"],
            "task": ["mqar", "mqar", "temporal_order"],
            "seed": [1, 2, 1],
            "updates": [4000, 3000, 250],
            "data": [data, data, {**data, "T0": 20}],
        }
    )
    said = described(runs)
    assert said.startswith("lstm and mamba on mqar and temporal_order (3 runs, 1–2 seeds a cell)")
    assert "at T0 = 20 (lengths 20..21) and T0 = 64 (lengths 64..70)" in said
    assert "at most 4,000 updates of 32 sequences each, validation on 200 sequences" in said


def test_a_cell_joins_seeds_and_never_runs_of_other_settings(tmp_path: Path):
    """A cell (task, architecture) is its seeds, here copies of an archived lstm run on addition:
    a run in it at another learning rate or epoch limit is refused in one line naming what
    differs."""
    lstm = ROOT / "runs/every_memory/lstm/addition-lstm-last-T50-lr3e-3-s1,trainer.max_epochs=5"
    record = json.loads((lstm / "result.json").read_text())

    def sweep(into: Path, *changed: dict) -> Path:
        for i, change in enumerate([{"seed": 1}, {"seed": 2, "best_acc": 0.5}, *changed]):
            (into / f"run{i}").mkdir(parents=True)
            (into / f"run{i}" / "result.json").write_text(json.dumps(record | change))
        return into

    out = tmp_path / "table.md"
    main([str(sweep(tmp_path / "seeds")), "--out", str(out)])
    assert "| lstm " in out.read_text() and "2 seeds a cell" in out.read_text()
    for change, named in [
        ({"seed": 3, "lr": 1e-3}, "lr: 0.001, 0.003"),
        ({"seed": 3, "max_epochs": 10}, "max_epochs: 5, 10"),
    ]:
        refuses_mix(
            main,
            [str(sweep(tmp_path / named.split(":")[0], change)), "--out", str(out)],
            "task=addition, arch=lstm",
            named,
        )
