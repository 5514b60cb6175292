"""``StateProxy``: a dict-like view of memory data that reports each change."""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from workspace.memory.change import _differs, _key


class StateProxy:
    """A dict wrapper with attribute access, used for ``memory.data``.

    ``proxy["name"]`` and ``proxy.name`` read (a missing item is ``None``; a missing attribute
    raises ``AttributeError``); ``proxy.name = v`` and ``proxy["name"] = v`` write and call
    ``on_change(key, old, new)`` when the value really changed. Keys are strings.
    """

    __slots__ = ("_data", "_on_change")

    def __init__(
        self,
        data: Mapping[Any, Any] | StateProxy | None = None,
        on_change: Callable[[str, Any, Any], Any] | None = None,
    ) -> None:
        source = data.to_dict() if isinstance(data, StateProxy) else (data or {})
        object.__setattr__(self, "_data", {_key(k): v for k, v in source.items()})
        object.__setattr__(self, "_on_change", on_change)

    # -- item access ------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        return self._data.get(_key(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: Any) -> None:
        self.delete(key)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._data.get(_key(key), default)

    def set(self, key: Any, value: Any) -> Any:
        """Store ``value``; calls ``on_change`` when it differs from the old value. Returns ``value``."""
        k = _key(key)
        old = self._data.get(k)
        self._data[k] = value
        if self._on_change is not None and _differs(old, value):
            self._on_change(k, old, value)
        return value

    def has(self, key: Any) -> bool:
        """True when ``key`` is present."""
        return _key(key) in self._data

    def __contains__(self, key: object) -> bool:
        return _key(key) in self._data

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return list(self._data)

    def values(self) -> list[Any]:
        """The values, in key order."""
        return list(self._data.values())

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs."""
        return list(self._data.items())

    each = items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    @property
    def size(self) -> int:
        """The number of keys."""
        return len(self._data)

    @property
    def is_empty(self) -> bool:
        """True when there are no keys."""
        return not self._data

    def delete(self, key: Any) -> Any:
        """Remove ``key``; its value, or ``None`` when it was missing."""
        return self._data.pop(_key(key), None)

    def merge(self, other: Mapping[Any, Any] | StateProxy | None = None, **kwargs: Any) -> StateProxy:
        """Set every pair (``on_change`` per changed key). Returns self."""
        pairs = other.items() if isinstance(other, StateProxy) else (other or {}).items()
        for k, v in pairs:
            self.set(k, v)
        for k, v in kwargs.items():
            self.set(k, v)
        return self

    update = merge

    def to_dict(self) -> dict[str, Any]:
        """A shallow copy of the data."""
        return dict(self._data)

    to_hash = to_dict

    def dup(self) -> StateProxy:
        """A deep copy, keeping ``on_change``."""
        return StateProxy(_copy.deepcopy(self._data), on_change=self._on_change)

    copy = dup

    def __copy__(self) -> StateProxy:
        return StateProxy(dict(self._data), on_change=self._on_change)

    def __deepcopy__(self, memo: dict[int, Any]) -> StateProxy:
        return StateProxy(_copy.deepcopy(self._data, memo), on_change=self._on_change)

    # -- attribute access -------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in StateProxy.__slots__:
            raise AttributeError(name)
        data = object.__getattribute__(self, "_data")
        if name in data:
            return data[name]
        raise AttributeError(f"'StateProxy' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in StateProxy.__slots__:
            object.__setattr__(self, name, value)
        else:
            self.set(name, value)

    def __delattr__(self, name: str) -> None:
        if name not in self._data:
            raise AttributeError(name)
        self.delete(name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {k for k in self._data if k.isidentifier()})

    # -- value semantics --------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StateProxy):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<RobotLab::StateProxy {self._data!r}>"
