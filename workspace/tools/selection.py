"""Which tools and MCP servers a run may use: RobotLab's level hierarchy.

Levels, parent first: global configuration -> network -> robot -> run. Each level
holds one of:

* ``"inherit"`` — use the parent level's resolved value;
* ``"none"`` (or ``None``) — nothing;
* ``"all"`` — every tool the robot holds (its own tools and the tools of its MCP
  servers); for MCP, every server in the configuration. Said by the robot itself
  (``tools: all`` in its file), it also means every built-in tool (which otherwise
  are used by naming them); as at every level, it overrides the levels above;
* a list of names — exactly those.

**The empty list means nothing**, exactly like ``"none"``: ``tools: []`` never
silently widens to every tool (RobotLab v0.0.1's Robot did; its ToolConfig did not —
we pick the safe reading). To allow every tool, say ``"all"`` or inherit it.
The global default is ``"all"``; robot, network and run levels default to ``"inherit"``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeVar

INHERIT: Literal["inherit"] = "inherit"
NONE: Literal["none"] = "none"
ALL: Literal["all"] = "all"

Level = Literal["inherit", "none", "all"] | Sequence[Any] | None
Resolved = Literal["all"] | list[Any]

T = TypeVar("T")


def is_inherit(value: Any) -> bool:
    return isinstance(value, str) and value == INHERIT


def is_none(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == NONE) or (
        isinstance(value, list | tuple) and len(value) == 0
    )


def is_all(value: Any) -> bool:
    return isinstance(value, str) and value == ALL


def check_level(value: Any, *, what: str = "tools") -> None:
    """Raise ``ValueError`` naming the allowed values for a malformed level."""
    if value is None or is_inherit(value) or is_none(value) or is_all(value):
        return
    if isinstance(value, str):
        raise ValueError(
            f"Invalid {what} value: {value!r}. Must be one of: inherit, none, all, or a list of names"
        )
    if not isinstance(value, list | tuple):
        raise ValueError(
            f"Invalid {what} value of type {type(value).__name__}. "
            "Must be one of: inherit, none, all, or a list of names"
        )


def resolve(value: Any, parent: Any = ALL) -> Resolved:
    """Resolve one level against its parent's resolved value."""
    check_level(value)
    if is_inherit(value):
        if is_inherit(parent):
            return ALL
        return resolve(parent, ALL)
    if is_none(value):
        return []
    if is_all(value):
        return ALL
    return list(value)


def resolve_chain(*levels: Any) -> Resolved:
    """Resolve levels given parent first (``resolve_chain(global, network, robot, run)``)."""
    resolved: Resolved = ALL
    for level in levels:
        resolved = resolve(level, resolved)
    return resolved


def resolve_tools(value: Any, parent: Any = ALL) -> Resolved:
    """Like :func:`resolve`, with names as strings (tools given as objects keep their name)."""
    resolved = resolve(value, parent)
    if resolved == ALL:
        return ALL
    return [getattr(item, "name", item) if not isinstance(item, str) else item for item in resolved]


def filter_tools(tools: Iterable[T], allowed: Resolved) -> list[T]:
    """The tools whose name is allowed; ``"all"`` keeps all, an empty list keeps none.

    Names may be glob patterns (``"github__*"`` allows every tool of that MCP server).
    """
    items = list(tools)
    if allowed == ALL:
        return items
    names = [str(getattr(a, "name", a)) for a in allowed]
    exact = {n for n in names if not any(c in n for c in "*?[")}
    patterns = [n for n in names if n not in exact]
    return [
        t for t in items
        if (name := str(getattr(t, "name", t))) in exact or any(fnmatch.fnmatchcase(name, p) for p in patterns)
    ]
