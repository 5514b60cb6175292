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
* per-tool on/off: :meth:`set_tool_enabled` (persisted in ``mcp-tools.json`` next to the user
  config file) plus the server's ``disabledTools`` list; disabled tools are never offered.

Why one module of this size: :class:`MCPManager` is the one owner of every connection's lifecycle
(start in the background, reload keeping running runs on their servers, retire, sign in, subscribe);
its methods share that state and its lock, and the parts that stand alone already live beside it
(config, edit, status, requests, resources, oauth).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError, MCPError
from workspace.mcp import naming
from workspace.mcp.config import ServerSpec, inline_spec, is_disabled, parse_server
from workspace.mcp.status import ServerState, ServerStatus, StatusHub, StatusListener, ToolInfo
from workspace.tools.base import Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.mcp.actor import ConnectionActor
    from workspace.mcp.client import Connection
    from workspace.mcp.resources import ResourceContent
    from workspace.mcp.results import ResourceRead
    from workspace.mcp.startup import ToolsReport
    from workspace.templates import Template

log = logging.getLogger("workspace.mcp")

STATE_FILE_NAME = "mcp-tools.json"


class _AnyEnv(dict[str, str]):
    def get(self, key: str, default: Any = None) -> str:
        return f"${{{key}}}"


_ANY_ENV = _AnyEnv()


