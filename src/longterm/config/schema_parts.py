"""The parts the config's sections share (config/schema.py, config/launcher_schema.py): a closed
section, and a count that may be `auto`."""

from typing import Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from longterm.choices import AUTO


def count_or_auto(minimum: int) -> AfterValidator:
    """A key that takes an integer >= minimum or `auto` (resolved when the run starts)."""

    def check(value: Any) -> Any:
        if value == AUTO or (type(value) is int and value >= minimum):
            return value
        raise PydanticCustomError("count", f"Input should be an integer >= {minimum} or 'auto'")

    return AfterValidator(check)


class Section(BaseModel):
    """A section whose every key the schema lists: a key added with `+` is refused."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    target: str | None = Field(default=None, alias="_target_")
