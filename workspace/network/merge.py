"""RobotLab's deep merge of task context over run parameters (a leaf: the model and the scheduler
both use it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["deep_merge"]


def deep_merge(base: Mapping[Any, Any] | None, override: Mapping[Any, Any] | None) -> dict[str, Any]:
    """``override`` over ``base``: nested dicts merged recursively, everything else (lists too)
    replaced; keys become strings (RobotLab's Task#deep_merge)."""
    out: dict[str, Any] = {str(k): _str_keys(v) for k, v in (base or {}).items()}
    for key, value in (override or {}).items():
        k = str(key)
        current = out.get(k)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[k] = deep_merge(current, value)
        else:
            out[k] = _str_keys(value)
    return out


def _str_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _str_keys(v) for k, v in value.items()}
    return value
