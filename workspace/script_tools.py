"""Where script tools come from: the user's tools folder, and a trusted folder's ``.robotlab/tools/``.

Each executable there becomes a :class:`~workspace.tools.script.ScriptTool` robots can name (``tools:
[my_check]``); sidecars (``.yaml``, ``.yml``, ``.json``) and hidden files are not tools. A folder's own
tools are used only once the user trusted the folder (:func:`workspace.trust.trusted_by_user`): until then
they are ignored with a notice saying how to trust it. A tool is made once per file version (path,
modification time, size), so ``--help`` is not run again for every run; a folder's listing is kept while
the folder's own modification time says nothing was added, removed or renamed there (as Python's import
system keeps its folders' listings), so a run does not list the folders again.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from pathlib import Path

from workspace.tools.script import ScriptTool, ScriptToolError, tool_name_for

log = logging.getLogger(__name__)

_CACHE: dict[tuple[str, int, int], ScriptTool | None] = {}
#: The config folder last asked about and its tools folder.
_USER_DIR: list[Path] = []
#: The candidate names of a folder by its path: (its inode, its modification time), the names. Bounded.
_LISTINGS: dict[str, tuple[tuple[int, int], list[str]]] = {}
_MAX_LISTINGS = 64
#: A listing made this soon after its folder changed is not kept: a change in the same tick of the file
#: system's clock would leave the modification time as it was (git's "racily clean" entries).
_RACY_NS = 2_000_000_000


def user_tools_dir() -> Path:
    """The user's tools folder (executables there are tools every robot can name)."""
    from workspace import paths

    config = paths.config_dir()
    kept = _USER_DIR
    if kept and kept[0] is config:  # the platform's config folder, kept by workspace.paths: the same path
        return kept[1]
    found = config / "tools"
    _USER_DIR[:] = [config, found]
    return found


def _names(directory: Path) -> list[str]:
    """The names in ``directory`` that may be tools (not sidecars, not hidden), sorted; [] when it is not a
    folder. Listed again only when the folder's modification time (or the folder) changed."""
    try:
        # A folder that is not there (the usual user's tools folder: asked for every run) said by access(), which
        # returns False where stat() raises: no exception made for it on every run.
        if not os.access(directory, os.F_OK):
            return []
        info = os.stat(directory)
    except (OSError, ValueError):
        return []
    if not stat.S_ISDIR(info.st_mode):
        return []
    key = str(directory)
    signature = (info.st_ino, info.st_mtime_ns)
    kept = _LISTINGS.get(key)
    if kept is not None and kept[0] == signature:
        return kept[1]
    names = [entry.name for entry in sorted(directory.iterdir())
             if entry.suffix not in (".yaml", ".yml", ".json", ".md") and not entry.name.startswith(".")]
    if time.time_ns() - info.st_mtime_ns > _RACY_NS:
        if len(_LISTINGS) >= _MAX_LISTINGS:
            _LISTINGS.pop(next(iter(_LISTINGS)))
        _LISTINGS[key] = (signature, names)
    return names


def _executables(directory: Path) -> list[Path]:
    """The executable files of ``directory`` that are not sidecars or hidden, sorted (each file checked every
    time: a script made executable or not since is seen)."""
    return [entry for entry in (directory / name for name in _names(directory))
            if entry.is_file() and os.access(entry, os.X_OK)]


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
            from workspace.trust import trust_command, trusted_by_user

            if trusted_by_user(Path(folder)):
                found.update((t.name, t) for t in _scan(project))
            else:  # not even --help is run for an untrusted folder's scripts
                names = ", ".join(tool_name_for(p) for p in _executables(project))
                notices.append(f"The script tools in {project} ({names}) are ignored: the folder is not trusted. "
                               f"To use them, run {trust_command(folder)}, or use the window's banner.")
    return list(found.values()), notices
