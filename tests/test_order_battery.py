"""The order battery: its experiment config, and the table built from its runs' result.json."""

import json
from pathlib import Path

import pytest
from helpers.paths import CONF, ROOT
from helpers.presets import quick
from helpers.results import refuses_mix
from helpers.runs import train_py

from longterm.analysis.arch_runs import load
from longterm.analysis.references import references
from longterm.config.builtins import generator_of
from longterm.config.command_line import check
from longterm.config.validate import ConfigError
from longterm.experiments.order_battery.page import main

RECALL = ["experiment=order_battery", "task=associative_recall", "task.params.k=2,8"]


def test_the_battery_launches_every_architecture_on_every_task():
    """Both commands compose and validate every job (5 architectures x 3 tasks, 5 x 2 k)."""
    check(["experiment=order_battery"], CONF)
    check(RECALL, CONF)
    with pytest.raises(ConfigError, match="arch='gru' is invalid"):
        check(["experiment=order_battery", "arch=gru"], CONF)


def test_references_on_a_large_validation_set():
    data = {
        "name": "fixed",
        "task": generator_of("temporal_order"),
        "T0": 30,
        "seed": 0,
        "lengths": "per_sequence",
        "batch_size": 500,
        "batches_per_epoch": 1,
        "val_size": 20_000,
        "num_workers": 0,
        "task_params": {},
    }
    chance, ceiling = references(data, "cross_entropy")
    assert abs(chance - 0.25) < 0.01 and abs(ceiling - 0.75) < 0.01
    recall = {**data, "task": generator_of("associative_recall"), "task_params": {"k": 2}}
    chance, ceiling = references(recall, "cross_entropy")
    assert abs(chance - 1 / 16) < 0.01 and ceiling is None
    assert references({**data, "task": "addition"}, "mse") == (None, None)


def test_table_from_a_small_battery(tmp_path: Path):
    # The reference pooling: the fused one compiles in every process.
    tiny = quick(
        "T0=20", "data.batches_per_epoch=2", "trainer.max_epochs=1", "model.impl=reference"
    )
    sweep = f"hydra.sweep.dir={tmp_path}"
    first = ["experiment=order_battery", "arch=mean,linear_memory", "task=temporal_order,addition"]
    second = [*RECALL[:2], "task.params.k=1,2", "arch=mean"]
    for command in (first, second):
        out = train_py(*command, *tiny, sweep)
        assert out.returncode == 0, out.stderr
    runs = load([tmp_path])
    assert sorted(zip(runs.task, runs.arch, strict=True)) == [
        ("addition", "linear_memory"),
        ("addition", "mean"),
        ("associative_recall k=1", "mean"),
        ("associative_recall k=2", "mean"),
        ("temporal_order", "linear_memory"),
        ("temporal_order", "mean"),
    ]
    main([str(tmp_path), "--out", str(tmp_path / "table.md")])
    text = (tmp_path / "table.md").read_text()
    mean_to = runs[(runs.task == "temporal_order") & (runs.arch == "mean")].best_acc.iloc[0]
    row = next(line for line in text.splitlines() if line.startswith("| temporal_order"))
    assert f"{100 * mean_to:.1f}" in row and "6 runs" in text
    assert "linear_memory" in text and "order-blind ceiling" in text
    assert f"Temporal order: mean {100 * mean_to:.1f}%" in text
    assert "Associative recall, mean: below 90.0% from k = 1 (k=1: " in text  # 2 updates only


def test_a_cell_is_one_run_and_never_two_of_other_settings(tmp_path: Path):
    """A cell (task, architecture) is one run, here an archived lstm run on addition: a second
    run in it, of another seed or another epoch limit, is refused in one line naming what
    differs, where the table could show only one."""
    lstm = ROOT / "runs/every_memory/lstm/addition-lstm-last-T50-lr3e-3-s1,trainer.max_epochs=5"
    record = json.loads((lstm / "result.json").read_text())

    def sweep(into: Path, *changed: dict) -> Path:
        for i, change in enumerate([{}, *changed]):
            (into / f"run{i}").mkdir(parents=True)
            (into / f"run{i}" / "result.json").write_text(json.dumps(record | change))
        return into

    out = tmp_path / "table.md"
    main([str(sweep(tmp_path / "one")), "--out", str(out)])
    row = next(line for line in out.read_text().splitlines() if line.startswith("| addition"))
    assert f"{100 * record['best_acc']:.1f}" in row
    for change, named in [({"seed": 2}, "seed: 1, 2"), ({"max_epochs": 10}, "max_epochs: 5, 10")]:
        refuses_mix(
            main,
            [str(sweep(tmp_path / named.split(":")[0], change)), "--out", str(out)],
            "task=addition, arch=lstm",
            named,
        )
