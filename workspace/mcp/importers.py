"""Importing MCP servers from other clients' files (``robotlab mcp import FILE``).

Understood formats (detected from the file's top-level keys):

* Claude Desktop, Cursor, Cline/Roo, Claude Code, LM Studio: ``mcpServers`` (copied as is:
  unknown keys are kept);
* VS Code (``.vscode/mcp.json`` or settings): ``servers`` (or ``mcp.servers``) with ``inputs``;
  ``${input:id}`` becomes ``${env:ID}`` (set that variable, or store it in the keyring);
* Zed (``settings.json``): ``context_servers`` (``command`` as a string or as
  ``{path, args, env}``, or ``url`` + ``headers``);
* Goose (``config.yaml``): ``extensions`` (``cmd``, ``args``, ``envs``, ``env_keys``, ``uri``,
  ``headers``, ``type``, ``enabled``, ``timeout``); built-in extensions are skipped.

:func:`merge_into_file` adds the servers to a YAML configuration file, editing the text so
comments and everything else in the file stay as they were. :func:`parse_pasted` reads a block
pasted in the window (any of these formats, or a bare entry).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workspace.errors import ConfigurationError
from workspace.mcp.config import parse_server, read_file
from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

FORMATS = ("mcpServers", "vscode", "zed", "goose")


class _AnyEnv(dict[str, str]):
    """An environment in which every variable is set (to check entries without their secrets)."""

    def get(self, key: str, default: Any = None) -> str:
        return "x"


@dataclass
class ImportResult:
    """What a file held, in our ``mcpServers`` shape."""

    path: Path
    format: str
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Things the user should know (skipped entries, variables to set).
    notes: list[str] = field(default_factory=list)


def detect_format(data: Mapping[str, Any]) -> str | None:
    if "mcpServers" in data or "mcp_servers" in data:
        return "mcpServers"
    if isinstance(data.get("servers"), Mapping) or (
        isinstance(data.get("mcp"), Mapping) and isinstance(data["mcp"].get("servers"), Mapping)
    ):
        return "vscode"
    if "context_servers" in data:
        return "zed"
    if "extensions" in data:
        return "goose"
    return None


def read_client_file(path: Path, *, format: str | None = None) -> ImportResult:
    """The MCP servers of another client's configuration file; errors name the file and key."""
    path = Path(path).expanduser()
    return servers_from_data(read_file(path), source=str(path), format=format)


def servers_from_data(data: Mapping[str, Any], *, source: str, format: str | None = None) -> ImportResult:
    """The MCP servers of another client's configuration, already read (a file, or a block pasted in the
    Settings page); errors name ``source`` and the key."""
    path = Path(source)
    fmt = format or detect_format(data)
    if fmt is None:
        keys = ", ".join(sorted(map(str, data))[:8]) or "(nothing)"
        raise ConfigurationError(
            f"{source}: no MCP servers found. Expected one of the keys mcpServers (Claude Desktop, Cursor, Cline), "
            f"servers (VS Code), context_servers (Zed) or extensions (Goose); the file has: {keys}"
        )
    if fmt not in FORMATS:
        raise ConfigurationError(f"Unknown import format {fmt!r}; use one of: {', '.join(FORMATS)}")
    result = ImportResult(path=path, format=fmt)
    if fmt == "mcpServers":
        key = "mcpServers" if "mcpServers" in data else "mcp_servers"
        _from_mcp_servers(result, data.get(key), key)
    elif fmt == "vscode":
        block = data.get("mcp") if isinstance(data.get("mcp"), Mapping) and "servers" not in data else data
        prefix = "mcp.servers" if block is not data else "servers"
        assert isinstance(block, Mapping)
        _from_vscode(result, block.get("servers"), block.get("inputs"), prefix)
    elif fmt == "zed":
        _from_zed(result, data.get("context_servers"))
    else:
        _from_goose(result, data.get("extensions"))
    for name, entry in result.servers.items():
        parse_server(name, entry, source=source, environ=_AnyEnv())  # structure check, secrets not needed
    return result


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{where}: expected a mapping of server names to settings, got "
                                 f"{type(value).__name__}")
    return value


