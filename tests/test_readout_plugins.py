"""A readout of one's own, from a package outside the repo, through the path a user takes: the
example package's gated pooling (examples/mylab/gated.py, conf/pool/gated.yaml) trained with
src/train.py from a temporary directory and collected under its own name; its mistakes refused on
one line before training; its behaviour its class's, never a built-in's; the contract check on
it, on every built-in readout, and on a broken one it must reject."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers.configs import conf_names
from helpers.paths import CONF, PLUGINS
from helpers.presets import TINY
from helpers.results import sweep_results
from helpers.runs import contract_py, in_lab, train_py
from omegaconf import OmegaConf
from tensorboard.plugins.hparams import metadata

from longterm.config.command_line import check, composed
from longterm.config.validate import ConfigError
from longterm.contract.readout import readout_report
from longterm.models.sequence import SequenceModel
from longterm.models.state import has_step_form
from longterm.plugins.resolve import readout_class, reads_causally
from longterm.sweeps.pack import packable
from longterm.training.hparams import records
from longterm.training.parts import build_model

# nn.GRU's weights and biases, the gate (w, b) and the head; the feed-forward layer instead
GRU_GATED, FEEDFORWARD_GATED = 3 * 100 * (2 + 100 + 2) + 101 + 10_201, 300 + 101 + 10_201


def python_m(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def gated(lab) -> Path:
    """A sweep of the GRU and the paper's network, both read by the gated pooling, from the
    user's directory, collected into `<sweep>/collected`."""
    sweep = lab / "gated"
    args = ["-m", "--config-dir", "mylab/conf", "model=gru,feedforward", "pool=gated"]
    out = train_py(*args, *TINY, f"hydra.sweep.dir={sweep}", cwd=lab, env=in_lab(lab))
    assert out.returncode == 0, out.stderr
    out = python_m("longterm.analysis.collect", str(sweep), cwd=lab)
    assert out.returncode == 0, out.stderr
    return sweep


def test_a_readout_of_ones_own_trains_and_is_collected_under_its_own_name(gated):
    """Each run says `gated` in result.json, its directory's name, hparams.yaml, TensorBoard's
    HPARAMS (among the discrete values) and the collector's runs.csv, and trained the user's
    class (its parameters counted)."""
    results = {r["model"]: r for r in sweep_results(gated)}
    assert sorted(results) == ["feedforward", "gru"]
    for model, n_params in (("gru", GRU_GATED), ("feedforward", FEEDFORWARD_GATED)):
        r = results[model]
        assert (r["pool"], r["status"], r["n_params"]) == ("gated", "max_epochs", n_params)
        assert r["config"]["pool"]["readout"] == "mylab.gated.Gated"
        run_dir = Path(r["run_dir"])
        assert "-gated-T20-" in run_dir.name
        assert OmegaConf.load(run_dir / "hparams.yaml").pool == "gated"
        found = records(run_dir)
        start = metadata.parse_session_start_info_plugin_data(
            found[metadata.SESSION_START_INFO_TAG][0]
        )
        assert start.hparams["pool"].string_value == "gated"
        experiment = metadata.parse_experiment_plugin_data(found[metadata.EXPERIMENT_TAG][0])
        pools = next(h for h in experiment.hparam_infos if h.name == "pool")
        values = [v.string_value for v in pools.domain_discrete.values]
        assert values == sorted([*conf_names("pool"), "gated"])
    runs = pd.read_csv(gated / "collected" / "runs.csv")
    assert sorted(zip(runs.model, runs.pool, strict=True)) == [
        ("feedforward", "gated"),
        ("gru", "gated"),
    ]


