"""Encoders, readouts and task generators by import path: the one way a model, a readout or a
task comes in, the built-ins' as a user's (docs/plugins.md).

A model's conf file (`conf/model/*.yaml`, or a user's `--config-dir`) names its encoder,
`encoder: package.module.Class`; a readout's (`conf/pool/*.yaml`) its class, `readout:
package.module.Class`; a task's its generator, `generator: package.module.func`.

Encoder: `Class(in_features, dim, **own)` is an `nn.Module` with a class attribute
`causal: bool` and `forward(x (B, T, F), mask (B, T) bool | None) -> h (B, T, D)`, D = dim. Its
own keys are the other parameters of `__init__`, taken from the model section by name; their type
hints are their schema (plugins/keys.py checks them before training). The model's `init` and
`negative_slope`, which the head uses, and `impl` reach the encoder too when `__init__` names them.

Readout: `Class(dim, mask_padding, **own)` is an `nn.Module` with a class attribute
`per_step: bool` and `forward(h (B, T, D), mask (B, T) bool | None) -> c`, c (B, D), or
(B, T, D) with `per_step = True`; its own keys are the pool section's other keys, and the
model's `init` reaches it when `__init__` names it. A per-step readout is causal (c_t reads the
states of steps <= t only) unless its class says `causal = False` (reads_causally), as one whose
every c_t reads the last state does; such a readout has no step form.

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

# Passed by the framework, not taken from the model section (the pool section's mask_padding is
# a key every readout has).
ENCODER_ARGS = ("in_features", "dim")
READOUT_ARGS = ("dim", "mask_padding")


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


def own_parameters(
    cls: type, given: tuple[str, ...] = ENCODER_ARGS
) -> dict[str, inspect.Parameter]:
    """A plugin's own keys: the parameters of `__init__` but those the framework gives."""
    params = inspect.signature(cls.__init__).parameters
    return {
        name: p
        for name, p in list(params.items())[1:]
        if name not in given and p.kind is not p.VAR_POSITIONAL
    }


def takes_any_key(cls: type, given: tuple[str, ...] = ENCODER_ARGS) -> bool:
    return any(p.kind is p.VAR_KEYWORD for p in own_parameters(cls, given).values())


def class_path(cls: type) -> str:
    """Where a class is defined, `package.module.Class`: what identifies a built-in."""
    return f"{cls.__module__}.{cls.__qualname__}"


def module_class(path: str, key: str, given: tuple[str, ...], flag: str, says: str) -> type:
    """The nn.Module class at `path` (the value of `key`), checked to declare the class attribute
    `flag` as a bool (`says` what it must say) and to take the arguments `given`."""
    from torch import nn  # only once a model is checked: the plugin's module imports torch anyway

    cls = resolve(path, key)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise PluginError(f"{key}={path} is invalid: {cls!r} is not an nn.Module class")
    if not isinstance(getattr(cls, flag, None), bool):
        raise PluginError(f"{key}={path} is invalid: {cls.__name__} must say {says}")
    missing = [a for a in given if a not in inspect.signature(cls.__init__).parameters]
    if missing and not takes_any_key(cls, given):
        raise PluginError(
            f"{key}={path} is invalid: {cls.__name__}.__init__ must take "
            f"{', '.join(given)} (it lacks {', '.join(missing)})"
        )
    return cls


def encoder_class(path: str) -> type:
    """The encoder class at `path`, checked to be an nn.Module that declares `causal`."""
    says = (
        "whether it is causal, a class attribute `causal = True` (state t sees steps <= t only) "
        "or `causal = False`"
    )
    return module_class(path, "model.encoder", ENCODER_ARGS, "causal", says)


def readout_class(path: str) -> type:
    """The readout class at `path`, checked to be an nn.Module that declares `per_step`."""
    says = (
        "what it gives, a class attribute `per_step = False` (c (B, D), one output per "
        "sequence) or `per_step = True` (c (B, T, D), one per step)"
    )
    return module_class(path, "pool.readout", READOUT_ARGS, "per_step", says)


def reads_causally(readout: Any) -> bool:
    """Whether a per-step readout (its class or an instance) is held causal, c_t a function of
    the states of steps <= t: unless it says `causal = False`, as an encoder says it (the
    contract check holds a causal one to it, and reports one that says it is not)."""
    return getattr(readout, "causal", True) is not False


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
