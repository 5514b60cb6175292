"""Folder trust: what a folder's own files may do before the user says yes.

Opening a folder someone else wrote (a cloned repository, a download) must not run
their programs or send the user's API keys to their server. So:

1. The settings of a folder's ``.robotlab/config.yaml`` that could do either are
   *withheld* until the user trusts the folder:

   - ``mcpServers`` (or ``mcp_servers``): each server is a program started on the machine;
   - ``llm.api_base``: the user's provider key would be sent there;
   - ``approval``: a policy that allows tools without asking;
   - ``review.mode: auto``: robots' file changes applied without review;
   - ``review.verify``: a command run (in the sandbox) on every change set proposed.

   Trust is remembered per folder in ``trusted-folders.yaml`` of the user's config folder,
   with a fingerprint of exactly those settings: when a ``git pull`` changes them, the
   folder must be trusted again. ``robotlab trust DIR`` and the desktop's banner do it.

2. Robot, template and network files *inside* the opened folder may never define an MCP
   server inline (a mapping in an ``mcp:`` list) nor point a robot at a server that is not
   on this machine (``api_base``): they may only name servers of ``mcpServers``. This is
   decided by where the file is, not by reading its contents, so no spelling gets round it
   (:func:`folder_file_problem`).

3. The user's API keys (environment or keyring) go only where the user sent them
   (:func:`key_may_go`): the provider's own address (no ``api_base``), or an ``api_base`` the
   user set in their own configuration (the user file, Settings, ``ROBOT_LAB_LLM__API_BASE``),
   on the command line (``--api-base``) or in their own Python code.
   An ``api_base`` written in a file inside the opened folder (a robot, a network, the folder's
   ``.robotlab/config.yaml`` even once trusted) is called without the user's key unless the user
   configured that same address: the provider sends a placeholder instead (see
   :mod:`workspace.providers.registry`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workspace.errors import ConfigurationError
from workspace.urls import is_loopback_url, key_may_go, user_api_bases, written_in_folder

#: Where keys may go is decided in workspace.urls (the providers ask it too); named here for the folder's side.
__all__ = ["key_may_go", "user_api_bases", "written_in_folder"]

#: Settings of a project file held back until the folder is trusted (dotted keys).
SENSITIVE_KEYS = ("mcpServers", "llm.api_base", "approval", "review.mode", "review.verify", "sandbox")
_SAFE_VALUES = {"review.mode": {"review", "readonly"}}


def trust_file() -> Path:
    from workspace import paths

    return paths.config_dir() / "trusted-folders.yaml"


def _key(folder: Path) -> str:
    return os.path.realpath(os.fspath(folder))


def sensitive_settings(project: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a project file's mapping that need trust, as ``{dotted key: value}``."""
    out: dict[str, Any] = {}
    servers: dict[str, Any] = {}
    for spelling in ("mcpServers", "mcp_servers"):  # both merge into mcpServers (config._merge)
        value = project.get(spelling)
        if isinstance(value, Mapping):
            servers.update({str(k): v for k, v in value.items()})
        elif value not in (None, {}):
            servers[spelling] = value  # not a mapping: the configuration rejects it; never trust it blindly
    if servers:
        out["mcpServers"] = servers
    for dotted in SENSITIVE_KEYS:
        if dotted == "mcpServers":
            continue
        node: Any = project
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is None or node == {}:
            continue
        if isinstance(node, str) and node in _SAFE_VALUES.get(dotted, ()):
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


def _inside(path: Path, folder: Path) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def folder_file_problem(path: Path | None, folder: Path | None, *, mcp: Any = None,
                        api_base: Any = None) -> str | None:
    """Why a robot, template or network file at ``path`` may not use ``mcp`` / ``api_base`` (None: it may).

    Only files inside the opened ``folder`` are limited: there, an MCP server must be named
    (defined in the folder's ``.robotlab/config.yaml``, used once the folder is trusted) and an
    ``api_base`` must be on this machine.
    """
    if path is None or folder is None or not _inside(Path(path), Path(folder)):
        return None
    if isinstance(mcp, list | tuple) and any(not isinstance(ref, str) for ref in mcp):
        return (f"{path}: defines an MCP server inline, which files in the opened folder may not do (it would "
                "start a program). Name a server instead and define it under mcpServers in the folder's "
                f".robotlab/config.yaml; it is used once you trust the folder: {trust_command(folder)}")
    if api_base is not None and not is_loopback_url(str(api_base)):
        return (f"{path}: api_base {api_base} is not on this machine, and files in the opened folder may not send "
                "your provider key elsewhere. Set llm.api_base in the folder's .robotlab/config.yaml (used once you "
                "trust the folder) or in your own configuration")
    return None


def template_problem(template: Any, folder: Path | None) -> str | None:
    """:func:`folder_file_problem` of a robot file's ``template`` (its ``mcp``, its ``api_base`` and its
    fallback models' ``api_base``) in the opened ``folder`` (None: it may do all that)."""
    path = getattr(template, "path", None)
    if path is None or folder is None:
        return None
    problem = folder_file_problem(path, Path(folder), mcp=template.mcp, api_base=template.api_base)
    for entry in template.fallback_models or ():  # a fallback's server is where the key would go, too
        if problem is None and isinstance(entry, Mapping) and entry.get("api_base"):
            problem = folder_file_problem(path, Path(folder), api_base=entry["api_base"])
    return problem


def _project_mapping(folder: Path) -> dict[str, Any]:
    from workspace import paths
    from workspace.schemas import read_yaml_file

    path = paths.project_config_file(folder)
    if not path.is_file():
        return {}
    try:
        return read_yaml_file(path)[0]
    except ConfigurationError:
        return {}


