"""Too many tools: when the tools' schemas would take more than a share of the model's context window, the
run offers a small ``search_tools`` tool instead, and each tool it finds from then on.

A 26-tool MCP server's schemas can fill most of an 8k local model's window before the first message; the
run then failed with "does not fit the context window". :func:`narrow` keeps the run going: the model
is offered ``search_tools(query)`` alone; a search adds the tools that match (by name and description) to
the tools offered for the rest of the run, as long as they stay within the share, and says which ones.
The share is ``Robot(tool_share=)`` (a fraction of the window, default :data:`DEFAULT_SHARE`; 1.0 turns
this off); the window is the one :mod:`workspace.context` knows (none known: nothing changes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from workspace.agent_skills import lexical_similarity
from workspace.tools.base import Tool
from workspace.tools.manifest import ToolManifest

#: The share of the context window the tools' schemas may take before the run searches instead.
DEFAULT_SHARE = 0.25
SEARCH_TOOL = "search_tools"
#: The most tools one search adds.
SEARCH_LIMIT = 5


def check_share(value: Any, *, robot: str) -> float:
    """``value`` as a share of the window (0 < share <= 1), else a ValueError naming the fix."""
    if value is None:
        return DEFAULT_SHARE
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"Robot '{robot}': tool_share must be a fraction of the context window above 0 and at "
                         f"most 1, e.g. 0.25 (got {value!r}); 1 offers every tool whatever its size")
    return float(value)


def _words(tool: Tool) -> str:
    return f"{tool.name.replace('_', ' ').replace('-', ' ')} {tool.name} {tool.description or ''}"


def rank(query: str, tools: Iterable[Tool]) -> list[Tool]:
    """The tools matching ``query`` best first: a tool named in it first, then by the similarity of its name
    and description; tools sharing no word are left out."""
    low = query.lower()
    scored = []
    for tool in tools:
        score = lexical_similarity(query, _words(tool)) + (1.0 if tool.name.lower() in low else 0.0)
        if score > 0:
            scored.append((score, tool))
    scored.sort(key=lambda pair: -pair[0])
    return [tool for _score, tool in scored]


def narrow(manifest: ToolManifest, *, window: int, share: float,
           cost: Callable[[list[Tool]], int]) -> ToolManifest | None:
    """A manifest of ``search_tools`` alone when ``manifest``'s schemas (``cost``: their tokens) take more than
    ``share`` of ``window`` tokens; None when they fit (nothing changes). The search adds the tools it finds
    to the returned manifest (which the run offers at each model turn)."""
    tools = list(manifest)
    budget = int(window * share)
    if share >= 1 or not tools or cost(tools) <= budget:
        return None
    hidden = {tool.name: tool for tool in tools}
    offered = ToolManifest()

    def search(arguments: dict[str, Any]) -> str:
        query = str(arguments.get("query") or "").strip()
        if not query:
            return "Say what the tool should do, e.g. search_tools(query=\"read a file\")."
        found = [tool for tool in rank(query, hidden.values()) if tool.name not in offered][:SEARCH_LIMIT]
        if not found:
            names = ", ".join(sorted(hidden))
            return f"No tool matches '{query}'. The tools there are: {names}. Search again with other words."
        added, no_room = [], []
        for tool in found:
            if cost([*offered, tool]) <= budget:
                offered.add(tool)
                added.append(tool)
            else:
                no_room.append(tool.name)
        lines = [f"- {tool.name}: {(tool.description or '').strip().splitlines()[0] if tool.description else ''}"
                 for tool in added]
        text = ("You can call these tools now:\n" + "\n".join(lines)) if added else "No tool was added."
        if no_room:
            text += (f"\nNot added, for lack of room in the context window: {', '.join(no_room)} (search for one "
                     "of them alone).")
        return text

    offered.add(Tool(SEARCH_TOOL, (
        f"Find the tools you need: there are {len(tools)} tools, too many to describe here. Describe what you "
        "want to do; the tools that match become available to call."), {
        "type": "object", "properties": {"query": {"type": "string", "description": "What the tool should do, "
                                                   "or its name"}},
        "required": ["query"]}, search))
    return offered


__all__ = ["DEFAULT_SHARE", "SEARCH_TOOL", "check_share", "narrow", "rank"]
