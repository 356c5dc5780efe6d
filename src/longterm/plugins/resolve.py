"""Encoders and task generators by import path: the one way a model or a task comes in, the
built-ins' as a user's (docs/plugins.md).

A model's conf file (`conf/model/*.yaml`, or a user's `--config-dir`) names its encoder,
`encoder: package.module.Class`; a task's names its generator, `generator: package.module.func`.

Encoder: `Class(in_features, dim, **own)` is an `nn.Module` with a class attribute
`causal: bool` and `forward(x (B, T, F), mask (B, T) bool | None) -> h (B, T, D)`, D = dim. Its
own keys are the other parameters of `__init__`, taken from the model section by name; their type
hints are their schema (plugins/keys.py checks them before training). The model's `init` and
`negative_slope`, which the head uses, reach the encoder too when `__init__` names them.

Generator: `func(rng, min_length, n_sequences, max_length=None, **params) -> (X, y, mask)` as in
`longterm.tasks`; `params` are `task.params`.

This module imports nothing heavy: resolving a path imports only the module it names.
"""

import functools
import importlib
import importlib.util
import inspect
import os
import traceback
from collections.abc import Callable
from typing import Any

# Passed by the framework, not taken from the model section.
ENCODER_ARGS = ("in_features", "dim")


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
        message = (str(e).splitlines() or [""])[0]
        raise PluginError(
            f"{key}={path} is invalid: importing {module_name} fails at "
            f"{failed_at(e, module_name)}: {type(e).__name__}: {message}"
        ) from None
    if not hasattr(module, attr):
        raise PluginError(f"{key}={path} is invalid: module {module_name} has no {attr!r}")
    return getattr(module, attr)


def failed_at(error: Exception, module_name: str) -> str:
    """`file:line` where importing `module_name` raised `error`: the last frame of the
    traceback in that module's file (the line of a SyntaxError), else the last frame outside
    Python's import machinery; the file relative to the working directory where it lies below."""
    if isinstance(error, SyntaxError):
        return f"{shown_path(error.filename)}:{error.lineno}"
    machinery = (__file__, importlib.__file__)
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if f.filename not in machinery and not f.filename.startswith("<frozen ")
    ]
    try:
        origin = getattr(importlib.util.find_spec(module_name), "origin", None)
    except Exception:  # its package fails on import too
        origin = None
    frames = [f for f in frames if f.filename == origin] or frames
    return f"{shown_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else module_name


def shown_path(filename: str) -> str:
    relative = os.path.relpath(filename)
    return filename if relative.startswith("..") else relative


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
