"""Built-in tools that let a robot write and read its (or its network's) shared memory."""

from __future__ import annotations

from typing import Any

from workspace.tools.base import ToolContext
from workspace.tools.decorator import tool
from workspace.tools.registry import register


def _memory(context: ToolContext | None) -> Any:
    if context is None or context.memory is None:
        raise RuntimeError("This run has no memory to use")
    return context.memory


@tool(read_only=False, destructive=False)
def remember(key: str, value: Any, context: ToolContext | None = None) -> dict[str, Any]:
    """Store a value in the shared memory, for other robots and later turns.

    Args:
        key: e.g. "analysis:summary"
        value: any JSON value
    """
    memory = _memory(context)
    memory.set(key, value)
    if getattr(memory, "reviewing", 0):  # review.memory: ask (workspace.memory_review)
        return {"key": key, "stored": True, "review": "kept for this run; when it ends the person reviews it, and "
                "later runs see it only if they accept it"}
    return {"key": key, "stored": True}


@tool(read_only=True)
def recall(key: str, context: ToolContext | None = None) -> dict[str, Any]:
    """Read a value from the shared memory ("found": false if never set).

    Args:
        key: the memory key
    """
    memory = _memory(context)
    present = memory.has(key)
    return {"key": key, "found": bool(present and memory.get(key) is not None), "value": memory.get(key)}


register(remember)
register(recall)
