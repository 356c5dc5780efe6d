"""The marks by which the schema (config/schema.py) says what identifies a run, on the keys
themselves; config/run_settings.py reads them (`identity`, `copies`).

`setting(...)`: a key that changes what a run computes, a run's setting under its flat name in
result.json, the run-directory check, the run's HPARAMS columns and the collector. `copy_of(...)`:
a key of a section that repeats a setting given elsewhere (`data.T0` is `T0`, interpolated in
conf/data/*.yaml), which may not differ from it (config/validate.py: check_copies).
"""

from typing import Any

from pydantic import Field

SETTING = "setting"
COPY_OF = "copy_of"


def setting(*args: Any, name: str | None = None, **kwargs: Any) -> Any:
    """A pydantic Field (the same arguments) of a key that identifies a run, under `name` in a
    run's flat settings (default: the key's own name)."""
    return Field(*args, json_schema_extra={SETTING: name}, **kwargs)


def copy_of(source: str) -> Any:
    """A pydantic Field of a key that repeats the key at `source` (a dotted path of the config)."""
    return Field(json_schema_extra={COPY_OF: source})
