"""Named built-in tools robots can list by name (``tools: [read_file, list_files]``).

Built-ins register through the same path as anyone's tools: :func:`register`.
The file tools of :mod:`workspace.tools.files` are loaded on first lookup.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable

from workspace.tools.base import Tool

_TOOLS: dict[str, Tool] = {}
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