def _from_mcp_servers(result: ImportResult, servers: Any, key: str) -> None:
    for name, entry in _mapping(servers, f"{result.path}: {key}").items():
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{result.path}: {key}.{name}: expected a mapping with command or url")
        result.servers[str(name)] = dict(entry)


def _env_name(input_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", input_id).strip("_").upper() or "MCP_INPUT"


def _convert_inputs(value: Any, inputs: Mapping[str, Mapping[str, Any]], used: dict[str, str]) -> Any:
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            input_id = match.group(1)
            var = _env_name(input_id)
            used[input_id] = var
            return "${env:" + var + "}"

        return re.sub(r"\$\{input:([^}]+)\}", replace, value)
    if isinstance(value, list):
        return [_convert_inputs(v, inputs, used) for v in value]
    if isinstance(value, Mapping):
        return {k: _convert_inputs(v, inputs, used) for k, v in value.items()}
    return value


def _from_vscode(result: ImportResult, servers: Any, inputs: Any, prefix: str) -> None:
    table: dict[str, Mapping[str, Any]] = {}
    for item in inputs or []:
        if isinstance(item, Mapping) and item.get("id"):
            table[str(item["id"])] = item
    used: dict[str, str] = {}
    for name, entry in _mapping(servers, f"{result.path}: {prefix}").items():
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{result.path}: {prefix}.{name}: expected a mapping with command or url")
        out = {k: _convert_inputs(v, table, used) for k, v in entry.items() if k not in ("envFile", "dev")}
        if "envFile" in entry:
            result.notes.append(f"{name}: envFile {entry['envFile']!r} is not read; put its variables in env")
        if any("${workspaceFolder}" in str(v) for v in _walk(out)):
            result.notes.append(f"{name}: uses ${{workspaceFolder}}; replace it with a folder, or set "
                                "workspaceFolder in the environment")
        result.servers[str(name)] = out
    for input_id, var in sorted(used.items()):
        described = table.get(input_id, {}).get("description")
        what = f" ({described})" if described else ""
        result.notes.append(
            f"VS Code input '{input_id}'{what} became ${{env:{var}}}: set {var} in the environment, or store it "
            f"with `keyring set robotlab {var}`"
        )


def _walk(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [x for v in value.values() for x in _walk(v)]
    if isinstance(value, list):
        return [x for v in value for x in _walk(v)]
    return [value]


def _from_zed(result: ImportResult, servers: Any) -> None:
    for name, entry in _mapping(servers, f"{result.path}: context_servers").items():
        where = f"{result.path}: context_servers.{name}"
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{where}: expected a mapping with command or url")
        out: dict[str, Any] = {}
        command = entry.get("command")
        if isinstance(command, Mapping):
            if not command.get("path"):
                raise ConfigurationError(f"{where}.command.path: missing (the program to start)")
            out["command"] = command["path"]
            if command.get("args"):
                out["args"] = list(command["args"])
            if command.get("env"):
                out["env"] = dict(command["env"])
        elif isinstance(command, str):
            out["command"] = command
            if entry.get("args"):
                out["args"] = list(entry["args"])
            if entry.get("env"):
                out["env"] = dict(entry["env"])
        elif entry.get("url"):
            out["url"] = entry["url"]
            if entry.get("headers"):
                out["headers"] = dict(entry["headers"])
        else:
            if entry.get("source") == "extension":
                result.notes.append(f"{name}: a Zed extension, not a command; skipped")
                continue
            raise ConfigurationError(f"{where}: needs 'command' (or command.path) or 'url'")
        if entry.get("enabled") is False:
            out["disabled"] = True
        result.servers[str(name)] = out


def _from_goose(result: ImportResult, extensions: Any) -> None:
    for name, entry in _mapping(extensions, f"{result.path}: extensions").items():
        where = f"{result.path}: extensions.{name}"
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{where}: expected a mapping")
        kind = str(entry.get("type", "stdio")).lower()
        out: dict[str, Any] = {}
        if kind in ("builtin", "platform", "frontend", "inline_python"):
            result.notes.append(f"{name}: a Goose {kind} extension (part of Goose, not an MCP server); skipped")
            continue
        if kind == "stdio":
            if not entry.get("cmd"):
                raise ConfigurationError(f"{where}.cmd: missing (the program to start)")
            out["command"] = entry["cmd"]
            if entry.get("args"):
                out["args"] = list(entry["args"])
        elif kind in ("sse", "streamable_http", "streamable-http", "http"):
            if not entry.get("uri"):
                raise ConfigurationError(f"{where}.uri: missing (the server's URL)")
            out["url"] = entry["uri"]
            out["type"] = "sse" if kind == "sse" else "streamable-http"
            if entry.get("headers"):
                out["headers"] = dict(entry["headers"])
        else:
            raise ConfigurationError(f"{where}.type: unknown extension type {kind!r}")
        env = dict(entry.get("envs") or {})
        for key in entry.get("env_keys") or []:
            env.setdefault(str(key), "${env:" + str(key) + "}")
        if env:
            out["env"] = env
        if entry.get("timeout") is not None:
            out["timeout"] = entry["timeout"]
        if entry.get("enabled") is False:
            out["disabled"] = True
        if entry.get("available_tools"):
            result.notes.append(f"{name}: Goose's available_tools list is not imported; switch tools off with "
                                "`robotlab mcp disable` instead")
        result.servers[str(name)] = out


# -- writing ---------------------------------------------------------------------------------------
@dataclass
class MergeReport:
    path: Path
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: True when the file could not be edited in place and was rewritten (comments lost; a .bak kept).
    rewritten: bool = False


_KEY_LINE = re.compile(r"^(mcpServers|mcp_servers)\s*:(.*)$")


def merge_text(text: str, servers: Mapping[str, Mapping[str, Any]], *, replace: bool = False,
               source: str = "config") -> tuple[str, MergeReport]:
    """``text`` (a YAML configuration) with ``servers`` added under ``mcpServers``.

    Existing servers of the same name are kept unless ``replace``. The text is edited in
    place when possible (comments kept) and the result is checked by parsing it.
    """
    import yaml

    from workspace import yaml_limits

    try:
        data = yaml_limits.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{source}: not valid YAML ({exc}); fix it before importing into it") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: expected a mapping of sections at the top")
    key = "mcp_servers" if "mcp_servers" in data and "mcpServers" not in data else "mcpServers"
    existing = data.get(key) or {}
    if not isinstance(existing, dict):
        raise ConfigurationError(f"{source}: {key} must be a mapping of server names")
    report = MergeReport(path=Path(source))
    to_add: dict[str, Any] = {}
    for name, entry in servers.items():
        if name in existing and not replace:
            report.skipped.append(name)
            continue
        (report.replaced if name in existing else report.added).append(name)
        to_add[name] = dict(entry)
    expected = dict(data)
    expected[key] = {**existing, **to_add}
    if not to_add:
        return text, report
    edited = None if report.replaced else _insert(text, key, to_add)
    if edited is not None:
        try:
            if yaml_limits.safe_load(edited) == expected:
                return edited, report
        except yaml.YAMLError:
            pass
    report.rewritten = True
    return yaml.safe_dump(expected, sort_keys=False, allow_unicode=True), report


def _dump_block(servers: Mapping[str, Any], indent: str) -> list[str]:
    import yaml

    dumped = yaml.safe_dump(dict(servers), sort_keys=False, allow_unicode=True, default_flow_style=False)
    return [f"{indent}{line}\n" if line else "\n" for line in dumped.splitlines()]


def _insert(text: str, key: str, servers: Mapping[str, Any]) -> str | None:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    index = next((i for i, line in enumerate(lines) if (m := _KEY_LINE.match(line)) and m.group(1) == key), None)
    if index is None:
        block = ["\n" if lines and lines[-1].strip() else "", f"{key}:\n", *_dump_block(servers, "  ")]
        return "".join(lines + [b for b in block if b])
    rest = _KEY_LINE.match(lines[index]).group(2)  # type: ignore[union-attr]
    value = rest.split("#", 1)[0].strip()
    if value in ("{}", "", "null", "~"):
        # Block style (or empty): find where the block ends and the children's indentation.
        end = index + 1
        child_indent = None
        last_content = index
        while end < len(lines):
            line = lines[end]
            stripped = line.strip()
            if stripped and not line.startswith((" ", "\t")) and not stripped.startswith("#"):
                break
            if stripped and not stripped.startswith("#"):
                last_content = end
                if child_indent is None:
                    child_indent = line[: len(line) - len(line.lstrip())]
            end += 1
        if value in ("{}", "null", "~"):
            if last_content != index:
                return None
            comment = rest[rest.index("#"):].rstrip("\n") if "#" in rest else ""
            head = f"{key}:" + (f"  {comment}" if comment else "") + "\n"
            return "".join(lines[:index] + [head, *_dump_block(servers, "  ")] + lines[index + 1:])
        indent = child_indent or "  "
        insert_at = last_content + 1
        return "".join(lines[:insert_at] + _dump_block(servers, indent) + lines[insert_at:])
    return None  # flow style with content: let the caller rewrite


def merge_into_file(path: Path, servers: Mapping[str, Mapping[str, Any]], *, replace: bool = False) -> MergeReport:
    """Add ``servers`` to the YAML configuration file ``path`` (created when missing)."""
    path = Path(path)
    text = read_text_bounded(path, CONFIG_FILE_BYTES, "configuration file") if path.exists() else ""
    new_text, report = merge_text(text, servers, replace=replace, source=str(path))
    report.path = path
    if new_text == text:
        return report
    from workspace.mcp.edit import write_atomic

    if report.rewritten and text:
        write_atomic(path.with_suffix(path.suffix + ".bak"), text, mode=0o600)
    write_atomic(path, new_text, mode=0o600)  # it names commands, servers, keyring entries
    return report


def parse_pasted(text: str) -> dict[str, dict[str, Any]]:
    """The servers of a pasted block: Claude Desktop / Cursor (``{"mcpServers": {...}}``), VS Code
    (``{"servers": {...}}`` or ``{"mcp": {"servers": ...}}``), Zed (``context_servers``), a bare
    ``{"name": {"command": ...}}`` mapping, or a single entry ``"name": {...}`` without braces.

    Raises :class:`ConfigurationError` saying what was expected.
    """
    import json

    from workspace.mcp.config import _strip_json_comments

    body = text.strip()
    if not body:
        raise ConfigurationError("Nothing pasted: paste a JSON block like {\"mcpServers\": {\"name\": {\"command\": "
                                 "\"npx\", \"args\": [...]}}}")
    candidates = [body] if body.startswith("{") else [body, "{" + body.rstrip(",") + "}"]
    data: Any = None
    error: Exception | None = None
    for candidate in candidates:
        try:
            data = json.loads(_strip_json_comments(candidate))
            break
        except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested thousands of levels deep
            error = exc
    if data is None:
        try:

            from workspace import yaml_limits

            data = yaml_limits.safe_load(body)
        except Exception:
            data = None
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"The pasted text is not JSON ({error}); paste the whole block, braces included")
    if not isinstance(data, Mapping):
        raise ConfigurationError("The pasted text is not a JSON object; paste the block with mcpServers")
    if detect_format(data) is None:
        # A bare mapping of servers, or one entry.
        if data and all(isinstance(v, Mapping) and ("command" in v or "url" in v or "serverUrl" in v)
                        for v in data.values()):
            data = {"mcpServers": data}
        elif "command" in data or "url" in data:
            raise ConfigurationError("The pasted entry has no name: paste it as \"name\": {\"command\": ...}")
    result = servers_from_data(data, source="pasted text")
    if not result.servers:
        raise ConfigurationError("The pasted text holds no MCP servers")
    return result.servers
