"""RobotLab's MCP server discovery (``mcp_discovery: true``): the servers a message is about.

``select(message, servers)`` keeps the servers whose ``"name description"`` is like the message: the
cosine of the two texts' stemmed, stop-word-filtered word counts (:func:`workspace.similarity.lexical_similarity`,
RobotLab's TF cosine) at least :data:`THRESHOLD`. It keeps every server when none is alike, when the message is
blank, or when no server has a description (``description:`` of an ``mcpServers`` entry, or of an inline one).
A robot with ``mcp_discovery`` does this on its first run and keeps that choice (:mod:`workspace.robot_tools`).
"""

from __future__ import annotations

from collections.abc import Mapping

#: RobotLab's threshold (``ServerDiscovery.select(..., threshold: 0.05)``).
THRESHOLD = 0.05


def select(message: str, servers: Mapping[str, str | None], *, threshold: float = THRESHOLD) -> list[str]:
    """The names of ``servers`` (name -> description) alike ``message``, in their order (see the module)."""
    names = list(servers)
    if not message.strip() or not any((d or "").strip() for d in servers.values()):
        return names
    from workspace.similarity import lexical_similarity

    chosen = [name for name, description in servers.items()
              if lexical_similarity(message, f"{name} {description or ''}") >= threshold]
    return chosen or names
