"""MCP server configuration: the ``mcpServers`` mapping of Claude Desktop, Cursor and Cline.

```yaml
mcpServers:
  everything:                       # the server's name (tools become everything__<tool>)
    command: npx                    # stdio: a program, its args, extra env, working folder
    args: [-y, "@modelcontextprotocol/server-everything"]
    env: {API_TOKEN: "${env:API_TOKEN}"}
    cwd: ~/work
  remote:
    url: https://example.com/mcp    # HTTP: streamable HTTP unless type says sse
    headers: {Authorization: "Bearer ${API_TOKEN}"}
    type: streamable-http           # stdio | sse | http | streamable-http | streamableHttp | streamable_http
    timeout: 60                     # per-call time limit (see below)
    connectTimeout: 30              # start-up + handshake time limit
    disabled: false
    autoApprove: [search, "get_*"]  # tools the approval policy may run without asking (Cline)
    alwaysAllow: [...]              # the same, Roo Code's spelling
    disabledTools: [delete_*]       # tools never offered to robots
    trustAnnotations: false         # true: believe the server's readOnlyHint (its read-only tools run unasked)
```

* The transport is inferred from ``command`` (stdio) vs ``url`` (streamable HTTP); ``type``
  (or Cline's ``transportType``) is accepted in every common spelling.
* ``${VAR}``, ``${env:VAR}`` and ``${VAR:-default}`` are replaced in command, args, env, cwd,
  url and headers; ``${keyring:NAME}`` reads the OS keyring (service ``robotlab``). A variable
  that is not set is an error naming the server, the key and the variable.
* Times (``timeout``, ``connectTimeout``) are **seconds**, as in Cline and Goose. A number of
  1000 or more is read as **milliseconds** (``60000`` is one minute, as Claude Code writes it),
  and strings with a unit are accepted: ``"500ms"``, ``"30s"``, ``"2m"``.
* Other keys are kept (other clients' extensions, ``x-`` notes): :attr:`ServerSpec.raw` is the
  entry exactly as written, and is what gets written back. A key that looks like a misspelling of
  a known one is an error naming the file (and line), the server and the closest key:
  ``unknown setting 'comand' — did you mean 'command'?``. The JSON Schema of an entry is
  :class:`workspace.schemas.mcp.McpServer` (``robotlab schema mcp``).
* Secrets: :meth:`ServerSpec.describe` (``robotlab mcp list``, the MCP dock) shows the entry as
  written, so ``${VAR}`` references appear as references and never as their values; URL
  passwords, secret-looking query parameters and literal values of secret-looking flags are
  masked. Values that come from the keyring or from secret-looking variables, env and header
  values are given to :func:`workspace.secrets.register_secret`, so logs, exports and the
  database redact them.

Nothing here imports the MCP SDK. ``${VAR}`` interpolation is :mod:`workspace.mcp.variables`; showing
an entry without its secrets, and registering them, :mod:`workspace.mcp.masking`; the pydantic
schema is :mod:`workspace.schemas.mcp`, edits :mod:`workspace.mcp.edit`, imports
:mod:`workspace.mcp.importers`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.mcp.masking import (
    filled_values,
    mask_args,
    mask_defaults,
    mask_url,
    mask_written_url,
    quote,
    register_secrets,
)
from workspace.mcp.variables import Filled, interpolate
from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

if TYPE_CHECKING:
    from workspace.schemas import Lines

#: Canonical transports: ``stdio``, ``sse`` and ``http`` (streamable HTTP).
TRANSPORTS = ("stdio", "sse", "http")
#: Every spelling of ``type`` we accept, normalised (lower case, no ``-``/``_``), to a transport.
_TYPE_SPELLINGS = {
    "stdio": "stdio",
    "local": "stdio",
    "sse": "sse",
    "http": "http",
    "https": "http",
    "streamablehttp": "http",
    "remote": "http",
}
_UNSUPPORTED_TYPES = {"ws", "websocket", "builtin", "platform", "inlinepython", "frontend"}
TYPE_HELP = "stdio, sse, http, streamable-http, streamableHttp or streamable_http"

#: Keys this module understands (others are kept as written): the fields of
#: :class:`workspace.schemas.mcp.McpServer` (a test keeps the two the same).
KNOWN_KEYS = frozenset({
    "command", "args", "env", "cwd", "url", "serverUrl", "headers", "type", "transportType", "disabled",
    "enabled", "timeout", "connectTimeout", "autoApprove", "alwaysAllow", "disabledTools", "name", "transport",
    "sampling", "oauth", "trustAnnotations",
})
#: Keys of RobotLab's inline ``transport:`` block (:class:`workspace.schemas.mcp.McpTransport`).
TRANSPORT_KEYS = frozenset({"type", "command", "args", "env", "cwd", "url", "headers"})
#: Keys other clients write that RobotLab does not use: kept, and never taken for misspellings.
OTHER_CLIENTS_KEYS = frozenset({
    "envFile", "httpUrl", "trust", "includeTools", "excludeTools", "description", "watchPaths", "dev",
})
#: How alike an unknown key and a known one must be for the unknown one to be a misspelling (0 to 1).
TYPO_CUTOFF = 0.8

DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 30.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|msec|s|sec|secs|seconds?|m|min|mins|minutes?)?\s*$", re.I)


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One MCP server's launch or connection settings, interpolated and checked."""

    name: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False
    #: Per-call time limit in seconds.
    timeout: float = DEFAULT_CALL_TIMEOUT
    #: Start-up and handshake time limit in seconds.
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    #: Tool names (or glob patterns) the approval policy may run without asking.
    auto_approve: tuple[str, ...] = ()
    #: Tool names (or glob patterns) never offered to robots.
    disabled_tools: tuple[str, ...] = ()
    #: Believe the server's tool annotations (``readOnlyHint``) when deciding approvals; by default an
    #: MCP tool is asked about whatever its annotations claim.
    trust_annotations: bool = False
    #: The entry exactly as written (before interpolation), unknown keys included.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: Where the entry came from (a file path, "inline", ...).
    source: str = field(default="", compare=False)
    #: Values filled in from variables or the keyring (paths and plain variables such as HOME
    #: left out): masked in the server's stderr view.
    filled_values: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def connection_key(self) -> tuple[Any, ...]:
        """What a running connection depends on: a change means reconnecting."""
        import json

        oauth = self.raw.get("oauth") if self.raw else None
        return (
            self.transport, self.command, self.args, tuple(sorted(self.env.items())), self.cwd, self.url,
            tuple(sorted(self.headers.items())), self.connect_timeout,
            json.dumps(oauth, sort_keys=True, default=str) if oauth is not None else None,
        )

    def describe(self) -> str:
        """A one-line, secret-free description, from the entry as written (before interpolation).

        ``${VAR}`` references are shown as written, never their values; env and header values, URL
        passwords, secret-looking query values and literal values of secret-looking flags
        (``--token X``, ``--api-key=X``) are masked, and known secrets redacted.
        """
        from workspace.secrets import redact

        written = _flatten(self.raw) if self.raw else {}
        if self.transport == "stdio":
            # Without ``raw`` (a spec built in code) nothing was interpolated: the fields are as written.
            command = str(written.get("command") or "") if written else (self.command or "")
            args = _str_list(written.get("args"), where="args") if written else self.args
            text = " ".join(quote(p) for p in [command, *mask_args(args)])
            if self.env:
                text += "  (env: " + ", ".join(sorted(self.env)) + ")"
        else:
            url = str(written.get("url") or written.get("serverUrl") or "") if written else (self.url or "")
            text = mask_written_url(url)
            if self.headers:
                text += "  (headers: " + ", ".join(f"{k}: ***" for k in sorted(self.headers)) + ")"
        return redact(mask_defaults(text))

    def __repr__(self) -> str:
        # The dataclass repr would show interpolated args, env, url and headers.
        return f"ServerSpec(name={self.name!r}, transport={self.transport!r}, target={self.describe()!r})"

    @property
    def target(self) -> str:
        return self.describe()

    def to_dict(self) -> dict[str, Any]:
        """The entry as written (unknown keys kept), for writing back to a file."""
        return dict(self.raw)