class MCPManager:
    """Owns the connections (one actor task each), their status and the tool views.

    One cohesive class (configuration, status, connections, tools and their names, prompts and
    resources all share the connections and their specs), so it is longer than most modules;
    how a run starts its servers lives in :mod:`workspace.mcp.startup`.
    """

    def __init__(
        self,
        config: Config | Mapping[str, Any] | None = None,
        *,
        folder: Path | None = None,
        state_file: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._state_file = state_file
        self._environ = environ
        self._specs: dict[str, ServerSpec] = {}
        self._inline: dict[str, ServerSpec] = {}
        self._errors: dict[str, str] = {}
        #: Servers of an untrusted folder's .robotlab/config.yaml (Config.withheld) and that folder.
        self._withheld: tuple[Path | None, frozenset[str]] = (None, frozenset())
        self._connections: dict[str, Connection] = {}
        self._hub = StatusHub()
        self._disabled_cache: tuple[Path, float, dict[str, list[str]]] | None = None
        self._overrides: dict[tuple[str, str], bool] = {}
        self._watch_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        #: Connections replaced by a configuration change while a run may still use them (see _retire).
        self._retired: set[Connection] = set()
        self._starts: dict[str, int] = {}
        #: The ``loaded_at`` of the newest Config taken (an older one, a robot's, does not undo a reload).
        self._config_stamp: float | None = None
        self._reload_listeners: list[Callable[[Config], Any]] = []
        #: The client's roots (the opened folder), offered to servers that ask (roots/list).
        self.roots: list[Path] = [self.folder] if self.folder is not None else []
        #: How servers' requests for sampling, elicitation and their notifications reach people.
        from workspace.mcp.requests import ClientRequests

        self.requests = ClientRequests()
        #: Opens a remote server's sign-in page: ``opener(server, url)`` (the window: the system browser; the
        #: command line: webbrowser). Only :meth:`sign_in` opens it; the URL is in the status too.
        self.sign_in_opener: Callable[[str, str], Any] | None = None
        #: The last error reading the configuration on reload (None when it was fine).
        self.config_error: str | None = None
        if config is not None:
            self.configure(config)

    # -- configuration ------------------------------------------------------------------------
    def configure(self, config: Config | Mapping[str, Any] | None) -> None:
        """Take the servers of ``config`` (a Config, or a plain ``mcpServers`` mapping).

        Entries that fail to parse (a missing ``${VAR}``) become a failed status naming the
        file, key and variable; the other servers are unaffected. A running server whose
        connection settings changed is stopped and starts again with the new ones on next use.
        """
        servers: Mapping[str, Any]
        cfg: Config | None = None
        if config is None:
            servers = {}
        elif isinstance(config, Mapping):
            inner = config.get("mcpServers", config.get("mcp_servers")) if (
                "mcpServers" in config or "mcp_servers" in config) else config
            servers = inner or {}
        else:
            stamp = getattr(config, "loaded_at", None)
            if isinstance(stamp, float):
                if self._config_stamp is not None and stamp < self._config_stamp:
                    return  # an older configuration (a robot built before the last reload): keep the newer one
                self._config_stamp = stamp
            servers = config.mcp_servers
            cfg = config
        self._set_withheld(cfg)

        def sources(name: str) -> str:
            return _source(cfg, name) if cfg is not None else ""

        def lines(name: str) -> Any:
            return cfg.key_lines.get(_source(cfg, name)) if cfg is not None else None

        if not isinstance(servers, Mapping):
            raise ConfigurationError(f"mcpServers: expected a mapping of server names, got {type(servers).__name__}")
        specs: dict[str, ServerSpec] = {}
        errors: dict[str, str] = {}
        for key, entry in servers.items():
            name = str(key)
            if not isinstance(key, str) or key in ("True", "False", "None"):  # str() of a YAML bool/null
                errors[name] = _name_error(key, sources(name))
                continue
            try:
                # A disabled server's variables need not be set (it is often disabled for that reason).
                environ = _ANY_ENV if is_disabled(entry) else self._environ
                specs[name] = parse_server(name, entry, source=sources(name), environ=environ, lines=lines(name))
            except ConfigurationError as exc:
                errors[name] = str(exc)
        old_specs, old_errors = self._specs, self._errors
        self._specs, self._errors = specs, errors
        for name in set(old_specs) | set(old_errors) | set(specs) | set(errors):
            if old_specs.get(name) != specs.get(name) or old_errors.get(name) != errors.get(name):
                self._apply_spec(name)

    def _set_withheld(self, config: Config | None) -> None:
        withheld = getattr(config, "withheld", None) or {}
        servers = withheld.get("mcpServers") if isinstance(withheld, Mapping) else None
        names = frozenset(str(k) for k in servers) if isinstance(servers, Mapping) else frozenset()
        folder = getattr(config, "folder", None) or self.folder
        self._withheld = (Path(folder) if folder is not None else None, names)

    def withheld_servers(self) -> list[str]:
        """Servers of the open folder's ``.robotlab/config.yaml`` not used until the folder is trusted."""
        return sorted(self._withheld[1])

    def _spec(self, name: str) -> ServerSpec | None:
        return self._specs.get(name) or self._inline.get(name)

    def _apply_spec(self, name: str) -> None:
        spec = self._spec(name)
        conn = self._connections.get(name)
        if conn is not None:
            if spec is None or spec.disabled:
                self._connections.pop(name, None)
                self._retire(conn, "removed from the configuration" if spec is None else
                             "disabled in the configuration")
            elif spec.connection_key() != conn.spec.connection_key():
                # New settings: the next use starts a new connection with them; runs in progress keep
                # calling the old one (their tools hold it) until they end.
                self._connections.pop(name, None)
                self._starts[name] = conn.starts  # the status counts starts of the server, not of a connection
                self._retire(conn, None)
            else:
                conn.spec = spec  # timeouts, autoApprove, disabledTools: no reconnect needed
        self._publish_name(name)

    def _retire(self, conn: Connection, reason: str | None) -> None:
        """A connection the configuration no longer names (or names differently). Calls in flight
        finish on it; it stops when none is left, and a later call of a run that started with it
        starts it again (with the settings that run started with) and stops it after."""
        conn.retired = True
        conn.retire_reason = reason
        if conn.active_calls:
            self._retired.add(conn)
        else:
            self._stop_later(conn, reason)

    def _after_call(self, conn: Connection) -> None:
        if conn.retired and not conn.active_calls:
            self._retired.discard(conn)
            self._stop_later(conn, conn.retire_reason)

    def _stop_later(self, conn: Connection, reason: str | None) -> None:
        actor = conn.request_stop(reason)  # synchronous: no call can reach the old process after this
        if actor is not None:
            self._background.add(actor)
            actor.add_done_callback(self._background.discard)

    async def reload(self, config: Config | None = None) -> list[str]:
        """Read the configuration again (or take ``config``); returns the servers that changed.

        Servers whose connection settings changed and that were running are restarted;
        removed or disabled servers are stopped. A configuration file that does not parse
        leaves everything as it was and sets :attr:`config_error`.
        """
        if config is None:
            from workspace.config import load_config

            try:
                config = load_config(self.folder)
            except ConfigurationError as exc:
                self.config_error = str(exc)
                log.warning("MCP: the configuration did not reload: %s", exc)
                return []
        self.config_error = None
        self._config_stamp = None  # an explicit reload always takes the configuration it read
        before = {n: (s.connection_key(), s.disabled) for n, s in self._specs.items()}
        running = {n for n, c in self._connections.items() if c.running or c.state is ServerState.READY}
        self.configure(config)
        after = {n: (s.connection_key(), s.disabled) for n, s in self._specs.items()}
        changed = sorted(n for n in set(before) | set(after) | set(self._errors) if before.get(n) != after.get(n))
        await asyncio.gather(*list(self._background), return_exceptions=True)
        for name in changed:
            spec = self._specs.get(name)
            if name in running and spec is not None and not spec.disabled:
                try:
                    await self.connection(name).start()
                except MCPError:
                    pass  # the status says why
        for listener in list(self._reload_listeners):
            try:
                listener(config)
            except Exception:
                log.exception("an MCP reload listener failed")
        return changed

    def add_reload_listener(self, listener: Callable[[Config], Any]) -> Callable[[], None]:
        """Call ``listener(config)`` after every :meth:`reload` (the Settings page, Reload config, the
        file changed on disk), so the robots and the next run take the new configuration too."""
        self._reload_listeners.append(listener)

        def remove() -> None:
            if listener in self._reload_listeners:
                self._reload_listeners.remove(listener)

        return remove

    # -- roots -----------------------------------------------------------------------------------
    def set_roots(self, folders: Iterable[Path]) -> None:
        """The client's roots (the opened folder); servers that are up are told the list changed."""
        roots = [Path(f) for f in folders]
        if roots == self.roots:
            return
        self.roots = roots
        for conn in list(self._connections.values()):
            if conn.session is not None:
                task = asyncio.get_running_loop().create_task(conn.roots_changed(), name=f"mcp-roots-{conn.name}")
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    def watched_files(self) -> list[Path]:
        from workspace import paths

        files = [paths.user_config_file()]
        if self.folder is not None:
            from workspace.trust import trust_file

            files += [paths.project_config_file(self.folder), trust_file()]
        return files

    def start_watching(self, interval: float = 2.0, files: Iterable[Path] | None = None) -> None:
        """Poll the configuration files' modification times and :meth:`reload` on a change."""
        if self._watch_task is not None and not self._watch_task.done():
            return
        targets = list(files) if files is not None else self.watched_files()
        self._watch_task = asyncio.get_running_loop().create_task(self._watch(targets, interval),
                                                                  name="mcp-config-watch")

    async def stop_watching(self) -> None:
        task, self._watch_task = self._watch_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})

    async def _watch(self, files: list[Path], interval: float) -> None:
        def stamp() -> tuple[tuple[float, int] | None, ...]:
            out: list[tuple[float, int] | None] = []
            for path in files:
                try:
                    st = path.stat()
                    out.append((st.st_mtime, st.st_size))
                except OSError:
                    out.append(None)
            return tuple(out)

        last = stamp()
        while True:
            await asyncio.sleep(interval)
            now = stamp()
            if now != last:
                last = now
                try:
                    changed = await self.reload()
                    if changed:
                        log.info("MCP configuration reloaded; changed: %s", ", ".join(changed))
                except Exception:
                    log.exception("MCP: reloading the configuration failed")

    # -- status -------------------------------------------------------------------------------
    def add_listener(self, listener: StatusListener) -> Callable[[], None]:
        """Call ``listener(ServerStatus)`` on every change of any server; returns the remover."""
        return self._hub.add(listener)

    def server_names(self) -> list[str]:
        names = list(self._specs) + [n for n in self._errors if n not in self._specs]
        names += [n for n in self._inline if n not in names]
        return names

    def status(self, name: str) -> ServerStatus:
        if name in self._errors and name not in self._specs:
            return ServerStatus(name=name, state=ServerState.FAILED, reason=self._errors[name], transport="",
                                target="", source=_source_of_error(self._errors[name]))
        spec = self._spec(name)
        if spec is None:
            raise KeyError(name)
        conn = self._connections.get(name)
        if conn is None:
            return ServerStatus(
                name=name, state=ServerState.STOPPED, reason="disabled in the configuration" if spec.disabled else None,
                transport=spec.transport, target=spec.describe(), disabled=spec.disabled, source=spec.source,
            )
        return ServerStatus(
            name=name, state=conn.state, reason=conn.reason, transport=spec.transport, target=spec.describe(),
            tools=tuple(self._tool_infos(spec, conn)), server_info=conn.server_info,
            protocol_version=conn.protocol_version, stderr=tuple(conn.stderr_tail(len(conn.stderr))),
            since=conn.since, connect_seconds=conn.connect_seconds, starts=conn.starts, disabled=spec.disabled,
            source=spec.source, log=tuple(conn.log), auth=conn.auth_state, sign_in_url=conn.sign_in_url,
            subscriptions=tuple(sorted((uri, conn.changed_at.get(uri) if changed else None)
                                       for uri, changed in conn.subscriptions.items())),
            resources_version=conn.resources_version,
        )

    def statuses(self) -> list[ServerStatus]:
        return [self.status(n) for n in self.server_names()]

    def _publish_name(self, name: str) -> None:
        try:
            status = self.status(name)
        except KeyError:
            status = ServerStatus(name=name, state=ServerState.STOPPED, reason="removed from the configuration")
        self._hub.publish(status)

    def _on_change(self, conn: ConnectionActor) -> None:
        if self._connections.get(conn.name) is conn:
            self._publish_name(conn.name)

    # -- connections ----------------------------------------------------------------------------
    def connection(self, name: str) -> Connection:
        """The connection object of a configured server (created, not started)."""
        conn = self._connections.get(name)
        if conn is not None:
            return conn
        spec = self._spec(name)
        if spec is None:
            raise self._unknown(name)
        if spec.disabled:
            raise MCPError(f"MCP server '{name}' is disabled in the configuration ({spec.source or 'mcpServers'}); "
                           f"set mcpServers.{name}.disabled to false to use it")
        from workspace.mcp.client import Connection

        conn = Connection(spec, on_change=self._on_change, client=self)
        conn.starts = self._starts.pop(name, 0)
        self._connections[name] = conn
        return conn

    def _unknown(self, name: str) -> Exception:
        return ConfigurationError(self.unknown_message(name))

    def unknown_message(self, name: str) -> str:
        """Why ``name`` is not a server that can be used, in words that name the fix."""
        if name in self._errors:
            return self._errors[name]
        from workspace import paths

        folder, withheld = self._withheld
        if name in withheld:
            where = str(paths.project_config_file(folder)) if folder is not None else \
                "the folder's .robotlab/config.yaml"
            return (f"MCP server '{name}' is defined in {where} and is not used until you trust that folder "
                    f"(its servers are programs it would start on this machine). If you know who wrote it: "
                    f"robotlab trust {folder if folder is not None else '<folder>'}")
        known = ", ".join(self.server_names()) or "(none)"
        return (
            f"Unknown MCP server '{name}'. Configured servers: {known}. Add it under mcpServers in "
            f"{paths.user_config_file()} (or import another client's file with `robotlab mcp import FILE`)"
        )

    async def start(self, name: str) -> ServerStatus:
        """Start a server (if not running) and return its status; failures are in the status."""
        if name in self._errors and self._spec(name) is None:
            return self.status(name)
        try:
            await self.connection(name).start()
        except MCPError:
            pass
        return self.status(name)

    async def stop(self, name: str) -> ServerStatus:
        conn = self._connections.get(name)
        if conn is not None:
            await conn.stop()
        return self.status(name)

    async def restart(self, name: str) -> ServerStatus:
        """Stop and start again now (no waiting after a failed start); the status tells how it went."""
        if name in self._errors and self._spec(name) is None:
            return self.status(name)
        try:
            await self.connection(name).restart()
        except MCPError:
            pass
        return self.status(name)

    async def sign_in(self, name: str) -> ServerStatus:
        """Sign in to a remote server now (OAuth: :mod:`workspace.mcp.oauth`): its sign-in page opens through
        :attr:`sign_in_opener` (its address is in the status meanwhile), and the server starts once the
        browser came back. The status says how it went."""
        conn = self.connection(name)
        await conn.stop()
        conn.sign_in_next = True
        try:
            await conn.ensure_ready(retry=True)
        except MCPError:
            pass  # the status says why
        finally:
            conn.sign_in_next = False
        return self.status(name)

    async def sign_out(self, name: str) -> ServerStatus:
        """Forget the server's sign-in (its tokens and registration) and stop it."""
        from workspace.mcp.oauth import oauth_options, sign_out

        spec = self._spec(name)
        if spec is None:
            raise self._unknown(name)
        options = oauth_options(spec)
        if options is not None and spec.url:
            await asyncio.to_thread(sign_out, name, spec.url, options)
        conn = self._connections.get(name)
        if conn is not None:
            await conn.stop()
            conn.auth_state, conn.sign_in_url = ("sign-in" if options is not None else None), None
            conn._changed()
        return self.status(name)

    async def aclose(self) -> None:
        """Stop watching and stop every server."""
        await self.stop_watching()
        conns = list(self._connections.values()) + list(self._retired)
        self._retired.clear()
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)
        if self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    # -- tools -----------------------------------------------------------------------------------
    def _state_path(self) -> Path:
        if self._state_file is not None:
            return self._state_file
        from workspace import paths

        return paths.config_dir() / STATE_FILE_NAME

    def _disabled_map(self) -> dict[str, list[str]]:
        path = self._state_path()
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return {}
        cached = self._disabled_cache
        if cached is not None and cached[0] == path and cached[1] == mtime:
            return cached[2]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            table = data.get("disabledTools", {}) if isinstance(data, dict) else {}
            result = {str(k): [str(t) for t in v] for k, v in table.items() if isinstance(v, list)}
        except (OSError, ValueError) as exc:
            log.warning("MCP: ignoring %s: %s", path, exc)
            result = {}
        self._disabled_cache = (path, mtime, result)
        return result

    def is_tool_enabled(self, server: str, tool: str) -> bool:
        """False when switched off with :meth:`set_tool_enabled` or listed in ``disabledTools``."""
        return self._enabled(server, self._original_name(server, tool))

    def _enabled(self, server: str, original: str) -> bool:
        override = self._overrides.get((server, original))
        if override is not None:
            return override
        if original in self._disabled_map().get(server, ()):
            return False
        spec = self._spec(server)
        return not (spec is not None and _matches(original, spec.disabled_tools, server))

    def set_tool_enabled(self, server: str, tool: str, enabled: bool, *, persist: bool = True) -> None:
        """Switch one tool on or off for every robot; saved in ``mcp-tools.json`` (next to the user
        config file) when ``persist``, else only for this process."""
        original = self._original_name(server, tool)
        if not persist:
            self._overrides[(server, original)] = enabled
        else:
            self._overrides.pop((server, original), None)
            table = {k: list(v) for k, v in self._disabled_map().items()}
            names = [t for t in table.get(server, []) if t != original]
            if not enabled:
                names.append(original)
            if names:
                table[server] = sorted(set(names))
            else:
                table.pop(server, None)
            path = self._state_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"disabledTools": table}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, path)
            self._disabled_cache = None
        if self._spec(server) is not None:
            self._publish_name(server)

    def is_auto_approved(self, server: str, tool: str) -> bool:
        """Whether the tool is in the server's ``autoApprove`` / ``alwaysAllow`` list."""
        spec = self._spec(server)
        return spec is not None and _matches(self._original_name(server, tool), spec.auto_approve, server)

    def _original_name(self, server: str, tool: str) -> str:
        """The server's own tool name for ``tool`` (which may be the ``server__tool`` name)."""
        conn = self._connections.get(server)
        if conn is not None:
            originals = [t.name for t in conn.tools]
            if tool in originals:
                return tool
            for original, name in self._names(server, originals).items():
                if name == tool:
                    return original
        prefix = naming.server_prefix(server)
        return tool[len(prefix):] if tool.startswith(prefix) else tool

    def _names(self, server: str, originals: Iterable[str]) -> dict[str, str]:
        names: dict[str, str] = {}
        originals = list(originals)
        exact = [o for o in originals if naming.sanitize(o) == o]
        rest = [o for o in originals if naming.sanitize(o) != o]
        for original in exact + rest:
            names[original] = naming.tool_name(server, original, taken=names.values())
        return names

    def _tool_infos(self, spec: ServerSpec, conn: Connection) -> list[ToolInfo]:
        names = self._names(spec.name, (t.name for t in conn.tools))
        infos = []
        for t in conn.tools:
            annotations = _annotations(t)
            infos.append(ToolInfo(
                name=names[t.name], original=t.name, description=t.description or "",
                title=t.title or annotations.get("title"),
                enabled=self._enabled(spec.name, t.name),
                auto_approve=_matches(t.name, spec.auto_approve, spec.name),
                annotations={k: v for k, v in annotations.items() if k != "title"},
                parameters=dict(t.input_schema or {}),
            ))
        return infos

    def _make_tool(self, spec: ServerSpec, info: ToolInfo, name: str | None = None, *,
                   conn: Connection | None = None) -> Tool:
        annotations = dict(info.annotations)
        if info.auto_approve:
            annotations["autoApprove"] = True
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
        chosen = _assign_names(pending)
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
        chosen = _assign_names(pending)
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

    def _add_inline(self, spec: ServerSpec) -> None:
        old = self._inline.get(spec.name)
        if spec.name in self._specs and self._specs[spec.name].connection_key() == spec.connection_key():
            return
        self._inline[spec.name] = spec
        if old is None or old.connection_key() != spec.connection_key():
            self._apply_spec(spec.name)

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


