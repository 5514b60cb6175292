"""The base of every model for a file people write: unknown keys are errors."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """A pydantic model that refuses unknown keys (reported with a did-you-mean by
    :func:`workspace.schemas.validate`) and accepts fields by name or alias."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
