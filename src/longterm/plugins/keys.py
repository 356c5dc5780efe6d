"""A plugin's own keys: an encoder's from the model section, a readout's from the pool section,
taken by the names of its `__init__` parameters and checked against their type hints (strict, as
the schema) before training; a key given to a parameter without one is refused, in one line that
says what to add."""

import typing
from typing import Any

from pydantic import ConfigDict, ValidationError, create_model

from longterm.plugins.resolve import (
    ENCODER_ARGS,
    READOUT_ARGS,
    PluginError,
    class_path,
    own_parameters,
    takes_any_key,
)

# Keys of the model section the head (models/head.py) reads, and `impl`, given to an encoder that
# names them; a readout that names `init` gets the model's too.
SHARED_KEYS = ("init", "negative_slope", "impl")
READOUT_SHARED_KEYS = ("init",)


def encoder_keys(cls: type, model: dict[str, Any], common: tuple[str, ...]) -> dict[str, Any]:
    """The keyword arguments of the encoder `cls` from a model section: its own keys and the
    SHARED_KEYS it names. A key that neither the framework (`common`) nor the encoder reads
    raises PluginError naming it."""
    shared = {k: model[k] for k in SHARED_KEYS if k in model}
    return plugin_keys(cls, model, common, "model", ENCODER_ARGS, SHARED_KEYS, shared)


def takes_impl(cls: type) -> bool:
    """Whether the encoder `cls` takes `model.impl` itself (its `__init__` names `impl`): it has
    implementations of its own, which it picks (choices.impl_error)."""
    return "impl" in own_parameters(cls)


def readout_keys(
    cls: type, pool: dict[str, Any], common: tuple[str, ...], model: dict[str, Any]
) -> dict[str, Any]:
    """The keyword arguments of the readout `cls` (but dim and mask_padding) from a pool
    section: its own keys, and the model section's READOUT_SHARED_KEYS it names."""
    shared = {k: model[k] for k in READOUT_SHARED_KEYS if k in model}
    return plugin_keys(cls, pool, common, "pool", READOUT_ARGS, READOUT_SHARED_KEYS, shared)


def plugin_keys(
    cls: type,
    section: dict[str, Any],
    common: tuple[str, ...],
    key: str,
    given: tuple[str, ...],
    shareable: tuple[str, ...],
    shared: dict[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of `cls` from `section` (the config's `key`): its own keys,
    checked against the type hints of `__init__`, and the `shared` values (of the `shareable`
    keys) it names. A key that neither the framework (`common`) nor `cls` reads raises
    PluginError naming it, as does a parameter without a default that the section lacks."""
    params = own_parameters(cls, given)
    own = {k: v for k, v in section.items() if k not in common}
    if not takes_any_key(cls, given):
        unknown = [k for k in own if k not in params]
        if unknown:
            takes = ", ".join(k for k in params if k not in shareable) or "no keys of its own"
            raise PluginError(
                f"{key}.{unknown[0]} is not a key of {key}={section.get('name')}: "
                f"{cls.__name__} takes {takes}"
            )
    missing = [k for k, p in params.items() if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    missing = [k for k in missing if k not in own and k not in shareable]
    if missing:
        raise PluginError(
            f"{key}.{missing[0]} is missing: {cls.__name__} needs it, give it a value"
        )
    checked = check_types(cls, {k: v for k, v in own.items() if k in params}, key)
    return {**own, **checked, **{k: v for k, v in shared.items() if k in params}}


def check_types(cls: type, values: dict[str, Any], key: str = "model") -> dict[str, Any]:
    """`values` validated against the type hints of `cls.__init__` (strict, as the schema);
    PluginError for a value whose parameter has no hint, which nothing could check."""
    hints = typing.get_type_hints(cls.__init__, include_extras=True)
    unhinted = [k for k in values if k not in hints]
    if unhinted:
        raise PluginError(
            f"{key}: {class_path(cls)}.__init__ parameter {unhinted[0]!r} has no type hint: "
            "annotate it (int, float, bool, str, ...), so that its value is checked"
        )
    fields = {k: (hints[k], ...) for k in values}
    schema = create_model(f"{cls.__name__}Keys", __config__=ConfigDict(strict=True), **fields)
    try:
        return dict(schema.model_validate(values))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise PluginError(f"{key}.{where}={err.get('input')!r} is invalid: {err['msg']}") from None