def _assign_names(pending: list[tuple[ServerSpec, ToolInfo]]) -> dict[int, str]:
    """The model-facing name of each ``pending[i]`` tool, unique across servers (see :meth:`tools_for`)."""
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


def _annotations(tool: Any) -> dict[str, Any]:
    ann = getattr(tool, "annotations", None)
    if ann is None:
        return {}
    dumped: dict[str, Any] = ann.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _matches(original: str, patterns: Iterable[str], server: str) -> bool:
    prefixed = f"{naming.server_prefix(server)}{naming.sanitize(original)}"
    for pattern in patterns:
        if pattern in ("*", original, prefixed) or fnmatch.fnmatchcase(original, pattern) or \
                fnmatch.fnmatchcase(prefixed, pattern):
            return True
    return False


def _source(config: Config, name: str) -> str:
    source = config.source_of(f"mcpServers.{name}")
    return "" if source in ("default", "defaults") else source


def _name_error(key: object, source: str) -> str:
    here = f"{source}: " if source else ""
    return (f"{here}mcpServers: the server name {key!r} is not text (YAML reads unquoted yes/no/on/off as "
            "true/false and digits as numbers); put the name in quotes")


def _source_of_error(message: str) -> str:
    head = re.sub(r":\d+$", "", message.split(": ", 1)[0])  # "config.yaml:12": the file, not its line
    return head if os.sep in head or head.endswith((".yaml", ".yml", ".json")) else ""


def _str_args(arguments: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not arguments:
        return None
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
