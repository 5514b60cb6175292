"""RobotLab's script tools: an executable file becomes a tool, run in the sandbox as ``run_command`` runs.

:meth:`ScriptTool.from_path` makes the tool (``None``, with a warning, for a file that is not executable,
as RobotLab does). Its name is the file's name without extension, each run of characters other than
``[a-zA-Z0-9]`` made ``_`` and ``_`` trimmed at both ends (``my-check.sh`` → ``my_check``). Its description
and parameters come from, in this order:

1. a front-matter block in the script's leading comments, YAML between two ``# ---`` lines::

       #!/bin/sh
       # ---
       # description: Count the lines of a file
       # parameters:
       #   path: {type: string, description: the file to count}
       # required: [path]
       # ---

   ``parameters`` maps each argument to its JSON schema (or is a whole ``{"type": "object", ...}`` schema);
   ``required`` lists the ones the model must give;
2. a sidecar ``NAME.yaml``, ``NAME.yml`` or ``NAME.json`` beside the script (``NAME`` the file's name
   without extension), with the same keys;
3. otherwise the script's ``--help`` output (at most :data:`HELP_CHARS` characters, :data:`HELP_TIMEOUT_S`
   seconds, run in the sandbox when one can be made) as the description, and RobotLab's one optional
   ``args`` string (split as a shell would) as the parameters. A script whose ``--help`` fails gets
   RobotLab's description: its first comment line that is not a shebang, else its name.

A call runs the script in :mod:`workspace.isolation`'s sandbox on the opened folder with the run's pending
changes, as ``run_command`` does: its output streams, what it writes comes back as proposals, and the
approval policy decides it as the command it runs (``run_command``'s rules; asked by default). The
arguments reach the script as JSON on its standard input and in ``ROBOTLAB_TOOL_INPUT``; with the ``args``
parameter they are also its command-line arguments (RobotLab's way). A script outside the folder (the
user's tools folder) is handed into the sandbox by content, as the host's files are not visible there.

:func:`workspace.script_tools.discover_script_tools` finds the user's tools folder's executables and, in a folder the user
trusted, its ``.robotlab/tools/``; an untrusted folder's are ignored with a notice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workspace.readlimits import (
    CONFIG_FILE_BYTES,
    SCRIPT_HEAD_BYTES,
    FileLimitError,
    read_bounded,
    read_text_bounded,
)
from workspace.tools.base import Tool, ToolContext, ToolOutput
from workspace.tools.capabilities import Ceiling

log = logging.getLogger(__name__)

#: The most of ``--help``'s output kept as a description, in characters.
HELP_CHARS = 2_000
#: How long ``--help`` may take, in seconds.
HELP_TIMEOUT_S = 5.0
#: The largest script handed into the sandbox by content, in bytes.
MAX_SCRIPT_BYTES = 100_000
#: The default time limit of a call, in seconds (the sandbox's).
SCRIPT_TIMEOUT_S = 120.0

_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"args": {"type": "string", "description": "Optional command-line arguments"}},
}
_FENCE = re.compile(r"^#\s?---\s*$")


class ScriptToolError(ValueError):
    """A script's front matter or sidecar cannot be read; the message names the file and the fix."""


def tool_name_for(path: Path) -> str:
    """RobotLab's name for a script: the stem, non-alphanumeric runs made ``_``, ``_`` trimmed."""
    name = re.sub(r"[^a-zA-Z0-9]+", "_", path.stem).strip("_")
    return name or "script"


def _leading_comments(text: str) -> list[str]:
    lines = text.splitlines()
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    out: list[str] = []
    for line in lines:
        if not line.startswith("#"):
            break
        out.append(line)
    return out


def _front_matter(text: str, path: Path) -> dict[str, Any] | None:
    comments = _leading_comments(text)
    if not comments or not _FENCE.match(comments[0]):
        return None
    body: list[str] = []
    for line in comments[1:]:
        if _FENCE.match(line):
            return _mapping(_yaml("\n".join(body), path), path)
        body.append(line[2:] if line.startswith("# ") else line[1:])
    raise ScriptToolError(f"{path}: the front matter opened with '# ---' is not closed; end it with a '# ---' line")


def _yaml(text: str, where: Path) -> Any:
    import yaml

    from workspace import yaml_limits

    try:
        return yaml_limits.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScriptToolError(f"{where}: the script tool's description is not valid YAML ({exc}); fix it") from exc


def _mapping(data: Any, where: Path) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ScriptToolError(f"{where}: a script tool's description must be a mapping with description and "
                              f"parameters, not {type(data).__name__}")
    return data


def _sidecar(path: Path) -> dict[str, Any] | None:
    for ext in (".yaml", ".yml", ".json"):
        side = path.with_name(path.stem + ext)
        if side == path or not side.is_file():
            continue
        try:
            text = read_text_bounded(side, CONFIG_FILE_BYTES, "script tool description")
        except FileLimitError as exc:
            raise ScriptToolError(str(exc)) from None
        if ext == ".json":
            try:
                return _mapping(json.loads(text), side)
            except json.JSONDecodeError as exc:
                raise ScriptToolError(f"{side}: not valid JSON ({exc}); fix it") from exc
        return _mapping(_yaml(text, side), side)
    return None


