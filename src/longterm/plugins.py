"""Encoders and task generators by import path: the one way a model or a task comes in, the
built-ins' as a user's (docs/plugins.md).

A model's conf file (`conf/model/*.yaml`, or a user's `--config-dir`) names its encoder,
`encoder: package.module.Class`; a task's names its generator, `generator: package.module.func`.

Encoder: `Class(in_features, dim, **own)` is an `nn.Module` with a class attribute
`causal: bool` and `forward(x (B, T, F), mask (B, T) bool | None) -> h (B, T, D)`, D = dim. Its
own keys are the other parameters of `__init__`, taken from the model section by name; their type
hints are their schema (pydantic checks them before training). The model's `init` and
`negative_slope`, which the head uses, reach the encoder too when `__init__` names them.

Generator: `func(rng, min_length, n_sequences, max_length=None, **params) -> (X, y, mask)` as in
`longterm.tasks`; `params` are `task.params`.

This module imports nothing heavy: resolving a path imports only the module it names.
"""

import functools
import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import ConfigDict, ValidationError, create_model

# Passed by the framework, not taken from the model section.
ENCODER_ARGS = ("in_features", "dim")
# Keys of the model section the head (models/head.py) reads, given to an encoder that names them.
SHARED_KEYS = ("init", "negative_slope")


class PluginError(ValueError):
    """An import path or a plugin's keys that cannot be used; the message is one line."""


def resolve(path: str, key: str) -> Any:
    """The object `path` (`package.module.name`) names; PluginError naming `key` if it does not
    import."""
    module_name, _, attr = str(path).rpartition(".")
    if not module_name:
        raise PluginError(f"{key}={path!r} is invalid: give an import path, package.module.name")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise PluginError(
            f"{key}={path} is invalid: no module named {e.name!r} (is its package on PYTHONPATH, "
            "or installed?)"
        ) from None
    except Exception as e:  # the user's module itself fails on import
        where = f"{e.filename}:{e.lineno}" if isinstance(e, SyntaxError) else module_name
        raise PluginError(
            f"{key}={path} is invalid: importing {where} fails: {type(e).__name__}: {e}"
        ) from None
    if not hasattr(module, attr):
        raise PluginError(f"{key}={path} is invalid: module {module_name} has no {attr!r}")
    return getattr(module, attr)


def own_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The encoder's own keys: the parameters of `__init__` after in_features and dim."""
    params = inspect.signature(cls.__init__).parameters
    return {
        name: p
        for name, p in list(params.items())[1:]
        if name not in ENCODER_ARGS and p.kind is not p.VAR_POSITIONAL
    }


def takes_any_key(cls: type) -> bool:
    return any(p.kind is p.VAR_KEYWORD for p in own_parameters(cls).values())


def encoder_class(path: str) -> type:
    """The encoder class at `path`, checked to be an nn.Module that declares `causal`."""
    from torch import nn  # only once a model is checked: the encoder's module imports torch anyway

    cls = resolve(path, "model.encoder")
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise PluginError(f"model.encoder={path} is invalid: {cls!r} is not an nn.Module class")
    if not isinstance(getattr(cls, "causal", None), bool):
        raise PluginError(
            f"model.encoder={path} is invalid: {cls.__name__} must say whether it is causal, a "
            "class attribute `causal = True` (state t sees steps <= t only) or `causal = False`"
        )
    missing = [a for a in ENCODER_ARGS if a not in inspect.signature(cls.__init__).parameters]
    if missing and not takes_any_key(cls):
        raise PluginError(
            f"model.encoder={path} is invalid: {cls.__name__}.__init__ must take "
            f"{', '.join(ENCODER_ARGS)} (it lacks {', '.join(missing)})"
        )
    return cls


def encoder_keys(cls: type, model: dict[str, Any], common: tuple[str, ...]) -> dict[str, Any]:
    """The keyword arguments of `cls` from a model section: its own keys, checked against the
    type hints of `__init__`, and the SHARED_KEYS it names. A key that neither the framework
    (`common`) nor the encoder reads raises PluginError naming it."""
    params = own_parameters(cls)
    own = {k: v for k, v in model.items() if k not in common}
    if not takes_any_key(cls):
        unknown = [k for k in own if k not in params]
        if unknown:
            takes = ", ".join(k for k in params if k not in SHARED_KEYS) or "no keys of its own"
            raise PluginError(
                f"model.{unknown[0]} is not a key of model={model.get('name')}: "
                f"{cls.__name__} takes {takes}"
            )
    missing = [k for k, p in params.items() if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    missing = [k for k in missing if k not in own and k not in SHARED_KEYS]
    if missing:
        raise PluginError(
            f"model.{missing[0]} is missing: {cls.__name__} needs it, give it a value"
        )
    checked = check_types(cls, {k: v for k, v in own.items() if k in params})
    shared = {k: model[k] for k in SHARED_KEYS if k in params and k in model}
    return {**own, **checked, **shared}


def check_types(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """`values` validated against the type hints of `cls.__init__` (strict, as the schema)."""
    hints = typing.get_type_hints(cls.__init__, include_extras=True)
    fields = {k: (hints.get(k, Any), ...) for k in values}
    schema = create_model(f"{cls.__name__}Keys", __config__=ConfigDict(strict=True), **fields)
    try:
        return dict(schema.model_validate(values))
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise PluginError(f"model.{key}={err.get('input')!r} is invalid: {err['msg']}") from None


def generator(ref: "str | Callable[..., Any]", key: str = "task.generator") -> Callable[..., Any]:
    """A task generator: `ref` itself if it is callable, else the function its import path
    names (resolved once: every batch of a run asks for it)."""
    return ref if callable(ref) else generator_at(ref, key)


@functools.cache
def generator_at(ref: str, key: str) -> Callable[..., Any]:
    found = resolve(ref, key)
    if not callable(found):
        raise PluginError(f"{key}={ref} is invalid: {found!r} is not a function")
    return found
