"""The MCP manager: every configured server, its status, its tools, and the robots' view of them.

One manager per process (:func:`workspace.mcp.default_manager`), used by robots (through
:meth:`MCPManager.tools_for`), the desktop's MCP dock and ``robotlab mcp``::

    manager = default_manager()
    manager.configure(load_config(folder))        # or reload() / start_watching()
    remove = manager.add_listener(print)           # ServerStatus snapshots on every change
    tools = await manager.tools_for(["everything"], config)   # Tool objects: everything__echo, ...
    await manager.restart("everything")
    manager.set_tool_enabled("everything", "get-env", False)  # persisted
    await manager.aclose()

Servers start on first use (a robot that names them, ``start()``, ``tools()``), not when
configured, or earlier with :meth:`MCPManager.start_in_background`. A run does not wait for a
slow server: :meth:`MCPManager.tools_ready` starts its servers concurrently in the background,
waits a few seconds at most (``agent.mcp_startup_wait``) and reports which are ready, still
starting or failed; the tools of a server still starting join the run at its next model turn
once it is up (:mod:`workspace.mcp.startup`). A server that crashed starts again on its next
use; one that failed to start is retried on use after a short pause
(:data:`~workspace.mcp.actor.RETRY_AFTER_FAILED_START`), or at once with :meth:`restart`.

Tool policy hooks:

* names: ``<server>__<tool>`` (:mod:`workspace.mcp.naming`), ``Tool.mcp`` is the server name;
* ``Tool.annotations`` carries the server's hints (``readOnlyHint``, ``destructiveHint``,
  ``idempotentHint``, ``openWorldHint``) and ``autoApprove: True`` when the tool is in the
  server's ``autoApprove``/``alwaysAllow`` list — the approval policy reads it from
  ``ApprovalRequest.annotations``; :meth:`MCPManager.is_auto_approved` answers the same;
  ``trustAnnotations: True`` when the server's entry trusts its annotations (else the policy asks
  whatever they claim), and ``mcpTool``: the server's own name of the tool, which rules may use;
* per-tool on/off: :meth:`set_tool_enabled` (persisted in ``mcp-tools.json`` next to the user
  config file) plus the server's ``disabledTools`` list; disabled tools are never offered.

The servers and their connections' life (configuration, reloads, status, start, stop, sign-in) are
:class:`~workspace.mcp.lifecycle.ServerLifecycle`, which the manager extends; the tools' names,
descriptions and switches are :mod:`workspace.mcp.catalogue`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError, MCPError
from workspace.mcp import naming
from workspace.mcp.catalogue import assign_names, matches, tool_names
from workspace.mcp.config import ServerSpec, inline_spec
from workspace.mcp.lifecycle import ServerLifecycle
from workspace.mcp.status import ToolInfo
from workspace.tools.base import Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.mcp.client import Connection
    from workspace.mcp.resources import ResourceContent
    from workspace.mcp.results import ResourceRead
    from workspace.mcp.startup import ToolsReport
    from workspace.templates import Template

log = logging.getLogger("workspace.mcp")

#: Keys of ``Tool.annotations`` the manager sets itself (never taken from a server).
OWN_ANNOTATIONS = frozenset({"autoApprove", "trustAnnotations", "mcpTool"})


class MCPManager(ServerLifecycle):
    """Owns the connections (one actor task each), their status and the tool views.

    The servers and their connections are :class:`~workspace.mcp.lifecycle.ServerLifecycle`'s; this
    class adds what robots and people use them for: tools (their names, switches, calls), prompts and
    resources. How a run starts its servers lives in :mod:`workspace.mcp.startup`.
    """

    # -- tools -----------------------------------------------------------------------------------
    def is_tool_enabled(self, server: str, tool: str) -> bool:
        """False when switched off with :meth:`set_tool_enabled` or listed in ``disabledTools``."""
        return self._enabled(server, self._original_name(server, tool))

    def set_tool_enabled(self, server: str, tool: str, enabled: bool, *, persist: bool = True) -> None:
        """Switch one tool on or off for every robot; saved in ``mcp-tools.json`` (next to the user
        config file) when ``persist``, else only for this process."""
        original = self._original_name(server, tool)
        self._switches.set(server, original, enabled, persist=persist)
        if self._spec(server) is not None:
            self._publish_name(server)

    def is_auto_approved(self, server: str, tool: str) -> bool:
        """Whether the tool is in the server's ``autoApprove`` / ``alwaysAllow`` list."""
        spec = self._spec(server)
        return spec is not None and matches(self._original_name(server, tool), spec.auto_approve, server)

    def _original_name(self, server: str, tool: str) -> str:
        """The server's own tool name for ``tool`` (which may be the ``server__tool`` name)."""
        conn = self._connections.get(server)
        if conn is not None:
            originals = [t.name for t in conn.tools]
            if tool in originals:
                return tool
            for original, name in tool_names(server, originals).items():
                if name == tool:
                    return original
        prefix = naming.server_prefix(server)
        return tool[len(prefix):] if tool.startswith(prefix) else tool

    def _make_tool(self, spec: ServerSpec, info: ToolInfo, name: str | None = None, *,
                   conn: Connection | None = None) -> Tool:
        annotations = {k: v for k, v in info.annotations.items() if k not in OWN_ANNOTATIONS}
        if info.auto_approve:
            annotations["autoApprove"] = True
        if spec.trust_annotations:
            annotations["trustAnnotations"] = True
        annotations["mcpTool"] = info.original  # the server's own name, which approval rules may use
        server, original = spec.name, info.original
        manager = self
        bound = conn if conn is not None else self._connections.get(server)

        async def call_mcp_tool(arguments: dict[str, Any], context: ToolContext | None = None) -> ToolOutput:
            # The connection the run started with, even when the configuration changed since.
            target = bound if bound is not None and bound.retired else None
            return await manager.call_tool(server, original, arguments, context=context, connection=target)

        description = info.description or info.title or f"The '{original}' tool of the MCP server '{server}'"
        return Tool(
            name or info.name, description, dict(info.parameters) or None, call_mcp_tool, mcp=server,
            annotations=annotations, timeout=spec.timeout + 5.0, title=info.title,
        )

    def session(self, server: str) -> Any:
        """The SDK session of ``server`` while it is up (None: not connected, failed or stopped)."""
        conn = self._connections.get(server)
        return conn.session if conn is not None else None

    async def tools_for(self, refs: list[Any], config: Config | None = None) -> list[Tool]:
        """The enabled tools of the servers ``refs`` names (names from ``mcpServers``, or inline
        mappings ``{name, command|url, ...}``), starting servers as needed, concurrently.

        An unknown name raises :class:`ConfigurationError`; a server that cannot start is left
        out (its status says why, and a warning is logged). Names are unique across servers.
        Waits until every server is up or failed; a run uses :meth:`tools_ready` instead.
        """
        names = self.servers_for(refs, config)
        results = await asyncio.gather(*(self._ready_infos(n) for n in names), return_exceptions=True)
        pending: list[tuple[ServerSpec, ToolInfo]] = []
        for name, outcome in zip(names, results, strict=True):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, MCPError | ConfigurationError):
                    raise outcome
                log.warning("MCP server '%s' left out: %s", name, outcome)
                continue
            spec, infos = outcome
            pending.extend((spec, info) for info in infos if info.enabled)
        return self._tools_of(pending)

    def _tools_of(self, pending: list[tuple[ServerSpec, ToolInfo]]) -> list[Tool]:
        chosen = assign_names(pending)
        return [self._make_tool(spec, info, chosen[i], conn=self._connections.get(spec.name))
                for i, (spec, info) in enumerate(pending)]

    def servers_for(self, refs: list[Any], config: Config | None = None) -> list[str]:
        """The configured (or inline) servers ``refs`` names, in order, disabled ones left out;
        an unknown name raises :class:`ConfigurationError` naming the fix."""
        if config is not None:
            self.configure(config)
        names: list[str] = []
        for index, ref in enumerate(refs):
            if isinstance(ref, ServerSpec):
                self._add_inline(ref)
                name = ref.name
            elif isinstance(ref, Mapping):
                spec = inline_spec(ref, index=index, environ=self._environ)
                self._add_inline(spec)
                name = spec.name
            elif isinstance(ref, str):
                name = ref
                if self._spec(name) is None:
                    raise self._unknown(name)
            else:
                raise ConfigurationError(
                    f"mcp[{index}]: expected the name of a server in mcpServers or a mapping like "
                    f"{{name: x, command: ...}}, got {type(ref).__name__}"
                )
            spec_now = self._spec(name)
            if spec_now is None or spec_now.disabled or name in names:
                continue
            names.append(name)
        return names

    def start_in_background(self, names: Iterable[str] | None = None) -> list[str]:
        """Begin starting servers (every enabled configured one by default) concurrently, without
        waiting; returns those starting or up. Needs a running event loop."""
        started = []
        for name in list(names) if names is not None else [n for n in self._specs if not self._specs[n].disabled]:
            spec = self._spec(name)
            if spec is None or spec.disabled:
                continue
            if self.connection(name).begin():
                started.append(name)
        return started

    async def tools_ready(self, refs: list[Any], config: Config | None = None, *, wait: float) -> ToolsReport:
        """What a run starts with: the servers ``refs`` names are started concurrently in the
        background; those still starting are waited for until ``wait`` seconds after their start
        began (a server starting for longer is not waited for again), then the report says which
        are ready (with their tools), still starting, or failed. See :mod:`workspace.mcp.startup`."""
        from workspace.mcp.startup import tools_ready

        return await tools_ready(self, self.servers_for(refs, config), wait=wait)

    def model_tool_names(self, servers: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        """``{server: {the server's tool name: the name the model gets}}`` for a robot that names
        ``servers`` (default: every enabled configured server, as ``mcp: all`` does), in that order.

        The same naming as :meth:`tools_for` (unique across servers; switched-off tools are not
        offered, so they do not take names; they get the name they would have last). Only servers
        whose tool lists are known (started) are counted; the others are left out.
        """
        order = list(self.server_names() if servers is None else servers)
        pending: list[tuple[ServerSpec, ToolInfo]] = []
        off: list[tuple[ServerSpec, ToolInfo]] = []
        seen: set[str] = set()
        for name in order:
            spec = self._spec(name)
            conn = self._connections.get(name)
            if spec is None or spec.disabled or conn is None or name in seen:
                continue
            seen.add(name)
            for info in self._tool_infos(spec, conn):
                (pending if info.enabled else off).append((spec, info))
        chosen = assign_names(pending)
        out: dict[str, dict[str, str]] = {}
        for i, (spec, info) in enumerate(pending):
            out.setdefault(spec.name, {})[info.original] = chosen[i]
        taken = set(chosen.values())
        for spec, info in off:
            name = info.name if info.name not in taken else naming.tool_name(spec.name, info.original, taken=taken)
            taken.add(name)
            out.setdefault(spec.name, {})[info.original] = name
        return out

    async def _ready_infos(self, name: str) -> tuple[ServerSpec, list[ToolInfo]]:
        conn = self.connection(name)
        await conn.ensure_ready()
        return conn.spec, self._tool_infos(conn.spec, conn)

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any] | None = None, *, timeout: float | None = None,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        context: ToolContext | None = None, connection: Connection | None = None,
    ) -> ToolOutput:
        """Call a tool by the server's own name; connection failures are error outputs, not exceptions.

        ``context``: the run's tool context: the server's requests during the call (sampling,
        elicitation) and its progress notifications go to that run (:mod:`workspace.mcp.requests`).
        ``connection``: call on this connection (a run's, retired by a configuration change).
        """
        from workspace.mcp.results import result_to_output

        conn: Connection | None = connection
        try:
            if conn is None:
                conn = self.connection(server)
            with self.requests.calling(conn, context) as on_progress:
                result = await conn.call_tool(tool, arguments or {}, timeout=timeout,
                                              progress=progress or on_progress)
        except (MCPError, ConfigurationError) as exc:
            return ToolOutput(str(exc), raw={"error": str(exc)}, is_error=True)
        finally:
            if conn is not None:
                self._after_call(conn)
        return result_to_output(result)

    # -- prompts and resources --------------------------------------------------------------------
    async def list_prompts(self, server: str) -> list[dict[str, Any]]:
        from workspace.mcp.client import dump_all

        return dump_all(await self.connection(server).list_prompts())

    async def get_prompt(self, server: str, prompt: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``prompts/get``; a prompt the server does not have, or one called without its required arguments,
        raises MCPError saying which (with the server's own message)."""
        try:
            result = await self.connection(server).get_prompt(prompt, _str_args(arguments))
        except MCPError as exc:
            problem = await self._prompt_problem(server, prompt, arguments)
            if problem is None:
                raise
            said = f" (the server said: {exc})" if "more argument" in problem else ""
            raise MCPError(problem + said) from None
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _prompt_problem(self, server: str, prompt: str, arguments: Mapping[str, Any] | None) -> str | None:
        try:
            prompts = await self.list_prompts(server)
        except MCPError:
            return None
        found = next((p for p in prompts if p.get("name") == prompt), None)
        if found is None:
            names = ", ".join(sorted(str(p.get("name")) for p in prompts)) or "(none)"
            return f"MCP server '{server}' has no prompt '{prompt}'. Its prompts: {names}"
        given = {k for k, v in (arguments or {}).items() if v not in (None, "")}
        missing = [a for a in found.get("arguments") or [] if a.get("required") and a.get("name") not in given]
        if not missing:
            return None
        described = "; ".join(f"{a.get('name')}" + (f" ({a['description']})" if a.get("description") else "")
                              for a in missing)
        return (f"The prompt '{prompt}' of MCP server '{server}' needs {len(missing)} more argument"
                f"{'s' if len(missing) != 1 else ''}: {described}")

    async def list_resources(self, server: str) -> list[dict[str, Any]]:
        from workspace.mcp.client import dump_all

        return dump_all(await self.connection(server).list_resources())

    async def list_resource_templates(self, server: str) -> list[dict[str, Any]]:
        from workspace.mcp.client import dump_all

        return dump_all(await self.connection(server).list_resource_templates())

    async def read_resource(self, server: str, uri: str) -> dict[str, Any]:
        result = await self._read(server, uri)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _read(self, server: str, uri: str) -> Any:
        """``resources/read``; a server without resources, or a URI it does not know, is an MCPError naming the
        fix."""
        conn = self.connection(server)
        await conn.ensure_ready()
        if conn.capabilities is not None and conn.capabilities.resources is None:
            raise MCPError(f"MCP server '{server}' offers no resources (it did not announce the resources "
                           "capability): read them from another server")
        try:
            return await conn.read_resource(uri)
        except MCPError as exc:
            text = str(exc)
            if " with an error: " not in text:
                raise
            said = re.sub(r"^MCP error -?\d+: | \(code -?\d+\)$", "", text.split(" with an error: ", 1)[1])
            raise MCPError(f"MCP server '{server}' could not read the resource '{uri}': {said}. Check the URI "
                           "against its list (the MCP dock's Resources tab, or list_mcp_resources)") from None

    async def read_resource_content(self, server: str, uri: str) -> ResourceContent:
        """The resource as read, whole (:class:`~workspace.mcp.resources.ResourceContent`: text, or bytes with
        their MIME type); for previews and attachments. Errors are MCPError naming the fix."""
        from workspace.mcp.resources import content_from_dict

        result = await self._read(server, uri)
        name = await self._resource_name(server, uri)

        def convert() -> ResourceContent:
            contents = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.contents]
            if not contents:
                raise MCPError(f"MCP server '{server}' answered the resource '{uri}' with no content")
            return content_from_dict(server, uri, contents[0], name=name, more=contents[1:])

        return await asyncio.to_thread(convert)

    async def _resource_name(self, server: str, uri: str) -> str | None:
        try:
            listed = await self.list_resources(server)
        except MCPError:
            return None
        return next((str(r.get("name")) for r in listed if r.get("uri") == uri and r.get("name")), None)

    async def read_template(self, server: str, template: str, arguments: Mapping[str, Any]) -> ResourceContent:
        """A resource template filled in with ``arguments`` and read (a missing one raises
        :class:`~workspace.mcp.resources.TemplateArgumentsMissing` naming it)."""
        from workspace.mcp.resources import expand_template

        return await self.read_resource_content(server, expand_template(template, arguments))

    async def subscribe_resource(self, server: str, uri: str, *, on: bool = True) -> None:
        """Subscribe to a resource's updates (``resources/subscribe``), or stop (``on=False``). A change the server
        reports marks it in the status (``ServerStatus.subscriptions``: the time it changed) until it is read."""
        await self.connection(server).subscribe(uri, on=on)

    async def read_resource_text(self, server: str, uri: str, *, limit: int | None = None) -> ResourceRead:
        """A resource for a model and for people (:class:`~workspace.mcp.results.ResourceRead`): its text cut to
        ``limit`` characters with a note, and whole. A large one is turned into text off the event loop."""
        from workspace.mcp.results import RESOURCE_CHARS_FOR_MODEL, resource_read

        result = await self._read(server, uri)

        def convert() -> ResourceRead:
            contents = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.contents]
            return resource_read(uri, contents, limit=limit or RESOURCE_CHARS_FOR_MODEL)

        return await asyncio.to_thread(convert)

    async def prompt_template(
        self, server: str, prompt: str, arguments: Mapping[str, Any] | None = None, *, name: str | None = None,
    ) -> Template:
        """An MCP prompt (``prompts/get``) as a :class:`~workspace.templates.Template` for a robot.

        The prompt's messages become the template body (their text taken literally: Jinja
        syntax inside the prompt is not rendered); arguments are filled in by the server now.
        """
        from workspace.templates import Template

        result = await self.get_prompt(server, prompt, arguments)
        messages = result.get("messages") or []
        roles = {m.get("role") for m in messages}
        from workspace.mcp.results import describe_block

        parts = []
        for message in messages:
            text = describe_block(message.get("content") or {})
            if len(roles) > 1:
                text = f"{str(message.get('role', '')).capitalize()}: {text}"
            parts.append(text)
        body = "\n\n".join(parts)
        literal = "{% raw %}" + body.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}") + \
            "{% endraw %}"
        metadata: dict[str, Any] = {"name": name or naming.tool_name(server, prompt)}
        description = result.get("description")
        if description:
            metadata["description"] = description
        metadata["mcp_prompt"] = {"server": server, "prompt": prompt, "arguments": dict(arguments or {})}
        return Template(name=str(metadata["name"]), body=literal, metadata=metadata)


def _str_args(arguments: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not arguments:
        return None
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
