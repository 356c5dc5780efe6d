"""Seconds per update of an experiment's job, timed as a run does its updates (forward, backward
and an optimizer step on freshly generated training batches, in this process's threads): the
planners' `--time` (claims/runs.py, every_memory/runs.py), from which their budgets are set."""

import time

from hydra import compose, initialize_config_dir

from longterm.experiments.lr_race import CONFIG_DIR


def experiment_config(experiment: str, overrides: list[str]):
    """conf/train.yaml under `experiment` with these overrides, validated."""
    from longterm.config.validate import validate

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("train", overrides=[f"experiment={experiment}", *overrides])
    validate(cfg)
    return cfg


def seconds_per_update(
    experiment: str,
    overrides: list[str],
    updates: int,
    warmup: int = 3,
    budget_s: float | None = None,
) -> float:
    """Forward, backward and an Adam step on freshly generated training batches, as a run does
    them, timed over `updates` updates after `warmup` untimed ones (in this process's threads),
    or over the updates that end within `budget_s` seconds of timing (at least one)."""
    from longterm.training.batches import TRAIN, batch_rng
    from longterm.training.parts import build_model, instantiate_named

    cfg = experiment_config(experiment, overrides)
    module = build_model(cfg).train()
    recipe = instantiate_named(cfg.data).train_recipe()
    optimizer = module.configure_optimizers()
    start, timed = time.perf_counter(), 0
    for i in range(warmup + updates):
        if i == warmup:
            start = time.perf_counter()
        x, y, mask = recipe(batch_rng(cfg.seed, TRAIN, 0, i))
        loss = module.loss(module(x, mask), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        timed = i + 1 - warmup
        if budget_s is not None and timed > 0 and time.perf_counter() - start >= budget_s:
            break
    return (time.perf_counter() - start) / timed
