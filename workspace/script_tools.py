"""Where script tools come from: the user's tools folder, and a trusted folder's ``.robotlab/tools/``.

Each executable there becomes a :class:`~workspace.tools.script.ScriptTool` robots can name (``tools:
[my_check]``); sidecars (``.yaml``, ``.yml``, ``.json``) and hidden files are not tools. A folder's own
tools are used only once the user trusted the folder (:func:`workspace.trust.trusted_by_user`): until then
they are ignored with a notice saying how to trust it. A tool is made once per file version (path,
modification time, size), so ``--help`` is not run again for every run.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from workspace.tools.script import ScriptTool, ScriptToolError, tool_name_for

log = logging.getLogger(__name__)

_CACHE: dict[tuple[str, int, int], ScriptTool | None] = {}


def user_tools_dir() -> Path:
    """The user's tools folder (executables there are tools every robot can name)."""
    from workspace import paths

    return paths.config_dir() / "tools"


def _executables(directory: Path) -> list[Path]:
    """The executable files of ``directory`` that are not sidecars or hidden, sorted."""
    if not directory.is_dir():
        return []
    return [entry for entry in sorted(directory.iterdir())
            if entry.suffix not in (".yaml", ".yml", ".json", ".md") and not entry.name.startswith(".")
            and entry.is_file() and os.access(entry, os.X_OK)]


def _scan(directory: Path) -> list[ScriptTool]:
    tools: list[ScriptTool] = []
    for entry in _executables(directory):
        try:
            stat = entry.stat()
            key = (str(entry.resolve()), stat.st_mtime_ns, stat.st_size)
            if key not in _CACHE:
                _CACHE[key] = ScriptTool.from_path(entry)
            made = _CACHE[key]
        except (ScriptToolError, OSError) as exc:
            log.warning("ScriptTool: %s, skipping", exc)
            continue
        if made is not None:
            tools.append(made)
    return tools


def discover_script_tools(folder: Path | None = None, *,
                          user_dir: Path | None = None) -> tuple[list[ScriptTool], list[str]]:
    """The script tools robots can name: the user's tools folder's, then (in a folder the user trusted)
    the folder's ``.robotlab/tools/`` (a folder tool of the same name as a user tool wins). Returns the
    tools and notices (an untrusted folder's tools are ignored, and the notice says how to trust it)."""
    notices: list[str] = []
    found: dict[str, ScriptTool] = {t.name: t for t in _scan(user_dir if user_dir is not None else user_tools_dir())}
    if folder is not None:
        project = Path(folder) / ".robotlab" / "tools"
        if _executables(project):
            from workspace.trust import trusted_by_user

            if trusted_by_user(Path(folder)):
                found.update((t.name, t) for t in _scan(project))
            else:  # not even --help is run for an untrusted folder's scripts
                names = ", ".join(tool_name_for(p) for p in _executables(project))
                notices.append(f"The script tools in {project} ({names}) are ignored: the folder is not trusted. "
                               f"Run `robotlab trust {folder}` (or use the window's banner) to use them.")
    return list(found.values()), notices