def normalize_type(value: Any, *, where: str) -> str:
    """The canonical transport for a ``type`` spelling; raises naming the accepted spellings."""
    key = re.sub(r"[-_\s]", "", str(value)).lower()
    if key in _TYPE_SPELLINGS:
        return _TYPE_SPELLINGS[key]
    if key in _UNSUPPORTED_TYPES:
        raise ConfigurationError(
            f"{where}: type {value!r} is not supported here. Use a stdio server (command/args) or an HTTP "
            f"server (url) with type {TYPE_HELP}"
        )
    raise ConfigurationError(f"{where}: unknown type {value!r}; accepted: {TYPE_HELP}")


def parse_duration(value: Any, *, where: str) -> float:
    """Seconds from a number (>= 1000 means milliseconds) or a string like "30s" / "500ms" / "2m"."""
    if isinstance(value, bool) or value is None:
        raise ConfigurationError(f"{where}: expected a time like 60 (seconds), 60000 (ms) or \"30s\", got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value) / 1000.0 if value >= 1000 else float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ConfigurationError(
                f"{where}: expected a time like 60 (seconds), 60000 (ms), \"500ms\", \"30s\" or \"2m\", got {value!r}"
            )
        number, unit = float(match.group(1)), (match.group(2) or "").lower()
        if unit.startswith("ms"):
            seconds = number / 1000.0
        elif unit.startswith("m"):
            seconds = number * 60.0
        elif unit:
            seconds = number
        else:
            seconds = number / 1000.0 if number >= 1000 else number
    if seconds <= 0:
        raise ConfigurationError(f"{where}: the time must be more than zero, got {value!r}")
    return seconds



