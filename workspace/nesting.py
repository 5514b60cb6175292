"""How deep tool-call arguments and tool results may nest.

A model (or an MCP server, or a tool) can send ``[[[[…]]]]`` a hundred thousand levels deep: a few
hundred kilobytes that end in a ``RecursionError`` wherever Python walks them recursively
(``json.loads`` and ``json.dumps``, jsonschema, ``copy.deepcopy``), which would end the run. The agent
loop refuses arguments nested deeper than :data:`MAX_NESTING` (the tool's invalid-arguments error, see
``workspace.agent.turn``), and :meth:`workspace.tools.base.Tool.invoke` cuts a result at that depth
(:func:`cut_deep`, with a note). Nothing here recurses past the limit.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_NESTING", "cut_deep", "too_deep"]

#: How many levels of lists and objects arguments and results may nest.
MAX_NESTING = 100
#: What nests.
_NESTED = (dict, list, tuple)


def too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists, tuples and dicts in ``value`` nest more than ``limit`` levels (no recursion)."""
    # The usual value first (a tool call's arguments, a result's data): no list or dict at all, or one holding none,
    # told with no stack and no generator.
    if isinstance(value, dict):
        flat: Any = value.values()
    elif isinstance(value, list | tuple):
        flat = value
    else:
        return False
    for child in flat:
        if isinstance(child, _NESTED):
            break
    else:
        return limit < 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return False


def cut_deep(value: Any, limit: int = MAX_NESTING) -> Any:
    """``value`` with every list or dict deeper than ``limit`` levels replaced by a short text saying so."""
    note = f"(cut: nested deeper than {limit} levels)"

    def cut(item: Any, room: int) -> Any:
        if not isinstance(item, dict | list | tuple):
            return item
        if room <= 0:
            return note
        if isinstance(item, dict):
            return {key: cut(child, room - 1) for key, child in item.items()}
        return [cut(child, room - 1) for child in item]

    return cut(value, limit)
