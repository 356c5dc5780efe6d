"""The check src/train.py runs before Hydra starts (longterm.config.command_line), in-process: every
job a command line would launch is composed and validated. test_train.py runs a few bad command
lines through the entry point itself; test_config.py holds the schema's own cases."""

import pytest
from helpers.configs import composed, conf_names
from helpers.paths import CONF

from longterm.config.command_line import check, job_overrides
from longterm.config.validate import ConfigError

BAD_COMMAND_LINES = [
    (["pool=max"], f"pool='max' is invalid: choose one of {', '.join(conf_names('pool'))}"),
    (
        ["data=streaming"],
        f"data='streaming' is invalid: choose one of {', '.join(conf_names('data'))}",
    ),
    (["model=lstmm"], "model='lstmm' is invalid: choose one of all_attention, "),
    (["task=adition"], "task='adition' is invalid: choose one of addition, algorithmic, "),
    (
        ["pool=atention"],
        f"pool='atention' is invalid: choose one of {', '.join(conf_names('pool'))}; did you "
        "mean attention?",
    ),
    (["-m", "launcher=paralel"], "launcher='paralel' is invalid: choose one of local, "),
    (
        ["model=gru"],
        f"model='gru' is invalid: choose one of {', '.join(conf_names('model'))}",
    ),
    (["arch=gpt"], "arch='gpt' is invalid: choose one of all_attention, attention"),
    (
        ["launcher=cluster"],
        "launcher='cluster' is invalid: choose one of local, packed, parallel, slurm",
    ),
    (
        ["experiment=table2"],
        f"experiment='table2' is invalid: choose one of {', '.join(conf_names('experiment'))}; "
        "did you mean table1?",
    ),
    (["experiment=table1", "task=addition", "T0=50", "lr=1e-3,0"], "lr=0 is invalid"),
    (["-m", "launcher=submitit_local", "launcher.cpus=0,2"], "launcher.cpus=0 is invalid"),
    (["-m", "launcher=slurm", "launcher.time_min=0"], "launcher.time_min=0 is invalid"),
    (["-m", "launcher=slurm", "launcher.max_num_timeout=-1"], "launcher.max_num_timeout=-1"),
    (
        ["-m", "launcher=slurm", "launcher.time_min=2"],
        "launcher: time_min=2 is too short for signal_delay_s=120: SLURM signals up to "
        "signal_delay_s + 60 s before the limit, and that must leave half the limit to train and "
        "count as a time-out in submitit; use time_min >= 6 or signal_delay_s <= 0",
    ),
    (
        ["-m", "launcher=slurm", "launcher.time_min=30", "launcher.signal_delay_s=600"],
        "launcher: time_min=30 is too short for signal_delay_s=600",
    ),
    (["-m", "launcher=slurm", "launcher.signal_delay_s=-1"], "launcher.signal_delay_s=-1 is"),
    (["data.val_batches=3"], "Could not override 'data.val_batches': Key 'val_batches'"),
    (["data=variable", "+data.val_size=3"], "data.val_size is not a key of data=variable"),
    (["T0=10"], "T0=10 is invalid: Input should be greater than or equal to 11"),
    (["data=variable", "data.min_length=5"], "data.min_length=5 is invalid"),
    (["data.batch_size=1.5"], "data.batch_size=1.5 is invalid: Input should be a valid int"),
    (["model.hidden=0"], "model.hidden=0 is invalid: Input should be greater than or equal"),
    (["arch=transformer", "model.norm=side"], "model.norm='side' is invalid"),
    (["model=feedback", "model.heads=3"], "model: heads=3 must divide dim=64"),
    (["model=rnn", "model.impl=fused"], "model.impl=fused is invalid for model=rnn"),
    (["pool=last", "model.impl=fused"], "model.impl=fused is invalid with pool=last"),
    (
        ["task=algorithmic", "pool=attention"],
        "pool=attention is invalid with task=algorithmic: attention pooling is blind to order and "
        "gives one output per sequence, and this task labels steps; use pool=per_step",
    ),
    (["task=fixed_knowledge", "pool=mean"], "pool=mean is invalid with task=fixed_knowledge: mean"),
    (
        ["task=algorithmic", "arch=lstm"],
        "pool=last is invalid with task=algorithmic: this task labels steps; use pool=per_step",
    ),
    (
        ["pool=per_step", "model=lstm"],
        "pool=per_step is invalid with task=addition: it has one target per sequence; use "
        "pool=last|attention|mean, or a task that labels steps (task.labels=step)",
    ),
    (
        ["task=fixed_knowledge", "pool=per_step", "task.loss=mse", "task.n_outputs=1"],
        "task.loss=mse is invalid with task=fixed_knowledge: its per-step labels are classes",
    ),
    (
        ["task=algorithmic", "pool=per_step", "model.impl=fused"],
        "model.impl=fused is invalid with pool=per_step",
    ),
    (
        ["task=algorithmic", "pool=per_step", "task.params.variables=6"],
        "task.params={'statements': 8, 'variables': 6} is invalid: algorithmic: variables=6",
    ),
    (["task.loss=hinge"], "task.loss='hinge' is invalid"),
    (["task=temporal_order", "task.n_outputs=1"], "task: loss=cross_entropy needs n_outputs >= 2"),
    (["task=addition", "task.n_outputs=2"], "task: loss=mse needs n_outputs = 1"),
    (
        ["task=associative_recall", "task.params.k=8", "T0=12"],
        "task.params={'k': 8} is invalid: associative_recall: k=8 needs length >= 17, got 12",
    ),
    (["task=addition", "+task.params.k=2"], "task.params={'k': 2} is invalid: generate_marked()"),
    (["optim.eps=0"], "optim.eps=0 is invalid: Input should be greater than 0"),
    (["optim.betas=[0.9,1.5]"], "optim.betas.1=1.5 is invalid: Input should be less than 1"),
    (["trainer.accelerator=quantum"], "trainer.accelerator='quantum' is invalid"),
    (["trainer.devices=0"], "trainer.devices=0 is invalid: Input should be a count >= 1"),
    (["trainer.devices=2"], "trainer.devices=2 is invalid: a run trains on one device; to use"),
    (["trainer.devices=[0,1]"], "trainer.devices=[0, 1] is invalid: a run trains on one device"),
    (["trainer.devices=auto"], "trainer.devices='auto' is invalid: a run trains on one device"),
    (["data.num_workers=-1"], "data.num_workers=-1 is invalid: Input should be an integer >= 0"),
    (["trainer.deterministic=maybe"], "trainer.deterministic='maybe' is invalid"),
    (["trainer.log_every_n_steps=0"], "trainer.log_every_n_steps=0 is invalid"),
    (
        ["callbacks.stop_when_solved.threshold=1.5"],
        "callbacks.stop_when_solved.threshold=1.5 is invalid: Input should be less than or",
    ),
    (["logger=null"], "logger=null is invalid: choose one of csv, none, tensorboard"),
    (["logger=false"], "logger=false is invalid: choose one of csv, none, tensorboard"),
    (["experiment=null"], "experiment=null is invalid: leave it out (none by default) or choose"),
    # a key that repeats a setting (config/schema.py: copy_of) is the setting's, never set apart
    (["data.T0=100"], "data.T0=100 is invalid: data.T0 is set by T0: give T0=100"),
    (["data.seed=3"], "data.seed=3 is invalid: data.seed is set by seed: give seed=3"),
    (
        ["data.task=longterm.tasks.marked.multiplication"],
        "data.task='longterm.tasks.marked.multiplication' is invalid: data.task is set by "
        "task.generator: choose the task with task=NAME",
    ),
    (["data.task_params={k: 2}"], "data.task_params={'k': 2} is invalid: data.task_params is set"),
    (["+anything=1"], "anything is not a key of the config, and no part of a run reads it"),
    (["hydra.run.dir=/proc/x"], "hydra.run.dir=/proc/x is invalid: cannot create it"),
    (["-m", "lr=1e-3", "hydra.sweep.dir=/proc/x"], "hydra.sweep.dir=/proc/x is invalid"),
    (["experiment=table1", "hydra.sweep.dir=/proc/x"], "hydra.sweep.dir=/proc/x is invalid"),
]


