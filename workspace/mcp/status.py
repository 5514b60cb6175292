"""The status of each MCP server, as the desktop's MCP dock and ``robotlab mcp list`` show it.

A :class:`ServerStatus` is an immutable snapshot. The manager calls its listeners
(plain callables, no Qt) with a new snapshot whenever something changes: the state,
the tool list, a tool switched on or off, or new stderr lines (coalesced). Listeners
run on the event loop's thread and must not block; an exception in one is logged and
ignored.

States: ``starting`` -> ``ready``; ``failed`` (with ``reason``, and the last stderr
lines) when it could not start or crashed — the next use tries again; ``stopped``
when it was stopped, disabled or never started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

log = logging.getLogger("workspace.mcp")


class ServerState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool a server offers."""

    #: The robot-facing name (``server__tool``).
    name: str
    #: The server's own name for it.
    original: str
    description: str = ""
    title: str | None = None
    #: False when switched off (per-tool disable, or the server's ``disabledTools``).
    enabled: bool = True
    #: In the server's ``autoApprove`` / ``alwaysAllow`` list.
    auto_approve: bool = False
    #: MCP hints: readOnlyHint, destructiveHint, idempotentHint, openWorldHint (camelCase, as on the wire).
    annotations: Mapping[str, Any] = field(default_factory=dict)
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["annotations"] = dict(self.annotations)
        out["parameters"] = dict(self.parameters)
        return out


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server's status at one moment."""

    name: str
    state: ServerState
    #: Why it failed (or was stopped), in words that name the fix. None when ready.
    reason: str | None = None
    #: "stdio", "sse" or "http".
    transport: str = "stdio"
    #: The command line or URL, secrets masked.
    target: str = ""
    tools: tuple[ToolInfo, ...] = ()
    #: Why some tools the server listed are not in :attr:`tools` (it listed more than
    #: :data:`workspace.mcp.catalogue.MAX_TOOLS`), in words that name the fix; None when all are.
    tools_note: str | None = None
    #: "name version" the server reported.
    server_info: str | None = None
    protocol_version: str | None = None
    #: The last lines the server wrote to stderr (plus notes such as non-JSON stdout lines).
    stderr: tuple[str, ...] = ()
    #: When the state last changed (time.time()).
    since: float = field(default_factory=time.time)
    #: Seconds the last successful connect took.
    connect_seconds: float | None = None
    #: How many times the server was (re)started.
    starts: int = 0
    #: Disabled in the configuration (``disabled: true``).
    disabled: bool = False
    #: The entry trusts the server's tool annotations (``trustAnnotations: true``): its read-only tools run
    #: without asking; otherwise each of its tools is asked about, whatever its annotations claim.
    trust_annotations: bool = False
    #: The file the server's settings came from.
    source: str = ""
    #: OAuth sign-in (remote servers): None (none involved), "signed-in", "sign-in" (never signed in),
    #: "sign-in-again" (revoked or expired) or "signing-in" (the browser is open at ``sign_in_url``).
    auth: str | None = None
    sign_in_url: str | None = None
    #: The server's log notifications, oldest first: (time, level, logger, text); levels as MCP names them
    #: (debug, info, notice, warning, error, critical, alert, emergency).
    log: tuple[tuple[float, str, str, str], ...] = ()
    #: Subscribed resources: (uri, when the server said it changed and it was not read since, else None).
    subscriptions: tuple[tuple[str, float | None], ...] = ()
    #: Bumped when the server says its resource list changed (``notifications/resources/list_changed``).
    resources_version: int = 0

    def __post_init__(self) -> None:
        # Shown in the MCP dock, `robotlab mcp list` and JSON: redact known secrets, as error texts
        # may quote an interpolated command, folder or URL (stderr lines are redacted as they arrive).
        from workspace.secrets import redact

        if self.reason:
            object.__setattr__(self, "reason", redact(self.reason))
        if self.target:
            object.__setattr__(self, "target", redact(self.target))

    @property
    def is_ready(self) -> bool:
        return self.state is ServerState.READY

    @property
    def needs_sign_in(self) -> bool:
        """The server waits for the person to sign in (first time, or again)."""
        return self.auth in ("sign-in", "sign-in-again")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": str(self.state),
            "reason": self.reason,
            "transport": self.transport,
            "target": self.target,
            "server_info": self.server_info,
            "protocol_version": self.protocol_version,
            "tools": [t.to_dict() for t in self.tools],
            "tools_note": self.tools_note,
            "stderr": list(self.stderr),
            "since": self.since,
            "connect_seconds": self.connect_seconds,
            "starts": self.starts,
            "disabled": self.disabled,
            "source": self.source,
            "auth": self.auth,
            "subscriptions": [{"uri": uri, "changed_at": at} for uri, at in self.subscriptions],
            "log": [{"time": t, "level": level, "logger": logger, "text": text} for t, level, logger, text in self.log],
        }


#: MCP's log levels (RFC 5424's), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def log_rank(level: str) -> int:
    """How severe a log level is (0: debug); an unknown level counts as info."""
    try:
        return LOG_LEVELS.index(level.lower())
    except ValueError:
        return 1


StatusListener = Callable[[ServerStatus], Any]


class StatusHub:
    """Listeners of status changes (the manager owns one)."""

    def __init__(self) -> None:
        self._listeners: list[StatusListener] = []

    def add(self, listener: StatusListener) -> Callable[[], None]:
        """Call ``listener(status)`` on every change; returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            try:
                self._listeners.remove(listener)
            except ValueError:
                pass

        return remove

    def publish(self, status: ServerStatus) -> None:
        for listener in list(self._listeners):
            try:
                listener(status)
            except Exception:
                log.exception("an MCP status listener failed")