def test_the_own_keys_of_a_plugin_model_and_readout_are_in_hparams(gated):
    """The GRU's `layers` and the readout's `bias` (`pool.bias`) are the run's parameters, in
    result.json and TensorBoard's HPARAMS session, and columns of the HPARAMS table of every run
    of the sweep, the feed-forward one's too."""
    for r in sweep_results(gated):
        found = records(Path(r["run_dir"]))
        start = metadata.parse_session_start_info_plugin_data(
            found[metadata.SESSION_START_INFO_TAG][0]
        )
        assert r["pool.bias"] == 0.0 and start.hparams["pool.bias"].number_value == 0.0
        if r["model"] == "gru":
            assert r["layers"] == 1 and start.hparams["layers"].number_value == 1
        else:
            assert "layers" not in r and "layers" not in start.hparams
        experiment = metadata.parse_experiment_plugin_data(found[metadata.EXPERIMENT_TAG][0])
        assert {"layers", "pool.bias"} <= {h.name for h in experiment.hparam_infos}


def test_a_readout_of_ones_own_runs_as_its_class_never_as_a_built_in(lab, monkeypatch):
    """On the paper's network, whose attention and mean pooling run fused (model.impl=auto),
    the user's readout runs as written, and it predicts per sequence because its class says so."""
    monkeypatch.syspath_prepend(str(lab))
    conf = ["--config-dir", str(lab / "mylab" / "conf")]
    module = build_model(composed([*conf, "pool=gated"], CONF))
    assert type(module.net) is SequenceModel and type(module.net.readout).__name__ == "Gated"
    assert not module.per_step
    fused = build_model(composed([*conf, "pool=attention"], CONF)).net
    assert type(fused).__name__ == "FusedSequenceModel"


def test_a_subclass_of_a_built_in_readout_runs_as_itself(monkeypatch):
    """What the fused pass and packing take is the built-in class itself: a subclass of the
    attention pooling (tests/plugins/sharper.py) runs as written and alone."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    args = ["pool=attention", "pool.readout=sharper.Sharper", "pool.name=sharper"]
    cfg = composed(args, CONF)
    net = build_model(cfg).net
    assert type(net) is SequenceModel and type(net.readout).__name__ == "Sharper"
    assert not packable(cfg) and packable(composed(["pool=attention"], CONF))


READOUT_MISTAKES = [
    (["pool=gated", "+pool.gates=2"], "pool.gates is not a key of pool=gated: Gated takes bias"),
    (["pool=gated", "pool.bias=high"], "pool.bias='high' is invalid: Input should be a valid"),
    (
        ["pool=gated", "pool.readout=mylab.gated.Gate", "pool.name=gate"],
        "pool.readout=mylab.gated.Gate is invalid: module mylab.gated has no 'Gate'",
    ),
    (
        ["pool=gated", "pool.readout=mylab.difference.ordered_difference", "pool.name=diff"],
        "pool.readout=mylab.difference.ordered_difference is invalid: <function ordered_diff",
    ),
    (
        ["pool=gated", "pool.readout=mylab.gru.GRU", "pool.name=gru_pool"],
        "pool.readout=mylab.gru.GRU is invalid: GRU must say what it gives, a class attribute "
        "`per_step = False` (c (B, D), one output per sequence) or `per_step = True`",
    ),
    (
        ["pool=gated", "pool.readout=mylab.gated.Gated"],
        "pool.readout=mylab.gated.Gated needs a name of its own: give pool.name=... too",
    ),
    (
        ["pool=gated", "pool.name=mean"],
        "pool.name=mean is invalid with pool=gated: mean is the name of another conf file",
    ),
    (
        ["pool=mean", "pool.readout=mylab.gated.Gated", "pool.name=mean"],
        "pool.readout=mylab.gated.Gated is invalid with pool.name=mean: mean is the built-in "
        "longterm.models.readouts.MeanPooling (pool/mean.yaml); give this pool a name of its own",
    ),
    (
        ["pool=gated", "model.impl=fused"],
        "model.impl=fused is invalid with pool=gated: use pool=attention|mean",
    ),
    (
        ["pool=gated", "task=algorithmic", "model=lstm"],
        "pool=gated is invalid with task=algorithmic: this task labels steps; use pool=per_step",
    ),
    (  # conf/'s readouts and the example's
        ["pool=gatd"],
        f"pool='gatd' is invalid: choose one of {', '.join(sorted([*conf_names('pool'), 'gated']))}"
        "; did you mean gated?",
    ),
]


@pytest.mark.parametrize(
    "args, expected", READOUT_MISTAKES, ids=[" ".join(a) for a, _ in READOUT_MISTAKES]
)
def test_a_readout_mistake_is_one_line_before_training(lab, monkeypatch, args, expected):
    """The check src/train.py makes, with the example's conf files (--config-dir) and package:
    an import path that does not import, a class that is not a readout, a key it does not take,
    a name that is another's."""
    monkeypatch.syspath_prepend(str(lab))
    with pytest.raises(ConfigError) as err:
        check(["--config-dir", str(lab / "mylab" / "conf"), *args], CONF)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value), err.value


