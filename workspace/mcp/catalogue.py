"""The MCP tools as robots and people see them: their names, their descriptions, and which are on.

* names: ``<server>__<tool>`` (:mod:`workspace.mcp.naming`), unique across the servers a robot uses
  (:func:`assign_names`);
* :class:`~workspace.mcp.status.ToolInfo` of each tool a server listed (:func:`tool_infos`), with the
  server's hints (``readOnlyHint``, ``destructiveHint``, ...) and whether it is in the server's
  ``autoApprove`` list;
* per-tool on/off (:class:`ToolSwitches`): switched by people (persisted in ``mcp-tools.json`` next
  to the user config file, or for this process only), plus the server's ``disabledTools`` list.

Nothing here starts a server: :class:`~workspace.mcp.manager.MCPManager` gives it the tools its
connections listed.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from workspace.mcp import naming
from workspace.mcp.config import ServerSpec
from workspace.mcp.status import ToolInfo

log = logging.getLogger("workspace.mcp")

STATE_FILE_NAME = "mcp-tools.json"
#: The most tools of one server offered to robots and shown: a server listing more keeps its first
#: ``MAX_TOOLS`` (in the order it listed them) and its status says how many were left out
#: (:func:`too_many_tools`). Naming, the status and every run's tool list cost time per tool.
MAX_TOOLS = 1_000


def too_many_tools(server: str, listed: int, *, more: bool = False) -> str:
    """What a server's status says when it listed more than :data:`MAX_TOOLS` tools (``more``: it had further
    pages, not read)."""
    count = f"more than {listed:,}" if more else f"{listed:,}"
    return (f"MCP server '{server}' lists {count} tools; only its first {MAX_TOOLS:,} are offered (the most per "
            f"server), the other {'ones' if more else f'{listed - MAX_TOOLS:,}'} are left out. Start it with fewer "
            "tools (many servers have an option choosing their toolsets), or split it into several servers")


class ToolSwitches:
    """Tools switched on or off by people: in ``mcp-tools.json`` (``{"disabledTools": {server: [tool, ...]}}``),
    read again when the file changes, or for this process only."""

    def __init__(self, state_file: Path | None = None) -> None:
        self._state_file = state_file
        self._cache: tuple[Path, float, dict[str, list[str]]] | None = None
        self._overrides: dict[tuple[str, str], bool] = {}

    def path(self) -> Path:
        if self._state_file is not None:
            return self._state_file
        from workspace import paths

        return paths.config_dir() / STATE_FILE_NAME

    def disabled(self) -> dict[str, list[str]]:
        """``{server: [the server's names of the tools switched off]}`` as saved."""
        path = self.path()
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return {}
        cached = self._cache
        if cached is not None and cached[0] == path and cached[1] == mtime:
            return cached[2]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            table = data.get("disabledTools", {}) if isinstance(data, dict) else {}
            result = {str(k): [str(t) for t in v] for k, v in table.items() if isinstance(v, list)}
        except (OSError, ValueError) as exc:
            log.warning("MCP: ignoring %s: %s", path, exc)
            result = {}
        self._cache = (path, mtime, result)
        return result

    def enabled(self, server: str, original: str, disabled_tools: Iterable[str] = ()) -> bool:
        """False when switched off (for this process, or saved) or matched by the server's ``disabledTools``."""
        override = self._overrides.get((server, original))
        if override is not None:
            return override
        if original in self.disabled().get(server, ()):
            return False
        return not matches(original, disabled_tools, server)

    def set(self, server: str, original: str, enabled: bool, *, persist: bool) -> None:
        """Switch the server's tool ``original`` on or off: saved when ``persist``, else for this process only."""
        if not persist:
            self._overrides[(server, original)] = enabled
            return
        self._overrides.pop((server, original), None)
        table = {k: list(v) for k, v in self.disabled().items()}
        names = [t for t in table.get(server, []) if t != original]
        if not enabled:
            names.append(original)
        if names:
            table[server] = sorted(set(names))
        else:
            table.pop(server, None)
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"disabledTools": table}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        self._cache = None


def tool_names(server: str, originals: Iterable[str]) -> dict[str, str]:
    """``{the server's tool name: <server>__<tool>}``, unique within the server."""
    names: dict[str, str] = {}
    taken: set[str] = set()  # one set that grows: naming N tools is linear (it was N copies of the names)
    originals = list(originals)
    exact = [o for o in originals if naming.sanitize(o) == o]
    rest = [o for o in originals if naming.sanitize(o) != o]
    for original in exact + rest:
        name = names[original] = naming.tool_name(server, original, taken=taken)
        taken.add(name)
    return names


def tool_infos(spec: ServerSpec, tools: Iterable[Any], enabled: Callable[[str], bool]) -> list[ToolInfo]:
    """What people and robots see of the tools a server listed (``enabled(original)`` says which are on)."""
    tools = list(tools)
    names = tool_names(spec.name, (t.name for t in tools))
    infos = []
    for t in tools:
        hints = tool_annotations(t)
        infos.append(ToolInfo(
            name=names[t.name], original=t.name, description=t.description or "",
            title=t.title or hints.get("title"),
            enabled=enabled(t.name),
            auto_approve=matches(t.name, spec.auto_approve, spec.name),
            annotations={k: v for k, v in hints.items() if k != "title"},
            parameters=dict(t.input_schema or {}),
        ))
    return infos


def assign_names(pending: list[tuple[ServerSpec, ToolInfo]]) -> dict[int, str]:
    """The model-facing name of each ``pending[i]`` tool, unique across servers (see
    :meth:`workspace.mcp.manager.MCPManager.tools_for`)."""
    # Exact names first, so a sanitised look-alike never takes an exact name's place.
    ordered = sorted(range(len(pending)), key=lambda i: pending[i][1].name != f"{pending[i][0].name}__"
                     f"{pending[i][1].original}")
    taken: set[str] = set()
    chosen: dict[int, str] = {}
    for i in ordered:
        spec, info = pending[i]
        name = info.name if info.name not in taken else naming.tool_name(spec.name, info.original, taken=taken)
        taken.add(name)
        chosen[i] = name
    return chosen


def tool_annotations(tool: Any) -> dict[str, Any]:
    ann = getattr(tool, "annotations", None)
    if ann is None:
        return {}
    dumped: dict[str, Any] = ann.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def matches(original: str, patterns: Iterable[str], server: str) -> bool:
    prefixed = f"{naming.server_prefix(server)}{naming.sanitize(original)}"
    for pattern in patterns:
        if pattern in ("*", original, prefixed) or fnmatch.fnmatchcase(original, pattern) or \
                fnmatch.fnmatchcase(prefixed, pattern):
            return True
    return False
