"""A memory change (who wrote which key, when, from what to what) and the value helpers it uses."""

from __future__ import annotations

import copy as _copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from workspace.messages import format_time, parse_time


def _key(key: Any) -> str:
    return key if isinstance(key, str) else str(key)


def _deep_copy(value: Any) -> Any:
    try:
        return _copy.deepcopy(value)
    except Exception:
        return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


# --------------------------------------------------------------------------------------------
# MemoryChange


@dataclass(frozen=True)
class MemoryChange:
    """One write to a memory key: new and previous value, who wrote it, where and when."""

    key: str
    value: Any
    previous: Any = None
    writer: str | None = None
    network_name: str | None = None
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    correlation_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", _key(self.key))
        stamp: Any = self.timestamp
        object.__setattr__(self, "timestamp", datetime.now(UTC) if stamp is None else parse_time(stamp))

    @property
    def is_created(self) -> bool:
        """No previous value, and a value now."""
        return self.previous is None and self.value is not None

    @property
    def is_updated(self) -> bool:
        """A previous value replaced by a value."""
        return self.previous is not None and self.value is not None

    @property
    def is_deleted(self) -> bool:
        """A previous value, and none now."""
        return self.value is None and self.previous is not None

    def to_dict(self) -> dict[str, Any]:
        """``{key, value, previous, writer, network_name, timestamp, correlation_id}`` without ``None``s."""
        out = {
            "key": self.key,
            "value": self.value,
            "previous": self.previous,
            "writer": self.writer,
            "network_name": self.network_name,
            "timestamp": format_time(self.timestamp),
            "correlation_id": self.correlation_id,
        }
        return {k: v for k, v in out.items() if v is not None}

    def to_json(self) -> str:
        """JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=_json_default)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryChange:
        """Rebuild from :meth:`to_dict`."""
        d = {str(k): v for k, v in data.items()}
        return cls(
            key=d.get("key", ""),
            value=d.get("value"),
            previous=d.get("previous"),
            writer=d.get("writer"),
            network_name=d.get("network_name"),
            timestamp=d.get("timestamp"),  # type: ignore[arg-type]  # None -> now, str parsed
            correlation_id=d.get("correlation_id"),
        )


# --------------------------------------------------------------------------------------------
# Waiter



def _differs(old: Any, new: Any) -> bool:
    try:
        return bool(old != new)
    except Exception:
        return old is not new


# --------------------------------------------------------------------------------------------
# Memory
