"""Named built-in tools robots can list by name (``tools: [read_file, list_files]``).

Built-ins register through the same path as anyone's tools: :func:`register`.
The file tools of :mod:`workspace.tools.files` are loaded on first lookup.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable
from typing import Any

from workspace.tools.base import Tool


class _Tools(dict[str, Tool]):
    """The registered tools by name, counting their changes (:func:`version`): whoever changes them, the
    registry's own :func:`register` or a test setting an item."""

    changes = 0

    def __setitem__(self, name: str, tool: Tool) -> None:
        self.changes += 1
        super().__setitem__(name, tool)

    def __delitem__(self, name: str) -> None:
        self.changes += 1
        super().__delitem__(name)

    def pop(self, *args: Any) -> Any:
        self.changes += 1
        return super().pop(*args)

    def popitem(self) -> tuple[str, Tool]:
        self.changes += 1
        return super().popitem()

    def clear(self) -> None:
        self.changes += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.changes += 1
        super().update(*args, **kwargs)

    def setdefault(self, name: str, default: Tool) -> Tool:
        self.changes += 1
        return super().setdefault(name, default)


_TOOLS = _Tools()
_LOADED = False
_LOAD_LOCK = threading.RLock()
#: Modules whose import registers built-in tools.
BUILTIN_MODULES = ["workspace.tools.files", "workspace.tools.memory_tools", "workspace.tools.commands"]


def register(tool: Tool) -> Tool:
    _TOOLS[tool.name] = tool
    return tool


def _load() -> None:
    """Import the built-in tool modules once. Loaded only when done: a lookup while another thread imports
    them (the window warms them up in a worker thread) waits for it, never sees an empty registry."""
    global _LOADED
    if _LOADED:
        return
    with _LOAD_LOCK:
        if _LOADED:
            return
        for module in BUILTIN_MODULES:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name != module:
                    raise
        _LOADED = True


def version() -> int:
    """A number that changes whenever a tool is registered, replaced or removed (what a robot's resolved
    tools are kept against: :func:`workspace.robot_tools.resolve_tools`); the built-in tools loaded first."""
    _load()
    return _TOOLS.changes


def get(name: str) -> Tool | None:
    _load()
    return _TOOLS.get(name)


def builtin_tools() -> list[Tool]:
    _load()
    return list(_TOOLS.values())


def lookup(names: Iterable[str]) -> list[Tool]:
    """The registered tools among ``names`` (patterns allowed), in registry order."""
    from workspace.tools.selection import filter_tools

    return filter_tools(builtin_tools(), list(names))
