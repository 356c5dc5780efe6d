"""A plugin encoder's own keys, taken from the model section by the names of its `__init__`
parameters and checked against their type hints (strict, as the schema) before training."""

import typing
from typing import Any

from pydantic import ConfigDict, ValidationError, create_model

from longterm.plugins.resolve import PluginError, own_parameters, takes_any_key

# Keys of the model section the head (models/head.py) reads, given to an encoder that names them.
SHARED_KEYS = ("init", "negative_slope")


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