@pytest.mark.parametrize(
    "args, expected", BAD_COMMAND_LINES, ids=[" ".join(args) for args, _ in BAD_COMMAND_LINES]
)
def test_bad_command_lines_fail_with_one_line(args, expected):
    """A bad group choice, value, key or job of a sweep: one line that begins with the key (or
    the override) and its value; src/train.py prints it after `error: `."""
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    message = str(err.value)
    assert message.startswith(expected) and "\n" not in message, message


@pytest.mark.parametrize(
    "args, close",
    [
        (["model=lstmm"], "lstm"),
        (["task=adition"], "addition"),
        (["pool=atention"], "attention"),
        (["-m", "launcher=paralel"], "parallel"),
        (["experiment=tabel1"], "table1"),
        (["pool=max"], None),
    ],
)
def test_a_misspelt_choice_offers_the_closest_name(args, close):
    """A config-group choice that no conf file has ends with the closest one, when one is close
    (difflib), after the list of every choice."""
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    hint = f"; did you mean {close}?"
    assert str(err.value).endswith(hint) if close else "did you mean" not in str(err.value)


def test_command_line_sweeps_expand_to_the_cartesian_product():
    jobs = job_overrides(["task=addition,multiplication", "lr=1e-3,3e-3", "T0=50"], None)
    assert len(jobs) == 4
    assert ["task=multiplication", "lr=0.003", "T0=50"] in jobs


