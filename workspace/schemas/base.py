"""The base of every model for a file people write: unknown keys are errors."""

from __future__ import annotations

from typing import Any

from workspace.shared_imports import settle_shared_imports

settle_shared_imports()  # waits while a warm-up thread imports pydantic: never two half-imports at once

from pydantic import BaseModel, ConfigDict, ValidationError, ValidatorFunctionWrapHandler, WrapValidator  # noqa: E402
from pydantic_core import PydanticCustomError  # noqa: E402

__all__ = ["StrictModel", "one_error"]


class StrictModel(BaseModel):
    """A pydantic model that refuses unknown keys (reported with a did-you-mean by
    :func:`workspace.schemas.validate`) and accepts fields by name or alias.

    A model may give fields a ``hints`` class variable (``{"temperature": "must be a number from 0
    to 2"}``): the message of any bad value of that field then says the hint, in words a person
    reading the file understands, instead of pydantic's wording."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def one_error(message: str) -> WrapValidator:
    """For ``Annotated[A | B | None, one_error("must be ...")]``: one error with ``message`` for a bad
    value instead of one per member of the union (whose locations name pydantic's internal tags)."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError("invalid_value", message) from None

    return WrapValidator(check)
