"""A researcher's own model and task, from a package outside the repo, through the path a user
takes: the example package (examples/mylab) copied to a temporary directory (conftest.lab),
src/train.py and src/contract.py run from there with its conf files on the search path; and the
contract check on every built-in model and task, and on a broken model it must reject. A
readout of one's own: tests/test_readout_plugins.py."""

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.configs import composed, conf_names
from helpers.paths import CONF, PLUGINS
from helpers.presets import TINY
from helpers.results import read_json, sweep_results
from helpers.runs import contract_py, in_lab, train_py
from omegaconf import OmegaConf
from tensorboard.plugins.hparams import metadata

from longterm.config.command_line import check
from longterm.config.run_names import short_name
from longterm.config.run_settings import run_params
from longterm.config.validate import ConfigError
from longterm.contract.encoder import encoder_report
from longterm.contract.task import task_report
from longterm.training.hparams import records
from longterm.training.parts import build_model


def test_the_example_trains_beside_the_paper_model_and_is_collected_by_its_own_names(lab):
    """`--config-dir mylab/conf`, a sweep of the GRU and the paper's model on the example's task
    and on addition: each run is recorded by its own names, in result.json, hparams.yaml, the
    run directory, TensorBoard's HPARAMS (and its discrete values) and the collector's tables;
    the collector's sweeps.md gives the command with the PYTHONPATH it needs."""
    sweep = lab / "sweep"
    args = ["-m", "--config-dir", "mylab/conf", "model=gru,feedforward"]
    args += ["task=ordered_difference,addition", *TINY, f"hydra.sweep.dir={sweep}"]
    out = train_py(*args, cwd=lab, env=in_lab(lab))
    assert out.returncode == 0, out.stderr
    results = {(r["model"], r["task"]): r for r in sweep_results(sweep)}
    assert sorted(results) == [
        ("feedforward", "addition"),
        ("feedforward", "ordered_difference"),
        ("gru", "addition"),
        ("gru", "ordered_difference"),
    ]
    gru = results["gru", "ordered_difference"]
    run_dir = Path(gru["run_dir"])
    assert run_dir.name.startswith("ordered_difference-gru-last-T20-lr1e-3-s0")
    assert (gru["status"], gru["pool"], gru["updates"]) == ("max_epochs", "last", 3)
    assert gru["config"]["model"]["encoder"] == "mylab.gru.GRU"
    assert gru["n_params"] == 3 * 100 * (2 + 100 + 2) + 10_201  # nn.GRU, then head and readout
    hparams = OmegaConf.load(run_dir / "hparams.yaml")
    assert (hparams.model, hparams.task) == ("gru", "ordered_difference")

    found = records(run_dir)
    start = metadata.parse_session_start_info_plugin_data(found[metadata.SESSION_START_INFO_TAG][0])
    assert start.hparams["model"].string_value == "gru"
    assert start.hparams["task"].string_value == "ordered_difference"
    experiment = metadata.parse_experiment_plugin_data(found[metadata.EXPERIMENT_TAG][0])
    domains = {
        h.name: [v.string_value for v in h.domain_discrete.values] for h in experiment.hparam_infos
    }
    assert domains["model"] == sorted([*conf_names("model"), "gru"])
    assert domains["task"] == sorted([*conf_names("task"), "delayed_copy", "ordered_difference"])

    collected = lab / "collected"
    out = subprocess.run(
        [sys.executable, "-m", "longterm.analysis.collect", str(sweep), "--out", str(collected)],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    import pandas as pd

    runs = pd.read_csv(collected / "runs.csv")
    assert set(zip(runs.model, runs.task, strict=True)) == set(results)
    # the sweep's command with the PYTHONPATH that its rerun needs
    command = f"PYTHONPATH={lab} python src/train.py -m --config-dir {lab / 'mylab' / 'conf'} "
    assert f"    {command}model=gru,feedforward " in (collected / "sweeps.md").read_text()
    table = subprocess.run(
        [sys.executable, "-m", "longterm.experiments.memory_comparison.page", str(sweep)],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert table.returncode == 0, table.stderr
    assert "| gru+last " in table.stdout and "ordered_difference" in table.stdout


def test_a_token_task_that_labels_steps_trains_at_every_step_from_the_users_directory(lab):
    """The example's delayed copy: token ids (an embedding first), a target per step, and
    pool=per_step chosen by its conf file over the GRU's pool=last; the contract check passes it
    and a run records it."""
    good = contract_py(
        "--config-dir", "mylab/conf", "model=gru", "task=delayed_copy", cwd=lab, env=in_lab(lab)
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.endswith("contract: every check passed\n"), good.stdout
    run = lab / "copy_run"
    out = train_py(
        "--config-dir",
        "mylab/conf",
        "model=gru",
        "task=delayed_copy",
        *TINY,
        f"hydra.run.dir={run}",
        cwd=lab,
        env=in_lab(lab),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result = read_json(run / "result.json")
    assert result["status"] in ("solved", "max_epochs"), result
    assert (result["task"], result["model"], result["pool"]) == ("delayed_copy", "gru", "per_step")


def test_a_search_path_override_brings_the_same_model(lab):
    """Hydra's other mechanism, `hydra.searchpath`, instead of --config-dir."""
    run_dir = lab / "searchpath"
    args = [f"hydra.searchpath=[file://{lab / 'mylab' / 'conf'}]", "model=gru"]
    out = train_py(*args, *TINY, f"hydra.run.dir={run_dir}", cwd=lab, env=in_lab(lab))
    assert out.returncode == 0, out.stderr
    result = read_json(run_dir / "result.json")
    assert (result["model"], result["pool"], result["status"]) == ("gru", "last", "max_epochs")


PLUGIN_MISTAKES = [
    (["model=gru", "+model.layerz=2"], "model.layerz is not a key of model=gru: GRU takes layers"),
    (["model=gru", "model.layers=0"], "model: layers=0 must be >= 1"),
    (["model=gru", "model.layers=two"], "model.layers='two' is invalid: Input should be a valid"),
    (
        ["model=gru", "model.encoder=mylab.gru.Gru", "model.name=gru2"],
        "model.encoder=mylab.gru.Gru is invalid: module mylab.gru has no 'Gru'",
    ),
    (["model=gruu"], "model='gruu' is invalid: choose one of all_attention, base_conv, deltanet, "),
    (
        ["task=ordered_difference", "task.n_features=3"],
        "task.n_features=3 is invalid: task=ordered_difference's generator gives 2 features",
    ),
    (
        ["task=ordered_difference", "task.labels=step", "pool=per_step"],
        "task.labels=step is invalid: task=ordered_difference's generator gives one target per "
        "sequence",
    ),
]


@pytest.mark.parametrize(
    "args, expected", PLUGIN_MISTAKES, ids=[" ".join(a) for a, _ in PLUGIN_MISTAKES]
)
def test_a_plugin_mistake_is_one_line_before_training(lab, monkeypatch, args, expected):
    """The check src/train.py makes, with the example's conf files (--config-dir) and package."""
    monkeypatch.syspath_prepend(str(lab))
    with pytest.raises(ConfigError) as err:
        check(["--config-dir", str(lab / "mylab" / "conf"), *args], CONF)
    assert str(err.value).startswith(expected), err.value


def test_a_constructor_without_type_hints_is_told_what_to_add(monkeypatch):
    """A key given to a parameter without a type hint (tests/plugins/unhinted.py) could not be
    checked: one line that says what to add, not the constructor's own TypeError on the
    unchecked value; without the key, the encoder takes its default and the command checks."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    unhinted = ["model.encoder=unhinted.Unhinted", "model.name=unhinted"]
    with pytest.raises(ConfigError) as err:
        check([*unhinted, "+model.heads=four"], CONF)
    assert str(err.value) == (
        "model: unhinted.Unhinted.__init__ parameter 'heads' has no type hint: annotate it (int, "
        "float, bool, str, ...), so that its value is checked"
    )
    check(unhinted, CONF)


def test_a_plugin_that_does_not_import_is_one_line_from_train_py(lab):
    """Through src/train.py as a user runs it, without the package on PYTHONPATH: one line, no
    traceback, no output directory."""
    out = train_py("--config-dir", "mylab/conf", "model=gru", cwd=lab)
    assert out.returncode == 1
    assert out.stderr == (
        "error: model.encoder=mylab.gru.GRU is invalid: no module named 'mylab' (is its package "
        "on PYTHONPATH, or installed?)\n"
    )
    assert not (lab / "outputs").exists()


def test_a_module_that_fails_on_import_is_named_with_its_file_and_line(tmp_path):
    """A user's module that raises while it is imported: one line from src/train.py that names
    the file and the line where it failed, and the error, with no traceback."""
    package = tmp_path / "brokenlab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rnn.py").write_text(
        "import math\n\nWIDTH = math.sqrt(-1)  # fails here\n\n\nclass RNN:\n    causal = True\n"
    )
    args = ["model=rnn", "model.encoder=brokenlab.rnn.RNN", "model.name=broken"]
    out = train_py(*args, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 1
    assert out.stderr == (
        "error: model.encoder=brokenlab.rnn.RNN is invalid: importing brokenlab.rnn fails at "
        "brokenlab/rnn.py:3: ValueError: math domain error\n"
    )


def test_a_misspelt_plugin_name_offers_the_closest(lab):
    """`model=gur` with the example's conf files on the search path: the user's own `gru` is
    among the choices, and offered."""
    out = train_py("--config-dir", "mylab/conf", "model=gur", cwd=lab, env=in_lab(lab))
    assert out.returncode == 1
    assert out.stderr.startswith("error: model='gur' is invalid: choose one of all_attention, ")
    assert out.stderr.endswith(", zoology_mamba; did you mean gru?\n")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--config-dir", "nowhere", "model=gru"], "--config-dir=nowhere is invalid: no such"),
        (["--config-dir"], "--config-dir needs a value"),
        (
            ["model=lstm", "--config-dir", "conf", "task=xor"],
            "--config-dir is invalid between overrides: put the flags first",
        ),
        (
            ["model=lstm", "model.encoder=longterm.models.recurrent.RNN"],
            "model.encoder=longterm.models.recurrent.RNN needs a name of its own: give "
            "model.name=... too, or it would be recorded as model=lstm",
        ),
        (
            ["model=lstm", "model.encoder=longterm.models.recurrent.RNN", "model.name=rnn"],
            "model.name=rnn is invalid with model=lstm: rnn is the name of another conf file",
        ),
        (
            ["task=addition", "task.generator=longterm.tasks.marked.multiplication"],
            "task.generator=longterm.tasks.marked.multiplication needs a name of its own",
        ),
        (
            ["model=mad_mamba", "model.mixer=longterm.models.mad.RotaryAttention"],
            "model.mixer=longterm.models.mad.RotaryAttention needs a name of its own: give "
            "model.name=... too, or it would be recorded as model=mad_mamba",
        ),
        (
            [
                *("model=mad_mamba", "model.mixer=longterm.models.mad.RotaryAttention"),
                "model.name=mad_gla",
            ],  # fmt: skip
            "model.name=mad_gla is invalid with model=mad_mamba: mad_gla is the name of another",
        ),
    ],
)
def test_config_dir_and_name_mistakes_are_one_line(args, expected):
    """A model whose encoder is swapped on the command line cannot keep a built-in's name."""
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    assert str(err.value).startswith(expected), err.value


def test_a_swapped_encoder_with_a_name_of_its_own_is_recorded_under_it():
    """The check passes, and the run is named, recorded and built as the new encoder."""
    args = ["model=lstm", "model.encoder=longterm.models.recurrent.RNN", "model.name=tanh_rnn"]
    check(args, CONF)
    cfg = composed(*args, with_hydra=True)
    assert short_name(cfg).startswith("addition-tanh_rnn-last-T50")
    assert run_params(cfg)["model"] == "tanh_rnn"
    net = build_model(cfg).net
    assert sum(p.numel() for p in net.parameters()) == 100 * (2 + 100 + 2) + 10_201


def test_the_contract_command_on_the_example_and_on_a_broken_model(lab):
    """src/contract.py passes the example's GRU and task, and fails the leaky model on
    causality and padding."""
    good = contract_py(
        "--config-dir",
        "mylab/conf",
        "model=gru",
        "task=ordered_difference",
        cwd=lab,
        env=in_lab(lab),
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert "FAIL" not in good.stdout and good.stdout.endswith("contract: every check passed\n")
    assert "info  chance: 0.1" in good.stdout
    bad = contract_py(
        "--config-dir",
        str(PLUGINS / "conf"),
        "model=leaky",
        cwd=lab,
        env={"PYTHONPATH": str(PLUGINS)},
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    failed = [line for line in bad.stdout.splitlines() if "FAIL" in line]
    assert len(failed) == 2, bad.stdout
    assert "padding cannot change what a masking readout pools" in failed[0]
    assert "declared causal: changing steps after t leaves h_<=t unchanged" in failed[1]
    assert bad.stdout.endswith("contract: failed for model=leaky\n")


def model_keys(name: str) -> dict:
    keys = OmegaConf.to_container(OmegaConf.load(CONF / "model" / f"{name}.yaml"))
    keys.pop("defaults", None)
    return keys


@pytest.mark.parametrize("name", conf_names("model"))
def test_every_built_in_model_keeps_the_encoder_contract(name):
    keys = model_keys(name)
    report = encoder_report(keys.pop("encoder"), 3, keys.pop("dim"), keys)
    assert report.ok, str(report)
    assert len(report.checks) == 9  # 7, then the step form's two (contract/step_form.py)


@pytest.mark.parametrize("name", conf_names("task"))
def test_every_built_in_task_keeps_the_task_contract(name):
    task = OmegaConf.to_container(OmegaConf.load(CONF / "task" / f"{name}.yaml"), resolve=True)
    report = task_report(task, 50)
    assert report.ok, str(report)
    assert 0 < float(report.facts["chance"].split()[0]) < 1


def test_the_contract_rejects_a_model_that_is_not_what_it_declares(monkeypatch):
    """The leaky model through the function, and a task whose section misdeclares it."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    report = encoder_report("leaky.Leaky", 3, 8, {})
    assert not report.ok
    assert [c.ok for c in report.checks] == [True, True, True, True, False, False, True]
    assert report.facts["step form"].startswith("none (state_size not defined)")
    task = OmegaConf.to_container(OmegaConf.load(CONF / "task" / "addition.yaml"))
    report = task_report({**task, "n_features": 3}, 50)
    assert not report.ok and "task.n_features=3 is invalid" in str(report)