def _str_list(value: Any, *, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple):
        raise ConfigurationError(f"{where}: expected a list of strings, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, dict | list) or item is None:
            raise ConfigurationError(f"{where}[{i}]: expected a string, got {item!r}")
        out.append(str(item))
    return tuple(out)


def _str_map(value: Any, *, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{where}: expected a mapping of NAME: value, got {type(value).__name__}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict | list):
            raise ConfigurationError(f"{where}.{key}: expected a string, got {type(item).__name__}")
        out[str(key)] = "" if item is None else (str(item).lower() if isinstance(item, bool) else str(item))
    return out


def misspelt_keys(entry: Mapping[str, Any], *, name: str, source: str = "", prefix: str = "mcpServers",
                  lines: Lines | None = None) -> list[str]:
    """A message for each key of ``entry`` that looks like a misspelling of a known key (naming the file and
    line when ``lines`` has it, the server and the closest key); other unknown keys are fine."""
    from workspace.schemas import closest

    problems: list[str] = []
    blocks: list[tuple[tuple[str, ...], Mapping[str, Any], frozenset[str]]] = [((), entry, KNOWN_KEYS)]
    if isinstance(entry.get("transport"), Mapping):
        blocks.append((("transport",), entry["transport"], TRANSPORT_KEYS))
    for inner, block, known in blocks:
        for key in block:
            if (not isinstance(key, str) or key in known or key in OTHER_CLIENTS_KEYS
                    or key.startswith(("x-", "x_"))):
                continue
            guess = closest(key, sorted(known), cutoff=TYPO_CUTOFF)
            if guess is None:
                continue
            where = lines.where((prefix, name, *inner, key)) if lines is not None else ""
            where = where or source
            here = f"{where}: " if where else ""
            place = ".".join((prefix, name, *inner))
            problems.append(f"{here}{place}: unknown setting '{key}' — did you mean '{guess}'?")
    return problems


def parse_server(
    name: str,
    entry: Any,
    *,
    source: str = "",
    environ: Mapping[str, str] | None = None,
    prefix: str = "mcpServers",
    lines: Lines | None = None,
) -> ServerSpec:
    """Check and interpolate one ``mcpServers`` entry; errors name the source, server and key
    (and the line, given the file's ``lines``).

    ``environ`` replaces the process environment (and keyring) for interpolation (tests).
    """
    here = f"{source}: " if source else ""
    base = f"{here}{prefix}.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigurationError(
            f"{base}: expected a mapping with 'command' (and 'args') or 'url', got {type(entry).__name__}"
        )
    typos = misspelt_keys(entry, name=name, source=source, prefix=prefix, lines=lines)
    if typos:
        raise ConfigurationError("\n".join(typos))
    raw = dict(entry)
    flat = _flatten(raw)
    for key in ("command", "url", "cwd"):
        if key in flat and flat[key] is not None and not isinstance(flat[key], str):
            raise ConfigurationError(f"{base}.{key}: expected a string, got {flat[key]!r}")

    found: dict[str, list[Filled]] = {}

    def interp(value: str, key: str) -> str:
        return interpolate(value, where=f"{base}.{key}", environ=environ, filled=found.setdefault(key, []))

    type_value = flat.get("type", flat.get("transportType"))
    command = flat.get("command") or None
    url = flat.get("url") or flat.get("serverUrl") or None
    if type_value is not None and str(type_value).strip():
        transport = normalize_type(type_value, where=f"{base}.type")
    elif command:
        transport = "stdio"
    elif url:
        transport = "sse" if str(url).rstrip("/").endswith("/sse") else "http"
    else:
        raise ConfigurationError(
            f"{base}: needs 'command' (a program to start, for stdio servers) or 'url' (for HTTP servers)"
        )
    if transport == "stdio" and not command:
        raise ConfigurationError(f"{base}: a stdio server needs 'command' (the program to start)")
    if transport in ("sse", "http") and not url:
        raise ConfigurationError(f"{base}: an {transport} server needs 'url'")

    written_args = _str_list(flat.get("args"), where=f"{base}.args")
    args = tuple(interp(a, f"args[{i}]") for i, a in enumerate(written_args))
    env = {k: interp(v, f"env.{k}") for k, v in _str_map(flat.get("env"), where=f"{base}.env").items()}
    headers = {
        k: interp(v, f"headers.{k}") for k, v in _str_map(flat.get("headers"), where=f"{base}.headers").items()
    }
    cwd = flat.get("cwd")
    if cwd:
        cwd = os.path.expanduser(interp(cwd, "cwd"))
    if url:
        url = interp(str(url), "url")
        if not re.match(r"^https?://", url):
            raise ConfigurationError(f"{base}.url: expected an http:// or https:// address, got {mask_url(url)!r}")
    if command:
        command = os.path.expanduser(interp(str(command), "command"))

    disabled = _flag(flat.get("disabled"), where=f"{base}.disabled")
    if "enabled" in flat and not _flag(flat.get("enabled"), where=f"{base}.enabled", default=True):
        disabled = True
    timeout = (
        parse_duration(flat["timeout"], where=f"{base}.timeout") if flat.get("timeout") is not None
        else DEFAULT_CALL_TIMEOUT
    )
    connect_timeout = (
        parse_duration(flat["connectTimeout"], where=f"{base}.connectTimeout")
        if flat.get("connectTimeout") is not None else DEFAULT_CONNECT_TIMEOUT
    )
    sampling = flat.get("sampling")
    if sampling is not None and str(sampling).strip().lower() not in ("ask", "allow", "deny"):
        raise ConfigurationError(f"{base}.sampling: {sampling!r} is not a sampling policy; write ask (the default: "
                                 "ask each time), allow (answer without asking) or deny")
    oauth = flat.get("oauth")
    if oauth is not None and not isinstance(oauth, bool | Mapping | str):
        raise ConfigurationError(f"{base}.oauth: expected false (never sign in) or a mapping like "
                                 f"{{scope: read, callbackPort: 8765}}, got {oauth!r}")
    auto = _str_list(flat.get("autoApprove"), where=f"{base}.autoApprove") + _str_list(
        flat.get("alwaysAllow"), where=f"{base}.alwaysAllow"
    )
    register_secrets(found, args=written_args, env=env, headers=headers, url=url if transport != "stdio" else None)
    return ServerSpec(
        name=str(name),
        transport=transport,
        command=command if transport == "stdio" else None,
        args=args if transport == "stdio" else (),
        env=env,
        cwd=cwd or None,
        url=url if transport != "stdio" else None,
        headers=headers,
        disabled=disabled,
        timeout=timeout,
        connect_timeout=connect_timeout,
        auto_approve=tuple(dict.fromkeys(auto)),
        disabled_tools=_str_list(flat.get("disabledTools"), where=f"{base}.disabledTools"),
        trust_annotations=_flag(flat.get("trustAnnotations"), where=f"{base}.trustAnnotations"),
        raw=raw,
        source=source,
        filled_values=filled_values(found),
    )


