"""The MAD protocol's settings in a config (longterm.tasks.mad: SETTINGS, one per task's baseline
and per harder value of one key): `task.setting` names one (`baseline`, `vocab_size_32`, ...), and
the task's keys and the data's sizes are read from it where the conf files interpolate

    ${mad_setting:<task's generator or mad-lab name>,<setting's name>,<key>}

(conf/task/mad_*.yaml: the task's params, conf/data/mad.yaml: n_train, n_test, steps) and

    ${mad_batches:<task's generator>,<setting's name>,<n_train>,<batch_size>}

the updates of an epoch through a fixed training set, ceil(n_train / batch_size), mad-lab's
DataLoader keeping the last, smaller batch. Importing this module registers both (the config
package does, so every entry point and test has them before Hydra composes).
"""

import math

from omegaconf import OmegaConf

from longterm.tasks.mad import named_setting, task_of


def mad_setting(task: str, name: str, key: str) -> int | float | bool:
    """The value of `key` in the setting `name` of `task` (tasks/mad.py: named_setting)."""
    return named_setting(task, str(name))[key]


def mad_batches(task: str, name: str, n_train: int, batch_size: int) -> int:
    """Updates per epoch through n_train sequences in batches of batch_size, the last smaller."""
    task_of(task)  # a task that is not MAD's is refused here too
    return math.ceil(int(n_train) / int(batch_size))


def register() -> None:
    """Make `${mad_setting:...}` and `${mad_batches:...}` resolvable (idempotent)."""
    OmegaConf.register_new_resolver("mad_setting", mad_setting, replace=True)
    OmegaConf.register_new_resolver("mad_batches", mad_batches, replace=True)


register()


def setting_error(task: dict, data_name: str | None) -> str | None:
    """Why a run's task section (unresolved values allowed) and data choice do not make a MAD
    run, in one line; None if they do, or if neither is MAD's. data=mad needs a MAD task; a MAD
    task's setting must be one of its own; under data=mad its params must be the setting's (a
    param given on the command line would train on another data set than the one recorded)."""
    generator, name = task.get("generator"), task.get("setting")
    try:
        mad_task = task_of(generator)
    except ValueError:
        if data_name == "mad":
            return (
                f"data=mad is invalid with task={task.get('name')}: it draws the MAD tasks' "
                "fixed data sets; choose a MAD task (task=mad_in_context_recall, ...)"
            )
        return None
    try:
        keys = named_setting(mad_task, str(name))
    except ValueError as e:
        return str(e)
    if data_name != "mad":
        return None
    for key, value in (task.get("params") or {}).items():
        if key in keys and keys[key] != value:
            return (
                f"task.params.{key}={value} is invalid with data=mad: task.setting={name} has "
                f"{key}={keys[key]}; choose the setting that has it (task.setting=...), the "
                "params follow it"
            )
    return None
