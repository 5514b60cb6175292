"""Folder trust: what a folder's own ``.robotlab/`` may do before the user says yes.

Opening a folder someone else wrote (a cloned repository, a download) must not run
their programs or send the user's API keys to their server. So the settings of a
folder's ``.robotlab/config.yaml`` that could do either are *withheld* until the user
trusts the folder:

- ``mcpServers``: each server is a program started on the user's machine;
- ``llm.api_base``: the user's provider key would be sent there;
- ``approval``: a policy that allows tools without asking;
- ``review.mode: auto``: robots' file changes applied without review;

and robot, template and network files in the folder may not start MCP servers of
their own (inline ``{command: ...}`` / ``{url: ...}`` entries) until then.

Trust is remembered per folder in ``trusted-folders.yaml`` of the user's config folder,
with a fingerprint of exactly those settings: when a ``git pull`` changes them, the
folder must be trusted again. ``robotlab trust DIR`` and the desktop's banner do it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workspace.errors import ConfigurationError

#: Settings of a project file held back until the folder is trusted (dotted keys).
SENSITIVE_KEYS = ("mcpServers", "llm.api_base", "approval", "review.mode")
_SAFE_VALUES = {"review.mode": {"review", "readonly"}}
_MCP_KEYS = ("mcp", "mcpServers", "mcp_servers", "network_mcp")
_FILE_KINDS = ("robots", "templates", "networks")


def trust_file() -> Path:
    from workspace import paths

    return paths.config_dir() / "trusted-folders.yaml"


def _key(folder: Path) -> str:
    return os.path.realpath(os.fspath(folder))


def sensitive_settings(project: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a project file's mapping that need trust, as ``{dotted key: value}``."""
    out: dict[str, Any] = {}
    for dotted in SENSITIVE_KEYS:
        node: Any = project
        alias = "mcp_servers" if dotted == "mcpServers" and "mcpServers" not in project else None
        for part in (alias or dotted).split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is None or node == {} or node in _SAFE_VALUES.get(dotted, ()):
            continue
        out[dotted] = node
    return out


def strip_sensitive(project: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a project file's mapping without the settings that need trust."""
    import copy

    data = copy.deepcopy(dict(project))
    for dotted in sensitive_settings(project):
        parts = dotted.split(".")
        if dotted == "mcpServers":
            data.pop("mcpServers", None)
            data.pop("mcp_servers", None)
            continue
        node: Any = data
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return data


def inline_servers(value: Any) -> list[Any]:
    """Inline MCP server definitions (mappings with ``command`` or ``url``) anywhere under an
    ``mcp``-like key of a robot's front matter or a network file."""
    found: list[Any] = []

    def walk(node: Any, under_mcp: bool) -> None:
        if isinstance(node, Mapping):
            if under_mcp and ("command" in node or "url" in node):
                found.append(dict(node))
                return
            for key, child in node.items():
                walk(child, under_mcp or key in _MCP_KEYS)
        elif isinstance(node, list | tuple):
            for child in node:
                walk(child, under_mcp)

    walk(value, False)
    return found


def _folder_files(folder: Path) -> Iterable[Path]:
    from workspace import paths

    base = paths.project_dir(folder)
    for kind in _FILE_KINDS:
        directory = base / kind
        if directory.is_dir():
            yield from sorted(p for p in directory.iterdir() if p.suffix in (".md", ".yaml", ".yml", ".json"))


def _file_servers(path: Path) -> list[Any]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if path.suffix == ".md":
        if not text.startswith("---"):
            return []
        text = text[3:].split("\n---", 1)[0]
    try:
        return inline_servers(yaml.safe_load(text))
    except yaml.YAMLError:
        return []


def _project_mapping(folder: Path) -> dict[str, Any]:
    from workspace import paths
    from workspace.config import read_yaml_file

    path = paths.project_config_file(folder)
    if not path.is_file():
        return {}
    try:
        return read_yaml_file(path)
    except ConfigurationError:
        return {}


def needs_trust(folder: Path) -> dict[str, Any]:
    """What the folder would do once trusted: ``{dotted key or file path: value}`` (empty: nothing)."""
    folder = Path(folder)
    out = sensitive_settings(_project_mapping(folder))
    for path in _folder_files(folder):
        servers = _file_servers(path)
        if servers:
            out[str(path.relative_to(folder))] = servers
    return out


def fingerprint(settings: Mapping[str, Any]) -> str:
    canonical = json.dumps(settings, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _read() -> dict[str, str]:
    import yaml

    path = trust_file()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}  # unreadable: nothing is trusted, which is the safe side
    folders = data.get("folders") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in folders.items()} if isinstance(folders, dict) else {}


def _write(folders: Mapping[str, str]) -> None:
    import tempfile

    import yaml

    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = ("# Folders whose .robotlab/ settings you trusted (robotlab trust), with a fingerprint of\n"
            "# those settings: when they change, the folder must be trusted again.\n")
    text += yaml.safe_dump({"folders": dict(sorted(folders.items()))}, sort_keys=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trusted-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_trusted(folder: Path, settings: Mapping[str, Any] | None = None) -> bool:
    """True when the folder needs nothing, or was trusted with exactly its current settings."""
    settings = needs_trust(folder) if settings is None else settings
    if not settings:
        return True
    return _read().get(_key(folder)) == fingerprint(settings)


def trust(folder: Path) -> dict[str, Any]:
    """Trust the folder's current settings; returns them."""
    settings = needs_trust(folder)
    folders = _read()
    folders[_key(folder)] = fingerprint(settings)
    _write(folders)
    return settings


def revoke(folder: Path) -> bool:
    """Forget the folder's trust; True if it was trusted."""
    folders = _read()
    if folders.pop(_key(folder), None) is None:
        return False
    _write(folders)
    return True


def describe(settings: Mapping[str, Any]) -> list[str]:
    """One line per withheld setting, for people (commands shown, values of env/headers not)."""
    lines = []
    for key, value in settings.items():
        if key == "mcpServers" and isinstance(value, Mapping):
            for name, spec in value.items():
                lines.append(f"MCP server '{name}': {_what(spec)}")
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for spec in value:
                lines.append(f"{key}: MCP server '{spec.get('name', '?')}': {_what(spec)}")
        elif key == "llm.api_base":
            lines.append(f"llm.api_base: {value} (your provider key would be sent there)")
        elif key == "review.mode":
            lines.append(f"review.mode: {value} (robots' file changes applied without review)")
        elif key == "approval":
            lines.append("approval: its own tool approval policy")
        else:
            lines.append(f"{key}: {value}")
    return lines


def _what(spec: Any) -> str:
    if not isinstance(spec, Mapping):
        return repr(spec)
    if spec.get("command"):
        args = spec.get("args") or []
        return "runs " + " ".join([str(spec["command"]), *(str(a) for a in args)])
    if spec.get("url"):
        return f"connects to {spec['url']}"
    return "(no command or url)"


def untrusted_message(folder: Path, settings: Mapping[str, Any]) -> str:
    lines = "\n".join(f"  - {line}" for line in describe(settings))
    return (f"The folder {folder} has settings in .robotlab/ that are not used until you trust it:\n{lines}\n"
            f"Trust it if you know who wrote them: robotlab trust {folder}")
