"""Trying a server entry before (or after) it is saved: the Settings page's "Test" button.

:func:`probe` starts the server from an ``mcpServers`` entry on a connection of its own (the
manager's servers are not touched), lists its tools, resources, resource templates and prompts,
and stops it. A failure comes back in :attr:`ProbeReport.error` with the server's last stderr
lines, never as an exception.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workspace.errors import ConfigurationError, MCPError


@dataclass
class ProbeReport:
    name: str
    ok: bool = False
    error: str | None = None
    server_info: str | None = None
    tools: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """A few lines for people."""
        if not self.ok:
            text = f"{self.name}: could not connect: {self.error}"
            if self.stderr:
                text += "\n\nServer output (stderr):\n" + "\n".join(self.stderr[-20:])
            return text
        lines = [f"{self.name}: connected in {self.seconds:.2f} s" + (f" ({self.server_info})" if self.server_info
                                                                        else "")]
        for label, items in (("tools", self.tools), ("resources", self.resources),
                             ("resource templates", self.templates), ("prompts", self.prompts)):
            shown = ", ".join(items[:12]) + (f", … ({len(items) - 12} more)" if len(items) > 12 else "")
            lines.append(f"{len(items)} {label}" + (f": {shown}" if items else ""))
        return "\n".join(lines)


async def probe(name: str, entry: Mapping[str, Any], *, environ: Mapping[str, str] | None = None,
                timeout: float | None = None) -> ProbeReport:
    """Connect to the server ``entry`` describes, list what it offers, disconnect (see the module)."""
    from workspace.mcp.client import Connection
    from workspace.mcp.config import parse_server

    report = ProbeReport(name=name)
    try:
        spec = parse_server(name or "server", entry, source="the Settings page", environ=environ)
    except ConfigurationError as exc:
        report.error = str(exc)
        return report
    if timeout is not None:
        import dataclasses

        spec = dataclasses.replace(spec, connect_timeout=timeout)
    conn = Connection(spec)
    started = time.monotonic()
    try:
        await conn.ensure_ready(retry=True)
        report.seconds = time.monotonic() - started
        report.server_info = conn.server_info
        report.tools = [t.name for t in conn.tools]
        report.resources = [str(r.uri) for r in await conn.list_resources()]
        report.templates = [str(t.uri_template) for t in await conn.list_resource_templates()]
        report.prompts = [p.name for p in await conn.list_prompts()]
        report.ok = True
    except (MCPError, ConfigurationError) as exc:
        report.error = str(exc)
    finally:
        report.stderr = [line for line in conn.stderr_tail(200) if not line.startswith("[robotlab]")]
        await conn.stop()
    return report
