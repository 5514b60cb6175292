"""A skill's ``capabilities`` (RobotLab's ``fs_read``, ``fs_write``, ``network``, ``timeout``) made what its
scripts may do in the sandbox, never above the user's ceiling (the configuration's ``sandbox`` settings).

A skill that declares none of ``fs_read``, ``fs_write`` and ``network`` runs its scripts as every script tool
runs: the whole folder seen and writable (the writes proposed), loopback only. One that declares any of them is
confined (RobotLab's grant: what it does not declare, it does not get): only its ``fs_read`` and ``fs_write``
paths of the folder are there (and its own folder, when it is inside the opened one), only the ``fs_write`` ones
writable, the host's network only with ``network: true``. Each is cut to the ceiling: a path is kept when it is,
or lies under, a ceiling path; the network when both say so; the time limit is the smaller of the two. Paths are
relative to the opened folder (``"."``: all of it). A bad value is refused naming the SKILL.md key and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from workspace.isolation.base import Grant

#: The ceiling's time limit when the configuration does not set one (the sandbox's default), in seconds.
DEFAULT_TIMEOUT_S = 120.0
#: The longest time limit a ceiling may give (``run_command``'s longest), in seconds.
MAX_TIMEOUT_S = 600.0


class CapabilityError(ValueError):
    """A skill's capability cannot be read; the message names the key and the fix."""


def _paths(value: Any, key: str, where: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(p, str) and p.strip() for p in items):
        raise CapabilityError(f"{where}: {key} must be a list of folder-relative paths, e.g. {key}: [out/]")
    out: list[str] = []
    for item in items:
        path = PurePosixPath(item.strip())
        if path.is_absolute() or ".." in path.parts or item.strip().startswith("~"):
            raise CapabilityError(f"{where}: {key} entry {item!r} must be a path inside the opened folder, relative "
                                  f"to it (e.g. out/ or docs/notes); '.' is the whole folder")
        out.append(str(path))
    return tuple(out)


def _timeout(value: Any, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise CapabilityError(f"{where}: {key} must be a positive number of seconds, e.g. {key}: 30")
    return float(value)


@dataclass(frozen=True)
class Ceiling:
    """The most a skill's script may be given: the configuration's ``sandbox`` settings."""

    read: tuple[str, ...] = (".",)
    write: tuple[str, ...] = (".",)
    network: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_config(cls, config: Any) -> Ceiling:
        """The ceiling of ``config`` (a :class:`~workspace.config.Config`; None: the defaults)."""
        if config is None:
            return cls()
        where = "the configuration's sandbox settings"
        get = config.get
        return cls(read=_paths(get("sandbox.fs_read", ["."]), "sandbox.fs_read", where),
                   write=_paths(get("sandbox.fs_write", ["."]), "sandbox.fs_write", where),
                   network=get("sandbox.network", False) is True,
                   timeout_s=min(_timeout(get("sandbox.timeout", DEFAULT_TIMEOUT_S), "sandbox.timeout", where),
                                 MAX_TIMEOUT_S))


def _within(path: str, roots: tuple[str, ...]) -> bool:
    if "." in roots:
        return True
    parts = PurePosixPath(path).parts
    return any(parts[:len(PurePosixPath(r).parts)] == PurePosixPath(r).parts for r in roots)


@dataclass(frozen=True)
class ScriptLimits:
    """What one skill script may do: the sandbox's grant (None: as every script tool, the whole folder) and its
    time limit; ``refused`` says what the skill asked for that the ceiling did not give."""

    grant: Grant | None
    timeout_s: float
    refused: tuple[str, ...] = ()

    def describe(self) -> str:
        """What the script may do, for the model when a script fails or is stopped."""
        what = self.grant.describe() if self.grant is not None else "the whole folder; network: none (loopback only)"
        text = f"This script runs within its skill's capabilities ({what}; time limit {self.timeout_s:g} s)"
        if self.refused:
            text += f"; not given, above the user's sandbox settings: {', '.join(self.refused)}"
        return text + (". Something it tried beyond them fails (\"Read-only file system\", \"No such file or "
                       "directory\", \"Network is unreachable\", or it is stopped at the time limit): change the "
                       "skill's SKILL.md capabilities (fs_read, fs_write, network, timeout), within the user's "
                       "sandbox settings, or do it another way.")


def check_capabilities(capabilities: Mapping[str, Any], *, where: str) -> None:
    """Raise :class:`CapabilityError` naming the key and the fix for a capability that cannot be read."""
    script_limits(capabilities, Ceiling(), where=where)


def script_limits(capabilities: Mapping[str, Any] | None, ceiling: Ceiling, *, where: str = "SKILL.md",
                  skill_dir: Path | None = None, folder: Path | None = None) -> ScriptLimits:
    """The limits of a script of a skill declaring ``capabilities``, cut to ``ceiling`` (see the module)."""
    caps = dict(capabilities or {})
    refused: list[str] = []
    timeout = ceiling.timeout_s
    if caps.get("timeout") is not None:
        asked = _timeout(caps["timeout"], "timeout", where)
        if asked > ceiling.timeout_s:
            refused.append(f"timeout {asked:g} s (the most is {ceiling.timeout_s:g} s)")
        timeout = min(asked, ceiling.timeout_s)
    network = caps.get("network")
    if network is not None and not isinstance(network, bool):
        raise CapabilityError(f"{where}: network must be true or false")
    if not any(key in caps for key in ("fs_read", "fs_write", "network")):
        return ScriptLimits(None, timeout, tuple(refused))
    read = _paths(caps.get("fs_read") or [], "fs_read", where)
    write = _paths(caps.get("fs_write") or [], "fs_write", where)
    if "fs_read" not in caps and "fs_write" not in caps:  # only the network declared: the folder as always
        read, write = (".",), (".",)
    kept_read = tuple(p for p in read if _within(p, ceiling.read))
    kept_write = tuple(p for p in write if _within(p, ceiling.write))
    refused += [f"fs_read {p}" for p in read if p not in kept_read]
    refused += [f"fs_write {p}" for p in write if p not in kept_write]
    if network and not ceiling.network:
        refused.append("network")
    if skill_dir is not None and folder is not None:  # RobotLab: the skill's own folder is always readable
        try:
            own = Path(skill_dir).resolve().relative_to(Path(folder).resolve())
        except ValueError:
            pass
        else:
            kept_read += (own.as_posix(),)
    grant = Grant(read=kept_read, write=kept_write, network=bool(network) and ceiling.network)
    return ScriptLimits(grant, timeout, tuple(refused))
