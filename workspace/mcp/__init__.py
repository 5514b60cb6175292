"""MCP: connect robots to MCP servers, and serve the workspace's own tools over MCP.

* :mod:`workspace.mcp.config` — the ``mcpServers`` mapping (Claude Desktop / Cursor / Cline
  format), time units; ``${VAR}`` interpolation in :mod:`workspace.mcp.variables`, secrets masked
  and registered in :mod:`workspace.mcp.masking`.
* :mod:`workspace.mcp.manager` — :class:`MCPManager`: tools for robots, prompts, resources; the
  servers' lifecycle in :mod:`workspace.mcp.lifecycle`, tool names and switches in
  :mod:`workspace.mcp.catalogue`.
* :mod:`workspace.mcp.status` — :class:`ServerStatus` snapshots and their listeners.
* :mod:`workspace.mcp.client` — one connection on the official SDK and the client's requests; the
  actor task that owns it in :mod:`workspace.mcp.actor`, its transports in :mod:`workspace.mcp.transport`.
* :mod:`workspace.mcp.importers` — reading other clients' files (``robotlab mcp import``).
* :mod:`workspace.mcp.server` — ``robotlab mcp serve``.

This package is the only place that imports the ``mcp`` SDK, and only in the connection's modules
(``actor``, ``transport``, ``client``, ``callbacks``, ``oauth``) and ``server``: importing
``workspace.mcp`` (or the manager) costs no SDK import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace.mcp.manager import MCPManager

_EXPORTS = {
    "MCPManager": "workspace.mcp.manager",
    "ServerStatus": "workspace.mcp.status",
    "ServerState": "workspace.mcp.status",
    "ToolInfo": "workspace.mcp.status",
    "ServerSpec": "workspace.mcp.config",
    "parse_servers": "workspace.mcp.config",
    "load_servers_file": "workspace.mcp.config",
    "tool_name": "workspace.mcp.naming",
}

__all__ = [*sorted(_EXPORTS), "default_manager", "prompt_template", "set_default_manager"]

_default: MCPManager | None = None


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workspace.mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def default_manager() -> MCPManager:
    """The process-wide manager (created on first use, with no servers until configured:
    :meth:`MCPManager.tools_for` takes the servers from the config it is given)."""
    global _default
    if _default is None:
        from workspace.mcp.manager import MCPManager

        _default = MCPManager()
    return _default


def set_default_manager(manager: MCPManager | None) -> MCPManager | None:
    """Replace the process-wide manager (tests, the desktop); returns the previous one."""
    global _default
    previous, _default = _default, manager
    return previous


async def prompt_template(
    server: str, prompt: str, arguments: dict[str, Any] | None = None, *, config: Any = None,
    manager: MCPManager | None = None,
) -> Any:
    """An MCP prompt as a :class:`~workspace.templates.Template` (``Robot(name, template=...)``)."""
    mgr = manager or default_manager()
    if config is not None:
        mgr.configure(config)
    return await mgr.prompt_template(server, prompt, arguments)