def needs_trust(folder: Path) -> dict[str, Any]:
    """What the folder's config file would do once trusted: ``{dotted key: value}`` (empty: nothing)."""
    return sensitive_settings(_project_mapping(Path(folder)))


def fingerprint(settings: Mapping[str, Any]) -> str:
    canonical = json.dumps(settings, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _document() -> dict[str, Any]:
    """The trust file as a mapping (empty when missing or unreadable: nothing trusted, the safe side)."""
    import yaml

    from workspace import yaml_limits
    from workspace.readlimits import CONFIG_FILE_BYTES, FileLimitError, read_text_bounded

    path = trust_file()
    try:
        data = yaml_limits.safe_load(read_text_bounded(path, CONFIG_FILE_BYTES, "trust file"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, FileLimitError):
        return {}
    return data if isinstance(data, dict) else {}


def _read() -> dict[str, str]:
    folders = _document().get("folders")
    return {str(k): str(v) for k, v in folders.items()} if isinstance(folders, dict) else {}


def _unsandboxed() -> list[str]:
    listed = _document().get("run_without_sandbox")
    return [str(p) for p in listed] if isinstance(listed, list) else []


def _write(folders: Mapping[str, str] | None = None, *, unsandboxed: list[str] | None = None) -> None:
    """Write the trust file: ``folders`` (None: as they are) and the folders whose commands may run without a
    sandbox (None: as they are)."""
    import yaml

    from workspace.changes import atomic_write

    folders = _read() if folders is None else folders
    unsandboxed = _unsandboxed() if unsandboxed is None else unsandboxed
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = ("# Folders whose .robotlab/ settings you trusted (robotlab trust), with a fingerprint of\n"
            "# those settings: when they change, the folder must be trusted again.\n")
    document: dict[str, Any] = {"folders": dict(sorted(folders.items()))}
    if unsandboxed:
        text += ("# run_without_sandbox: folders where run_command may run a command without a sandbox when none\n"
                 "# can be made here, asking you every time (robotlab trust DIR --run-without-sandbox on|off).\n")
        document["run_without_sandbox"] = sorted(set(unsandboxed))
    text += yaml.safe_dump(document, sort_keys=False)
    atomic_write(path, text.encode("utf-8"))


def runs_without_sandbox(folder: Path) -> bool:
    """True when the user let commands run in ``folder`` without a sandbox where none can be made (asked every
    time). Kept in the user's trust file, never in the folder: a repository cannot ship it."""
    return _key(folder) in _unsandboxed()


def set_run_without_sandbox(folder: Path, on: bool) -> bool:
    """Let (``on``) or stop letting commands run in ``folder`` without a sandbox; True if that changed."""
    listed = _unsandboxed()
    key = _key(folder)
    if (key in listed) == on:
        return False
    _write(unsandboxed=[*listed, key] if on else [p for p in listed if p != key])
    return True


def is_trusted(folder: Path, settings: Mapping[str, Any] | None = None) -> bool:
    """True when the folder needs nothing, or was trusted with exactly its current settings."""
    settings = needs_trust(folder) if settings is None else settings
    if not settings:
        return True
    return _read().get(_key(folder)) == fingerprint(settings)


def trusted_by_user(folder: Path) -> bool:
    """True when the user trusted the folder (``robotlab trust``, the banner) with its current settings; a
    folder that needs nothing is not thereby trusted (what its own robot files ask to run is held back)."""
    return _read().get(_key(folder)) == fingerprint(needs_trust(folder))


class TrustChanged(Exception):
    """The folder's settings changed between being shown to the user and being trusted."""


def trust(folder: Path, expected: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Trust the folder's current settings; returns them. With ``expected`` (what the user was
    shown), refuse with :class:`TrustChanged` when the file says something else by now."""
    settings = needs_trust(folder)
    if expected is not None and fingerprint(settings) != fingerprint(expected):
        raise TrustChanged(f"{folder}: its .robotlab/config.yaml changed after you were shown its settings; "
                           "look at them again before trusting it")
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
        elif key == "llm.api_base":
            lines.append(f"llm.api_base: {value} (models are called there without your API keys, unless your "
                         "own configuration sets the same address)")
        elif key == "review.mode":
            lines.append(f"review.mode: {value} (robots' file changes applied without review)")
        elif key == "review.verify":
            lines.append(f"review.verify: {value} (a command run on proposed changes, in the sandbox)")
        elif key == "approval":
            lines.append("approval: its own tool approval policy")
        elif key == "sandbox":
            lines.append("sandbox: its own limits of what skills' scripts may be given (network, paths, time)")
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


def trust_command(folder: Path | str | None) -> str:
    """How a notice names the command that trusts ``folder``: ``robotlab trust DIR`` shows the settings and asks,
    which needs a terminal; a script (nobody to ask) runs it with ``--yes``. Both are given, so the one printed
    works wherever it is run."""
    import shlex

    where = shlex.quote(str(folder)) if folder is not None else "<folder>"
    return f"robotlab trust {where} (in a script, where nobody can answer its question: robotlab trust {where} --yes)"


def untrusted_message(folder: Path, settings: Mapping[str, Any]) -> str:
    lines = "\n".join(f"  - {line}" for line in describe(settings))
    return (f"The folder {folder} has settings in .robotlab/ that are not used until you trust it:\n{lines}\n"
            f"Trust it if you know who wrote them: {trust_command(folder)}")
