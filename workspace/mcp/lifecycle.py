"""The configured MCP servers and the life of their connections.

:class:`ServerLifecycle` is the part of :class:`~workspace.mcp.manager.MCPManager` that owns every
connection (one actor task each, :mod:`workspace.mcp.actor`): it takes the ``mcpServers`` of a
configuration (entries that do not parse become a failed status naming the fix), reloads it (by
hand, or when the files change), keeps running runs on the connection they started with when a
server's settings change (the old connection is *retired*: it stops once its calls are done),
starts, stops, restarts and signs in to servers, tells servers the client's roots, and publishes a
:class:`~workspace.mcp.status.ServerStatus` of each server on every change. The tools robots get,
prompts and resources are the manager's (:mod:`workspace.mcp.manager`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError, MCPError
from workspace.mcp.catalogue import ToolSwitches, tool_infos
from workspace.mcp.config import ServerSpec, is_disabled, parse_server
from workspace.mcp.status import ServerState, ServerStatus, StatusHub, StatusListener, ToolInfo

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.mcp.actor import ConnectionActor
    from workspace.mcp.client import Connection

log = logging.getLogger("workspace.mcp")


class _AnyEnv(dict[str, str]):
    def get(self, key: str, default: Any = None) -> str:
        return f"${{{key}}}"


_ANY_ENV = _AnyEnv()


class ServerLifecycle:
    """The servers of a configuration and their connections; see the module documentation."""

    def __init__(
        self,
        config: Config | Mapping[str, Any] | None = None,
        *,
        folder: Path | None = None,
        state_file: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._environ = environ
        self._specs: dict[str, ServerSpec] = {}
        self._inline: dict[str, ServerSpec] = {}
        self._errors: dict[str, str] = {}
        #: Servers of an untrusted folder's .robotlab/config.yaml (Config.withheld) and that folder.
        self._withheld: tuple[Path | None, frozenset[str]] = (None, frozenset())
        self._connections: dict[str, Connection] = {}
        self._hub = StatusHub()
        #: Tools people switched on or off (mcp-tools.json, or for this process).
        self._switches = ToolSwitches(state_file)
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

    def spec(self, name: str) -> ServerSpec | None:
        """The server's settings as configured (None: not configured, or its entry is broken)."""
        return self._spec(name)

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

    def _add_inline(self, spec: ServerSpec) -> None:
        old = self._inline.get(spec.name)
        if spec.name in self._specs and self._specs[spec.name].connection_key() == spec.connection_key():
            return
        self._inline[spec.name] = spec
        if old is None or old.connection_key() != spec.connection_key():
            self._apply_spec(spec.name)

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
                trust_annotations=spec.trust_annotations,
            )
        return ServerStatus(
            name=name, state=conn.state, reason=conn.reason, transport=spec.transport, target=spec.describe(),
            tools=tuple(self._tool_infos(spec, conn)), tools_note=conn.tools_note, server_info=conn.server_info,
            protocol_version=conn.protocol_version, stderr=tuple(conn.stderr_tail(len(conn.stderr))),
            since=conn.since, connect_seconds=conn.connect_seconds, starts=conn.starts, disabled=spec.disabled,
            source=spec.source, trust_annotations=spec.trust_annotations, log=tuple(conn.log), auth=conn.auth_state, sign_in_url=conn.sign_in_url,
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
        from workspace.trust import trust_command

        folder, withheld = self._withheld
        if name in withheld:
            where = str(paths.project_config_file(folder)) if folder is not None else \
                "the folder's .robotlab/config.yaml"
            return (f"MCP server '{name}' is defined in {where} and is not used until you trust that folder "
                    f"(its servers are programs it would start on this machine). If you know who wrote it: "
                    + trust_command(folder))
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

    # -- tools' status ----------------------------------------------------------------------------
    def _enabled(self, server: str, original: str) -> bool:
        spec = self._spec(server)
        return self._switches.enabled(server, original, spec.disabled_tools if spec is not None else ())

    def _tool_infos(self, spec: ServerSpec, conn: Connection) -> list[ToolInfo]:
        return tool_infos(spec, conn.tools, lambda original: self._enabled(spec.name, original))


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
