"""Keep robot-supplied paths inside the folder the user opened.

Every path a file tool receives goes through :meth:`Sandbox.resolve` first. It refuses

- ``..`` that climbs out of the folder (``../secrets``, ``a/../../x``),
- absolute paths outside the folder (absolute paths *inside* it are fine),
- symlinks that point outside the folder, and paths that pass through a symlinked
  directory leaving it,
- NUL bytes, empty paths and (for writes) the repository's ``.git`` internals and the
  folder's own workspace settings in ``.robotlab/``,

with a :class:`~workspace.errors.SandboxError` whose message says how to fix the call.
What comes back is the *real* location (symlinks inside the folder resolved) and its
folder-relative POSIX name, which is the key change sets use; writes always go to the
real location, so a symlink is never replaced by a regular file and never followed out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workspace.errors import SandboxError

#: Folders the listing and search tools skip unless asked for explicitly.
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", ".tox"})
#: Folders nobody may write into through the file tools.
PROTECTED_DIRS = frozenset({".git"})
#: The folder's own workspace settings: robots may read them, never write them (a robot
#: that could would give itself MCP servers and approval rules; see workspace.trust).
WORKSPACE_DIR = ".robotlab"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A path inside the sandbox: ``path`` is absolute and real, ``rel`` is its POSIX name."""

    path: Path
    rel: str

    @property
    def name(self) -> str:
        return self.path.name


def _is_within(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


class Sandbox:
    """The folder the user opened, and the rules for paths robots give."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        given = os.path.abspath(os.fspath(folder))
        if not os.path.isdir(given):
            raise SandboxError(f"The folder '{folder}' does not exist; open an existing folder")
        #: The folder as the user named it (absolute) and its real location.
        self.given = given
        self.root = Path(os.path.realpath(given))
        self._root = str(self.root)

    def __repr__(self) -> str:
        return f"<Sandbox {self._root!r}>"

    # -- resolving ----------------------------------------------------------------------------
    def resolve(self, path: str | os.PathLike[str], *, for_write: bool = False) -> Resolved:
        """The real location of ``path`` (relative to the folder, or absolute inside it)."""
        raw = os.fspath(path)
        if not isinstance(raw, str):
            raise SandboxError("Paths must be text, e.g. 'src/main.py'")
        text = raw.strip()
        if not text:
            raise SandboxError("The path is empty; give a path relative to the opened folder, e.g. 'README.md'")
        if "\x00" in text:
            raise SandboxError("The path contains a NUL character; give a plain path such as 'src/main.py'")
        if text.startswith("~"):
            raise SandboxError(
                f"'{raw}' points into a home folder; only files inside the opened folder can be used. "
                "Give a path relative to it, e.g. 'src/main.py'"
            )
        if os.path.isabs(text):
            lexical = os.path.normpath(text)
            if not (_is_within(lexical, self.given) or _is_within(lexical, self._root)):
                raise SandboxError(
                    f"'{raw}' is outside the opened folder ({self.given}); use a path relative to that "
                    "folder, e.g. 'src/main.py'"
                )
            base = self.given if _is_within(lexical, self.given) else self._root
            rel_lexical = os.path.relpath(lexical, base)
        else:
            rel_lexical = os.path.normpath(text)
        if rel_lexical == os.curdir:
            rel_lexical = ""
        if rel_lexical == os.pardir or rel_lexical.startswith(os.pardir + os.sep):
            raise SandboxError(
                f"'{raw}' climbs out of the opened folder with '..'; only files inside it can be used. "
                "Give a path relative to the folder without leading '..'"
            )
        candidate = os.path.join(self._root, rel_lexical) if rel_lexical else self._root
        real = os.path.realpath(candidate)
        if not _is_within(real, self._root):
            via = self._symlink_on_the_way(rel_lexical)
            where = f" ('{via}' is a symlink to {os.path.realpath(os.path.join(self._root, via))})" if via else ""
            raise SandboxError(
                f"'{raw}' leads outside the opened folder through a symbolic link{where}; robots may only "
                "use files inside the folder. Use the real file inside the folder, or ask the user to copy it in"
            )
        rel = os.path.relpath(real, self._root)
        rel_posix = "" if rel == os.curdir else PurePosixPath(*Path(rel).parts).as_posix()
        if for_write:
            self._check_writable(raw, rel_posix)
        return Resolved(Path(real), rel_posix)

    def _symlink_on_the_way(self, rel: str) -> str | None:
        current = self._root
        parts = Path(rel).parts
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            if os.path.islink(current):
                return PurePosixPath(*parts[: i + 1]).as_posix()
        return None

    def _check_writable(self, raw: str, rel: str) -> None:
        if not rel:
            raise SandboxError(f"'{raw}' is the opened folder itself; give a file path inside it")
        first = rel.split("/", 1)[0]
        # casefold: on macOS and Windows ".GIT/hooks" is ".git/hooks"
        if any(part.casefold() in PROTECTED_DIRS for part in rel.split("/")[:-1]) or first.casefold() in PROTECTED_DIRS:
            raise SandboxError(
                f"'{raw}' is inside the repository's internal '.git' folder, which robots may not change; "
                "edit the project's own files instead"
            )
        if first.casefold() == WORKSPACE_DIR:
            raise SandboxError(
                f"'{raw}' is inside '{WORKSPACE_DIR}', the workspace's own settings for this folder (robots, "
                "MCP servers, approval rules), which robots may not change; tell the user what to change "
                "there and they can edit it themselves"
            )

    def resolve_file(self, path: str | os.PathLike[str]) -> Resolved:
        """Like :meth:`resolve`, and the path must be an existing regular file."""
        res = self.resolve(path)
        if res.path.is_dir():
            raise SandboxError(f"'{os.fspath(path)}' is a folder, not a file; use list_files to see what is in it")
        if not res.path.exists():
            raise SandboxError(
                f"'{os.fspath(path)}' does not exist in the opened folder; check the name with list_files"
            )
        return res

    # -- the other direction --------------------------------------------------------------------
    def abspath(self, rel: str) -> Path:
        """The absolute path of a folder-relative POSIX name (no checks: use for names this class gave)."""
        return self.root.joinpath(*rel.split("/")) if rel else self.root

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The folder-relative POSIX name of an absolute path inside the folder."""
        rel = os.path.relpath(os.fspath(path), self._root)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise SandboxError(f"'{os.fspath(path)}' is outside the opened folder")
        return "" if rel == os.curdir else PurePosixPath(*Path(rel).parts).as_posix()

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """True when ``path`` (absolute) really lies inside the folder, symlinks resolved."""
        return _is_within(os.path.realpath(os.fspath(path)), self._root)

    def check_still_inside(self, rel: str) -> Path:
        """Re-resolve a name given earlier; refuse if a symlink now sends it elsewhere.

        Change sets call this right before writing, so a symlink created between the
        proposal and the apply cannot redirect the write.
        """
        res = self.resolve(rel, for_write=True)
        if res.rel != rel:
            raise SandboxError(
                f"'{rel}' now resolves to '{res.rel}' (a symbolic link changed since the change was proposed); "
                "review the change again"
            )
        parent = os.path.realpath(str(res.path.parent))
        if not _is_within(parent, self._root):
            raise SandboxError(f"The folder of '{rel}' now lies outside the opened folder; review the change again")
        return res.path