def test_a_conf_file_cannot_give_a_built_in_s_name_to_another_class(lab):
    """A user's `pool/mean.yaml` naming the gated pooling, which Hydra would pass over for the
    built-in `pool/mean.yaml` (conf/ comes first on the search path): refused by src/train.py on
    one line, before anything is written."""
    shadow = lab / "shadow" / "pool"
    shadow.mkdir(parents=True)
    (shadow / "mean.yaml").write_text(
        "name: mean\nreadout: mylab.gated.Gated\nmask_padding: true\n"
    )
    out = train_py("--config-dir", "shadow", "pool=mean", cwd=lab, env=in_lab(lab))
    assert out.returncode == 1
    assert out.stderr == (
        f"error: pool=mean is invalid: {shadow}/mean.yaml names mylab.gated.Gated, and "
        f"pool/mean.yaml in {CONF}, which Hydra reads, names "
        "longterm.models.readouts.MeanPooling; give yours a name of its own\n"
    )
    assert not (lab / "outputs").exists()


def test_a_readout_that_takes_no_such_key_is_one_line_from_train_py(lab):
    """Through src/train.py as a user runs it: the key, the readout and the keys it takes."""
    args = ["--config-dir", "mylab/conf", "pool=gated", "+pool.gates=2"]
    out = train_py(*args, cwd=lab, env=in_lab(lab))
    assert out.returncode == 1
    assert out.stderr == "error: pool.gates is not a key of pool=gated: Gated takes bias\n"


def test_the_contract_command_on_the_example_readout_and_on_a_broken_one(lab):
    """src/contract.py passes the gated pooling, and fails the peeking one (per step, said to
    mask padding) on padding and causality."""
    good = contract_py("--config-dir", "mylab/conf", "pool=gated", cwd=lab, env=in_lab(lab))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "pool=gated: readout mylab.gated.Gated (dim=100, mask_padding=True)" in good.stdout
    assert "FAIL" not in good.stdout and good.stdout.endswith("contract: every check passed\n")
    args = ["--config-dir", str(PLUGINS / "conf"), "pool=peek", "task=algorithmic", "model=lstm"]
    bad = contract_py(*args, cwd=lab, env={"PYTHONPATH": str(PLUGINS)})
    assert bad.returncode == 1, bad.stdout + bad.stderr
    failed = [line for line in bad.stdout.splitlines() if "FAIL" in line]
    assert len(failed) == 2, bad.stdout
    assert "mask_padding=true: padded states cannot change c" in failed[0]
    assert "per step: changing states after t leaves c_<=t unchanged" in failed[1]
    assert bad.stdout.endswith("contract: failed for pool=peek\n")


@pytest.mark.parametrize("mask_padding", [False, True])
@pytest.mark.parametrize("name", conf_names("pool"))
def test_every_built_in_readout_keeps_the_readout_contract(name, mask_padding):
    pool = OmegaConf.to_container(OmegaConf.load(CONF / "pool" / f"{name}.yaml"))
    report = readout_report({**pool, "mask_padding": mask_padding}, 8)
    assert report.ok, str(report)
    cls = readout_class(pool["readout"])  # what it says it is: per step, causal, its step form
    causal = cls.per_step and reads_causally(cls)  # a per-step one held to causality
    steps = 2 * has_step_form(cls)  # the two forms and the state size
    assert len(report.checks) == 5 + mask_padding + causal + steps, str(report)
    if cls.per_step and not causal:
        assert report.facts["causal"].startswith("declared not causal"), str(report)