def _flatten(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The entry with RobotLab's inline form ``{name, transport: {type, command, args, env}}`` lifted."""
    flat: dict[str, Any] = dict(raw)
    transport_block = raw.get("transport")
    if isinstance(transport_block, Mapping):
        for key, value in transport_block.items():
            flat.setdefault(str(key), value)
    return flat



def _flag(value: Any, *, where: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "off", "0", ""):
        return False
    if isinstance(value, int):
        return bool(value)
    raise ConfigurationError(f"{where}: expected true or false, got {value!r}")


def trusts_annotations(entry: Any) -> bool:
    """Whether an ``mcpServers`` entry (as written) trusts its server's tool annotations (``trustAnnotations``)."""
    if not isinstance(entry, Mapping):
        return False
    try:
        return _flag(entry.get("trustAnnotations"), where="trustAnnotations")
    except ConfigurationError:
        return False


def is_disabled(entry: Any) -> bool:
    """Whether a raw entry says ``disabled: true`` (or ``enabled: false``), without checking the rest."""
    if not isinstance(entry, Mapping):
        return False
    try:
        return _flag(entry.get("disabled"), where="") or not _flag(entry.get("enabled"), where="", default=True)
    except ConfigurationError:
        return False


def parse_servers(
    mapping: Any, *, source: str = "", environ: Mapping[str, str] | None = None, prefix: str = "mcpServers"
) -> dict[str, ServerSpec]:
    """Every entry of an ``mcpServers`` mapping, checked (the first bad entry raises)."""
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        here = f"{source}: " if source else ""
        raise ConfigurationError(
            f"{here}{prefix}: expected a mapping of server names to settings, got {type(mapping).__name__}"
        )
    out: dict[str, ServerSpec] = {}
    for name, entry in mapping.items():
        if not isinstance(name, str):
            here = f"{source}: " if source else ""
            raise ConfigurationError(
                f"{here}{prefix}: the server name {name!r} is not text (YAML reads unquoted yes/no/on/off as "
                "true/false and digits as numbers); put the name in quotes"
            )
        out[name] = parse_server(name, entry, source=source, environ=environ, prefix=prefix)
    return out


def inline_spec(ref: Mapping[str, Any], *, index: int = 0, environ: Mapping[str, str] | None = None) -> ServerSpec:
    """A server given inline in a robot/run ``mcp:`` list: ``{name: x, command: ...}`` or RobotLab's
    ``{name: x, transport: {type: stdio, command: ...}}``."""
    name = ref.get("name")
    if not name or not isinstance(name, str):
        raise ConfigurationError(f"mcp[{index}]: an inline MCP server needs a 'name' (used to prefix its tools)")
    return parse_server(name, ref, source="inline", environ=environ, prefix="mcp")


def read_file(path: Path) -> dict[str, Any]:
    """A YAML or JSON file as a mapping; errors name the file and where it went wrong."""
    import json

    path = Path(path)
    try:
        text = read_text_bounded(path, CONFIG_FILE_BYTES, "server list", encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigurationError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path}: not UTF-8 text ({exc})") from exc
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    if path.suffix.lower() in (".json", ".jsonc") or text.lstrip().startswith("{"):
        try:
            data = json.loads(_strip_json_comments(text))
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}. Fix the file"
            ) from exc
        except RecursionError:
            raise ConfigurationError(f"{path}: its JSON nests too deep (thousands of levels) to read. Fix the "
                                     "file") from None
    else:
        import yaml

        from workspace import yaml_limits

        try:
            data = yaml_limits.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise ConfigurationError(
                f"{path}: not valid YAML{at}: {getattr(exc, 'problem', None) or exc}. Fix the file"
            ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: expected a mapping at the top (like mcpServers: ...), got "
                                 f"{type(data).__name__}")
    return data


def _strip_json_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas (VS Code and Zed write these)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def load_servers_file(path: Path, *, environ: Mapping[str, str] | None = None) -> dict[str, ServerSpec]:
    """The servers of a file holding an ``mcpServers`` (or ``mcp_servers``) mapping."""
    data = read_file(path)
    key = "mcpServers" if "mcpServers" in data else "mcp_servers" if "mcp_servers" in data else None
    if key is None:
        raise ConfigurationError(
            f"{path}: no 'mcpServers' mapping found. For another client's file use `robotlab mcp import {path}`"
        )
    return parse_servers(data[key], source=str(path), environ=environ, prefix=key)