def test_experiment_sweeps_join_and_the_command_line_wins():
    params = {"task": "addition,multiplication", "T0": "50,100,500", "pool": "attention,mean"}
    jobs = job_overrides(["T0=50"], params)
    assert len(jobs) == 4 and all("T0=50" in job for job in jobs)


def test_table1_is_the_papers_grid():
    check(["experiment=table1"], CONF)  # all 96 jobs compose and validate


def test_a_bad_job_anywhere_in_a_sweep_is_caught():
    with pytest.raises(ConfigError, match="^T0=5 is invalid"):
        check(["-m", "task=addition,xor", "T0=100,5"], CONF)


def test_other_hydra_flags_are_left_to_hydra():
    check(["--cfg", "job", "T0=1"], CONF)  # Hydra prints the config; nothing trains


def test_slurm_launcher_takes_its_settings_from_the_command_line():
    overrides = [
        "launcher=slurm",
        "launcher.partition=gpu",
        "launcher.gpus=1",
        "launcher.cpus=4",
        "launcher.time_min=240",
    ]
    check(["-m", *overrides], CONF)
    launcher = composed(*overrides, with_hydra=True).hydra.launcher
    assert (
        launcher._target_ == "hydra_plugins.longterm_launcher.submitit_packed.PackedSlurmLauncher"
    )
    assert (launcher.partition, launcher.gpus_per_node, launcher.cpus_per_task) == ("gpu", 1, 4)
    assert launcher.timeout_min == 240


def test_a_run_directory_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"^hydra.run.dir=.*/file/run is invalid: .* is a file"):
        check([f"hydra.run.dir={tmp_path / 'file' / 'run'}"], CONF)
    check([f"hydra.run.dir={tmp_path / 'new' / 'run'}"], CONF)  # a new folder can be made
    assert list(tmp_path.iterdir()) == [tmp_path / "file"]  # and the check made none


def test_an_accelerator_the_machine_lacks_is_refused():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigError, match=r"^trainer.accelerator=gpu is invalid: this machine "):
        check(["trainer.accelerator=gpu"], CONF)
    check(["trainer.accelerator=cpu"], CONF)