def _schema(spec: Mapping[str, Any], where: Path) -> dict[str, Any]:
    params = spec.get("parameters")
    if params is None:
        return {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise ScriptToolError(f"{where}: parameters must map each argument to its JSON schema, "
                              f"e.g. 'path: {{type: string}}'")
    if params.get("type") == "object" and isinstance(params.get("properties"), dict):
        schema = dict(params)
    else:
        props: dict[str, Any] = {}
        for key, value in params.items():
            if isinstance(value, str):
                value = {"type": value}
            if not isinstance(value, dict):
                raise ScriptToolError(f"{where}: parameter {key!r} must be a JSON schema such as "
                                      f"{{type: string}}, not {value!r}")
            props[str(key)] = value
        schema = {"type": "object", "properties": props}
    required = spec.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ScriptToolError(f"{where}: required must be a list of parameter names")
        schema["required"] = list(required)
    return schema


def _first_comment(text: str) -> str | None:
    for line in _leading_comments(text):
        stripped = line.lstrip("#").strip()
        if stripped and not stripped.startswith("---"):
            return stripped
    return None


def _help_text(path: Path) -> str | None:
    """The script's ``--help`` output (bounded in time and size), None when it fails or says nothing."""
    from workspace.isolation import SandboxUnavailable

    try:
        from workspace.tools.commands import _sandbox

        box = _sandbox()
    except SandboxUnavailable:
        box = None
    try:
        if box is not None:
            result = _run_soon(_sandboxed_help(box, path))
            if result is None:
                return None
            code, out = result
        else:  # no sandbox here: calls refuse anyway, and --help alone is what the user put in their folder
            from workspace.isolation.bubblewrap import safe_environment

            # (with a command's environment, as a command run without the sandbox: no keys, ours not readable)
            proc = subprocess.run([str(path), "--help"], capture_output=True, timeout=HELP_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, check=False, env=safe_environment())
            code, out = proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired, RuntimeError):
        return None
    out = out.strip()
    if code != 0 or not out:
        return None
    if len(out) > HELP_CHARS:
        out = out[:HELP_CHARS].rstrip() + " …"
    return out


