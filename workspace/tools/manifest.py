"""``ToolManifest``: an ordered, name-keyed registry of tools (spec 1.4)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from workspace.errors import ToolNotFoundError
from workspace.tools.base import Tool


class ToolManifest:
    """Ordered registry of :class:`Tool` keyed by name; adding a same-named tool replaces it."""

    def __init__(self, tools: Tool | Iterable[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        if tools is not None:
            self.merge(tools)

    def add(self, tool: Tool) -> ToolManifest:
        self._tools[tool.name] = tool
        return self

    __lshift__ = add

    def remove(self, name: str) -> Tool | None:
        return self._tools.pop(str(name), None)

    def __getitem__(self, name: str) -> Tool | None:
        return self._tools.get(str(name))

    def get(self, name: str) -> Tool | None:
        return self._tools.get(str(name))

    def fetch(self, name: str) -> Tool:
        tool = self._tools.get(str(name))
        if tool is None:
            available = ", ".join(self._tools) or "(none)"
            raise ToolNotFoundError(f"Tool not found: {name}. Available tools: {available}")
        return tool

    def __contains__(self, name: object) -> bool:
        return str(name) in self._tools

    def has(self, name: str) -> bool:
        return str(name) in self._tools

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def values(self) -> list[Tool]:
        return list(self._tools.values())

    all = values
    to_list = values

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def size(self) -> int:
        return len(self._tools)

    @property
    def is_empty(self) -> bool:
        return not self._tools

    def clear(self) -> ToolManifest:
        self._tools.clear()
        return self

    def replace(self, tools: Tool | Iterable[Tool] | None) -> ToolManifest:
        self._tools.clear()
        if tools is not None:
            self.merge(tools)
        return self

    def merge(self, other: ToolManifest | Tool | Iterable[Tool]) -> ToolManifest:
        if isinstance(other, Tool):
            self.add(other)
        else:
            for tool in other:
                self.add(tool)
        return self

    def to_json_schema(self) -> dict[str, Any]:
        return {name: tool.to_json_schema() for name, tool in self._tools.items()}

    def to_dict(self) -> dict[str, Any]:
        return {name: tool.to_dict() for name, tool in self._tools.items()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]]) -> ToolManifest:
        """``{name: {description, parameters, handler}}`` -> manifest."""
        manifest = cls()
        for name, spec in data.items():
            handler: Callable[..., Any] | None = spec.get("handler")
            manifest.add(Tool(name, spec.get("description"), spec.get("parameters"), handler))
        return manifest

    def __repr__(self) -> str:
        return f"<ToolManifest {self.names}>"
