"""A run that cannot fit in memory is refused before training, in one line with the estimate and
what the machine has (longterm.memory), at lengths far beyond the paper's; one that fits runs."""

import pytest
from conftest import QUICK, composed, train_py
from omegaconf import OmegaConf

from longterm.memory import GiB, activation_bytes, available_bytes, memory_error
from longterm.run import build_model


def sections(cfg) -> tuple[dict, dict]:
    return tuple(OmegaConf.to_container(c, resolve=True) for c in (cfg.data, cfg.task))


@pytest.mark.parametrize(
    "overrides, part",
    [
        (["T0=2000000"], "the validation set held: "),  # the paper's model: its data
        (["T0=300000", "arch=transformer"], "the update's activations: "),  # attention scores
        (["data=variable", "data.max_length=3000000"], "the validation set held: "),
    ],
)
def test_lengths_far_beyond_the_papers_are_refused_with_the_estimate(overrides, part):
    cfg = composed(*overrides)
    data, task = sections(cfg)
    error = memory_error(build_model(cfg).net, data, task)
    assert error is not None and "\n" not in error
    key = "T0" if data["name"] == "fixed" else "data.max_length"
    value = data["T0"] if key == "T0" else data["max_length"]
    assert error.startswith(f"{key}={value} needs about ")
    assert part in error and error.split("machine has ")[1].split(" GiB available")[0]
    assert float(error.split("needs about ")[1].split()[0]) > available_bytes() / GiB


def test_the_papers_lengths_fit():
    for overrides in (["T0=10000"], ["data=variable"], ["T0=1000", "arch=transformer"]):
        cfg = composed(*overrides)
        assert memory_error(build_model(cfg).net, *sections(cfg)) is None, overrides


def test_activations_grow_with_the_batch_and_the_length():
    """Measured from what autograd saves, extrapolated linearly in T and in the batch."""
    net = build_model(composed("arch=lstm")).net
    one = activation_bytes(net, 2, 10, 1000)
    assert activation_bytes(net, 2, 20, 1000) == pytest.approx(2 * one, rel=0.01)
    assert activation_bytes(net, 2, 10, 2000) == pytest.approx(2 * one, rel=0.05)
    # an LSTM keeps at least its gates, 4 D floats a step, for every sequence
    assert one >= 10 * 1000 * 4 * 100 * 4


def test_a_run_too_large_stops_in_one_line_through_train_py(tmp_path):
    out = train_py(*QUICK, "T0=5000000", f"hydra.run.dir={tmp_path}", timeout=120)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: T0=5000000 needs about ")
    assert not (tmp_path / "checkpoints").exists()