def _run_soon(coro: Any) -> Any:
    """Run ``coro`` to its end from synchronous code, in a thread of its own when a loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _sandboxed_help(box: Any, path: Path) -> tuple[int, str] | None:
    import tempfile

    from workspace.isolation import IsolationError

    command, env = _command_for(path, None, ["--help"])
    with tempfile.TemporaryDirectory(prefix="robotlab-script-help-") as tmp:
        try:
            result = await box.run(command, Path(tmp), timeout_s=HELP_TIMEOUT_S, env=env)
        except IsolationError:
            return None
    if result.timed_out or result.exit_code is None:
        return None
    return int(result.exit_code), str(result.output.text)


def _command_for(path: Path, folder: Path | None, argv: list[str]) -> tuple[str, dict[str, str]]:
    """The shell command that runs the script in the sandbox, and the environment it needs."""
    env: dict[str, str] = {}
    resolved = path.resolve()
    if folder is not None and resolved.is_relative_to(folder.resolve()):
        target = shlex.quote(str(resolved))
    else:
        try:
            data = read_bounded(resolved, MAX_SCRIPT_BYTES, "script tool")
        except FileLimitError as exc:
            raise ScriptToolError(f"{exc}; a script tool outside the opened folder may be at most "
                                  f"{MAX_SCRIPT_BYTES:,} bytes (put it in the folder's .robotlab/tools/)") from None
        env["ROBOTLAB_SCRIPT_SOURCE"] = data.decode("utf-8", "surrogateescape")
        target = '"$s"'
        prefix = ('s=$(mktemp /tmp/robotlab-script.XXXXXX) && printf %s "$ROBOTLAB_SCRIPT_SOURCE" > "$s" && '
                  'chmod +x "$s" && unset ROBOTLAB_SCRIPT_SOURCE && ')
        return prefix + _invocation(target, argv), env
    return _invocation(target, argv), env


def _invocation(target: str, argv: list[str]) -> str:
    args = "".join(" " + shlex.quote(a) for a in argv)
    return f'printf %s "${{ROBOTLAB_TOOL_INPUT:-{{}}}}" | {target}{args}'


class ScriptTool(Tool):
    """An executable file as a tool (see the module's documentation)."""

    __slots__ = ("capabilities", "ceiling", "path", "skill_dir", "uses_args")

    def __init__(self, path: Path, name: str, description: str, parameters: Mapping[str, Any], *,
                 uses_args: bool, capabilities: Mapping[str, Any] | None = None, skill_dir: Path | None = None,
                 ceiling: Ceiling | None = None) -> None:
        self.path = path
        self.uses_args = uses_args
        #: The skill's capabilities (None: not a skill's script) and the user's ceiling they are cut to.
        self.capabilities = dict(capabilities) if capabilities is not None else None
        self.skill_dir = skill_dir
        self.ceiling = ceiling or Ceiling()
        timeout = self.ceiling.timeout_s if self.capabilities is not None else SCRIPT_TIMEOUT_S
        super().__init__(name, description, parameters, self._call,
                         annotations={"readOnlyHint": False, "destructiveHint": True}, timeout=timeout + 30)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, capabilities: Any = None,
                  skill_dir: Any = None, ceiling: Ceiling | None = None) -> ScriptTool | None:
        """The tool for the executable at ``path``; None (with a warning) when it is not executable.
        ``capabilities`` (a skill's, RobotLab's keys) confine each call in the sandbox, cut to ``ceiling`` (the
        configuration's ``sandbox`` settings: :mod:`workspace.tools.capabilities`); ``skill_dir`` stays readable.
        A capability that cannot be read raises :class:`ScriptToolError` naming the key."""
        p = Path(path)
        caps: dict[str, Any] | None = None
        if capabilities:
            from workspace.tools.capabilities import CapabilityError, check_capabilities

            caps = dict(capabilities)
            where = str(Path(skill_dir) / "SKILL.md") if skill_dir is not None else str(p)
            try:
                check_capabilities(caps, where=where)
            except CapabilityError as exc:
                raise ScriptToolError(str(exc)) from None
        made = cls._made(p)
        if made is None:
            return None
        name, description, schema, uses_args = made
        return cls(p, name, description, schema, uses_args=uses_args, capabilities=caps,
                   skill_dir=Path(skill_dir) if skill_dir is not None else None, ceiling=ceiling)

    @staticmethod
    def _made(p: Path) -> tuple[str, str, dict[str, Any], bool] | None:
        """The script's name, description, parameters and whether it takes ``args``; None when not executable."""
        if not p.is_file() or not os.access(p, os.X_OK):
            log.warning("ScriptTool: %s is not executable, skipping", p.name)
            return None
        try:
            text = read_text_bounded(p, SCRIPT_HEAD_BYTES, "script tool", errors="replace", head=True)
        except (OSError, FileLimitError) as exc:
            log.warning("ScriptTool: %s cannot be read (%s), skipping", p.name, exc)
            return None
        name = tool_name_for(p)
        spec = _front_matter(text, p)
        if spec is None:
            spec = _sidecar(p)
        if spec is not None:
            description = spec.get("description")
            if description is not None and not isinstance(description, str):
                raise ScriptToolError(f"{p}: description must be text")
            schema = _schema(spec, p)
            uses_args = "args" in schema["properties"] and spec.get("parameters") is None
            return name, description or _first_comment(text) or name, schema, uses_args
        description = _help_text(p) or _first_comment(text) or name
        return name, description, dict(_ARGS_SCHEMA), True

    def _argv(self, arguments: Mapping[str, Any]) -> list[str]:
        if not self.uses_args:
            return []
        raw = arguments.get("args")
        return shlex.split(raw) if isinstance(raw, str) and raw.strip() else []

    def command(self, arguments: Mapping[str, Any], folder: Path | None = None) -> str:
        """What a call with ``arguments`` runs, as the approval policy and the user see it."""
        shown = str(self.path)
        if folder is not None and self.path.resolve().is_relative_to(folder.resolve()):
            shown = str(self.path.resolve().relative_to(folder.resolve()))
        argv = self._argv(arguments)
        line = shlex.join([shown, *argv])
        extra = {k: v for k, v in arguments.items() if not (self.uses_args and k == "args")}
        return line + (f" <<< {json.dumps(extra, ensure_ascii=False)}" if extra else "")

    async def _call(self, arguments: dict[str, Any], context: ToolContext | None = None) -> Any:
        from workspace.tools.commands import NO_FOLDER, run_in_sandbox

        if context is None or (context.folder is None and context.changes is None):
            return ToolOutput(NO_FOLDER, is_error=True)
        folder = Path(context.folder if context.folder is not None else context.changes.folder)
        try:
            command, env = _command_for(self.path, folder, self._argv(arguments))
        except (ScriptToolError, OSError, ValueError) as exc:
            return ToolOutput(f"The script could not be run: {exc}", is_error=True)
        env["ROBOTLAB_TOOL_INPUT"] = json.dumps(arguments, ensure_ascii=False)
        if self.capabilities is None:
            return await run_in_sandbox(command, context, env=env, tool_name=self.name)
        from workspace.tools.capabilities import CapabilityError, script_limits

        try:
            limits = script_limits(self.capabilities, self.ceiling, skill_dir=self.skill_dir, folder=folder,
                                   where=str((self.skill_dir or self.path.parent) / "SKILL.md"))
        except CapabilityError as exc:
            return ToolOutput(f"The script could not be run: {exc}", is_error=True)
        return await run_in_sandbox(command, context, env=env, tool_name=self.name, timeout_s=limits.timeout_s,
                                    grant=limits.grant, limits_note=limits.describe())
