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


class WindowedManifest(ToolManifest):
    """The tools of a run, kept within ``budget`` tokens of schemas (``cost``: the tokens of some tools).

    While they fit, it is a plain manifest. Once they do not (at the start, or when an MCP server's tools
    join later), the model is offered ``search_tools`` alone, and each tool a search finds
    (:meth:`offer`); tools joining afterwards wait to be found. A hidden tool the model calls by name is
    offered then too (it may know the name from an earlier turn)."""

    def __init__(self, tools: Iterable[Tool], *, budget: int, cost: Callable[[list[Tool]], int]) -> None:
        super().__init__()
        self.budget = budget
        self._cost = cost
        #: The tools not offered, by name (empty while everything fits).
        self.hidden: dict[str, Tool] = {}
        self.searching = False
        for tool in tools:
            super().add(tool)
        self._check()

    def add(self, tool: Tool) -> WindowedManifest:
        if self.searching:
            self.hidden[tool.name] = tool
            return self
        super().add(tool)
        self._check()
        return self

    def get(self, name: str) -> Tool | None:
        tool = super().get(name)
        if tool is None and name in self.hidden:
            tool = self.hidden[name]
            self.offer(tool)
        return tool

    def offer(self, tool: Tool) -> bool:
        """Offer a hidden tool from now on, if it fits; True when it does."""
        if tool.name in self:
            return True
        if self._cost([*self, tool]) > self.budget:
            return False
        super().add(tool)
        return True

    def _check(self) -> None:
        tools = list(self)
        if self.searching or not tools or self._cost(tools) <= self.budget:
            return
        self.searching = True
        self.hidden = {tool.name: tool for tool in tools}
        self.clear()
        super().add(Tool(SEARCH_TOOL, (
            "Find the tools you need: there are too many tools to describe here. Describe what you want to do; "
            "the tools that match become available to call."), {
            "type": "object", "properties": {"query": {"type": "string", "description": "What the tool should do, "
                                                       "or its name"}},
            "required": ["query"]}, self._search))

    def _search(self, arguments: dict[str, Any]) -> str:
        query = str(arguments.get("query") or "").strip()
        if not query:
            return "Say what the tool should do, e.g. search_tools(query=\"read a file\")."
        found = [tool for tool in rank(query, self.hidden.values()) if tool.name not in self][:SEARCH_LIMIT]
        if not found:
            names = ", ".join(sorted(self.hidden))
            return f"No tool matches '{query}'. The tools there are: {names}. Search again with other words."
        added = [tool for tool in found if self.offer(tool)]
        no_room = [tool.name for tool in found if tool not in added]
        lines = [f"- {tool.name}: {(tool.description or '').strip().splitlines()[0] if tool.description else ''}"
                 for tool in added]
        text = ("You can call these tools now:\n" + "\n".join(lines)) if added else "No tool was added."
        if no_room:
            text += (f"\nNot added, for lack of room in the context window: {', '.join(no_room)} (search for one "
                     "of them alone).")
        return text


def narrow(manifest: ToolManifest, *, window: int, share: float,
           cost: Callable[[list[Tool]], int]) -> WindowedManifest | None:
    """``manifest``'s tools as a :class:`WindowedManifest` within ``share`` of ``window`` tokens (None when
    ``share`` is 1: every tool is offered whatever its size)."""
    if share >= 1:
        return None
    return WindowedManifest(list(manifest), budget=int(window * share), cost=cost)


__all__ = ["DEFAULT_SHARE", "SEARCH_TOOL", "WindowedManifest", "check_share", "narrow", "rank"]
