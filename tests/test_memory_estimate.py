"""A run that cannot fit in memory is refused before training, in one line with the estimate and
what the machine has (longterm.training.memory_estimate), at lengths far beyond the paper's; one
that fits runs."""

import pytest
from helpers.configs import composed
from helpers.presets import QUICK
from helpers.results import sweep_results
from helpers.runs import train_py
from omegaconf import OmegaConf

from longterm.training.memory_estimate import GiB, activation_bytes, available_bytes, memory_error
from longterm.training.parts import build_model


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


def test_a_job_too_large_stops_alone_and_the_sweep_ends_non_zero(tmp_path):
    """Through src/train.py -m: the job that cannot fit stops in one line before training, the
    other job of the sweep trains, the sweep's table shows both, and the command exits 1."""
    out = train_py("-m", "T0=5000000,50", *QUICK, f"hydra.sweep.dir={tmp_path}", timeout=200)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2 and errors[0].startswith("error: T0=5000000 needs about ")
    assert errors[1].startswith("error: 1 job(s) of the sweep stopped; each said why above; ")
    assert errors[1].endswith(f" hydra.sweep.dir={tmp_path}")  # the command that resumes it
    assert [r["T0"] for r in sweep_results(tmp_path)] == [50]
    table = out.stdout[out.stdout.index("2 jobs in ") :]
    assert "no result" in table and "max_epochs" in table
