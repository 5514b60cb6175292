"""Keep robot-supplied paths inside the folder the user opened.

Every path a file tool receives goes through :meth:`Sandbox.resolve` first. It refuses

- ``..`` that climbs out of the folder (``../secrets``, ``a/../../x``),
- absolute paths outside the folder (absolute paths *inside* it are fine),
- symlinks that point outside the folder, and paths that pass through a symlinked
  directory leaving it,
- names too long for the file system, symlinks that loop, and paths that go through a file
  as if it were a folder (``README.md/x``), each with its own message instead of the raw OSError,
- a name with a trailing slash that is not a folder (``README.md/`` is not the file ``README.md``),
- NUL bytes, empty paths and (for writes) the repository's ``.git`` internals (whatever the
  case, and with the trailing dots and spaces Windows drops: ``.GIT.``), the
  folder's own workspace settings in ``.robotlab/``, names ending in ``.robotlab-tmp`` (the
  atomic writes' temporary files) and names holding control, format or bidirectional
  characters (a newline or U+202E in a name would let it pose as another file in the review),

with a :class:`~workspace.errors.SandboxError` whose message says how to fix the call.
What comes back is the *real* location (symlinks inside the folder resolved) and its
folder-relative POSIX name, which is the key change sets use; writes always go to the
real location, so a symlink is never replaced by a regular file and never followed out.

The writes themselves (:mod:`workspace.changes.folderio`) happen relative to directory
handles opened without following symbolic links, so a symlink swapped in after these checks
cannot redirect them either. :func:`display_path` shows any name with such characters escaped;
every place that shows a path to people (review, terminal, exports, the window) goes through it.
"""

from __future__ import annotations

import errno
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
#: The suffix of an atomic write's temporary file (``.NAME.XXXXXXXX.robotlab-tmp`` next to the file).
#: Only a process killed mid-write leaves one; listings never show them, recovery removes them.
TEMP_SUFFIX = ".robotlab-tmp"
#: Unicode categories refused in the names robots write and escaped by :func:`display_path`:
#: control (newline, tab, escape…), format (U+202E right-to-left override and the other bidi
#: controls, zero-width characters, U+FEFF), line and paragraph separators, lone surrogates.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
#: The longest name of one file or folder, in bytes (most file systems), and of a whole path.
NAME_MAX = 255
PATH_MAX = 4000
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROL_NAMES = {"\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\t": "CHARACTER TABULATION", "\x1b": "ESCAPE",
                  "\x08": "BACKSPACE", "\x0b": "LINE TABULATION", "\x0c": "FORM FEED", "\x7f": "DELETE",
                  "\x85": "NEXT LINE"}


def _unsafe(ch: str) -> bool:
    import unicodedata

    return unicodedata.category(ch) in UNSAFE_CATEGORIES


def unsafe_character(text: str) -> str | None:
    """The first control, format, bidi or separator character of ``text`` (None: there is none)."""
    if text.isprintable():  # the common case, in C: no Other/Separator character but the space
        return None
    return next((ch for ch in text if _unsafe(ch)), None)


def describe_character(ch: str) -> str:
    """``U+202E (RIGHT-TO-LEFT OVERRIDE)``: how errors name a character."""
    import unicodedata

    name = _CONTROL_NAMES.get(ch) or unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def _escape(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` as people may safely see it: control, format (bidi), separator and surrogate
    characters escaped Python-style (``x\\n--- a/README.md``, ``evil\\u202etxt.exe``), everything
    else unchanged. Use it wherever a path (or a one-line text holding paths) is shown: a name
    with a newline could otherwise forge diff lines in a review, and U+202E reverse what follows.
    """
    text = os.fspath(path)
    if text.isprintable():
        return text
    return "".join(_escape(ch) if _unsafe(ch) else ch for ch in text)


def display_json(text: str) -> str:
    """JSON text with every control, format (bidi), separator and surrogate character inside its
    strings written as a ``\\uXXXX`` escape: the same data when parsed, but nothing in it can
    reorder or break what a terminal or viewer shows (``json.dumps(..., ensure_ascii=False)``
    leaves U+202E, U+2028 and U+0085 as they are)."""
    import unicodedata

    table: dict[int, str] = {}
    for ch in set(text):  # the distinct characters only: fast on large exports
        if ch == "\n" or ch.isprintable() or unicodedata.category(ch) not in UNSAFE_CATEGORIES:
            continue
        code = ord(ch)
        if code > 0xFFFF:  # JSON escapes beyond the BMP as a surrogate pair
            code -= 0x10000
            table[ord(ch)] = f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        else:
            table[code] = f"\\u{code:04x}"
    return text.translate(table) if table else text


def is_temp_name(name: str) -> bool:
    """Whether a file name (the last part of a path) is an atomic write's temporary file."""
    return name.endswith(TEMP_SUFFIX)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A path inside the sandbox: ``path`` is absolute and real, ``rel`` is its POSIX name."""

    path: Path
    rel: str

    @property
    def name(self) -> str:
        return self.path.name


def _plain(name: str) -> str:
    """A name as a case-insensitive file system that drops trailing dots and spaces (Windows) sees it."""
    return name.rstrip(". ").casefold() or name.casefold()


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
        shown = display_path(raw)
        text = raw.strip()
        if not text:
            raise SandboxError("The path is empty; give a path relative to the opened folder, e.g. 'README.md'")
        if "\x00" in text:
            raise SandboxError("The path contains a NUL character; give a plain path such as 'src/main.py'")
        if text.startswith("~"):
            raise SandboxError(
                f"'{shown}' points into a home folder; only files inside the opened folder can be used. "
                "Give a path relative to it, e.g. 'src/main.py'"
            )
        if os.path.isabs(text):
            lexical = os.path.normpath(text)
            if not (_is_within(lexical, self.given) or _is_within(lexical, self._root)):
                raise SandboxError(
                    f"'{shown}' is outside the opened folder ({display_path(self.given)}); use a path relative to that "
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
                f"'{shown}' climbs out of the opened folder with '..'; only files inside it can be used. "
                "Give a path relative to the folder without leading '..'"
            )
        self._check_length(shown, rel_lexical)
        candidate = os.path.join(self._root, rel_lexical) if rel_lexical else self._root
        self._check_reachable(shown, rel_lexical, candidate)
        real = os.path.realpath(candidate)
        if not _is_within(real, self._root):
            via = self._symlink_on_the_way(rel_lexical)
            where = (f" ('{display_path(via)}' is a symlink to "
                     f"{display_path(os.path.realpath(os.path.join(self._root, via)))})") if via else ""
            raise SandboxError(
                f"'{shown}' leads outside the opened folder through a symbolic link{where}; robots may only "
                "use files inside the folder. Use the real file inside the folder, or ask the user to copy it in"
            )
        rel = os.path.relpath(real, self._root)
        rel_posix = "" if rel == os.curdir else PurePosixPath(*Path(rel).parts).as_posix()
        if rel_posix and text.endswith(("/", os.sep)) and (for_write or os.path.exists(real)) \
                and not os.path.isdir(real):
            self._refuse_trailing_slash(shown, rel_posix, real)
        if for_write:
            self._check_writable(shown, rel_posix)
        return Resolved(Path(real), rel_posix)

    @staticmethod
    def _refuse_trailing_slash(shown: str, rel: str, real: str) -> None:
        """``README.md/`` names a folder: never take it for the file ``README.md``."""
        name = display_path(rel)
        if os.path.lexists(real):
            raise SandboxError(f"'{shown}' ends with '/', which names a folder, but '{name}' is a file; give the "
                               f"file's name without the slash: '{name}'")
        raise SandboxError(f"'{shown}' ends with '/', which names a folder, and file tools write files; give a "
                           f"file name such as '{name}/notes.txt' (or '{name}' for a file of that name)")

    def _check_length(self, shown: str, rel: str) -> None:
        longest = max((len(os.fsencode(part)) for part in Path(rel).parts), default=0)
        if longest > NAME_MAX:
            raise SandboxError(f"'{shown[:80]}…' holds a name of {longest} bytes, longer than file systems allow "
                               f"({NAME_MAX}); choose a shorter name")
        if len(os.fsencode(rel)) + len(os.fsencode(self._root)) > PATH_MAX:
            raise SandboxError(f"'{shown[:80]}…' is too long a path ({len(rel):,} characters); choose a shorter one "
                               "with fewer folders")

    def _check_reachable(self, shown: str, rel: str, candidate: str) -> None:
        """Refuse a path through a symlink that loops or through a file, saying which part is wrong."""
        try:
            os.stat(candidate)
        except OSError as exc:
            code = exc.errno
        else:
            return
        if code not in (errno.ELOOP, errno.ENOTDIR, errno.ENAMETOOLONG):
            return  # does not exist (yet): fine
        parts = Path(rel).parts
        current = self._root
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            name = display_path(PurePosixPath(*parts[: i + 1]).as_posix())
            try:
                os.stat(current)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    what = "is" if i == len(parts) - 1 else f"goes through '{name}',"
                    raise SandboxError(f"'{shown}' {what} a symbolic link that loops (it leads back to itself); use "
                                       "the real file or folder instead") from None
                return
            if i < len(parts) - 1 and not os.path.isdir(current):
                raise SandboxError(f"'{shown}' treats '{name}' as a folder, but it is a file; give a path inside a "
                                   "folder (list_files shows which is which)")
        if code == errno.ENAMETOOLONG:
            raise SandboxError(f"'{shown[:80]}…' is too long for the file system; choose a shorter path")

    def _symlink_on_the_way(self, rel: str) -> str | None:
        current = self._root
        parts = Path(rel).parts
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            if os.path.islink(current):
                return PurePosixPath(*parts[: i + 1]).as_posix()
        return None

    def _check_writable(self, raw: str, rel: str) -> None:
        """``raw``: the path as given, already escaped for messages (:func:`display_path`)."""
        if not rel:
            raise SandboxError(f"'{raw}' is the opened folder itself; give a file path inside it")
        bad = unsafe_character(rel)
        if bad is not None:
            raise SandboxError(
                f"'{raw}' contains the character {describe_character(bad)}, which file names may not hold: control, "
                "format and bidirectional characters (newlines, tabs, right-to-left overrides, zero-width "
                "characters) would let the name pose as another file in the review. Choose a name of visible "
                "characters, e.g. 'notes.txt'"
            )
        if is_temp_name(rel.rsplit("/", 1)[-1]):
            raise SandboxError(
                f"'{raw}' ends in '{TEMP_SUFFIX}', which names the workspace's own temporary files (they are "
                "removed after an interrupted write); choose another name"
            )
        first = rel.split("/", 1)[0]
        # casefold and without trailing dots and spaces: on Windows ".git. /hooks" is ".git/hooks"
        if any(_plain(part) in PROTECTED_DIRS for part in rel.split("/")[:-1]) or _plain(first) in PROTECTED_DIRS:
            raise SandboxError(
                f"'{raw}' is inside the repository's internal '.git' folder, which robots may not change; "
                "edit the project's own files instead"
            )
        if _plain(first) == WORKSPACE_DIR:
            raise SandboxError(
                f"'{raw}' is inside '{WORKSPACE_DIR}', the workspace's own settings for this folder (robots, "
                "MCP servers, approval rules), which robots may not change; tell the user what to change "
                "there and they can edit it themselves"
            )

    # -- the other direction --------------------------------------------------------------------
    def abspath(self, rel: str) -> Path:
        """The absolute path of a folder-relative POSIX name (no checks: use for names this class gave)."""
        return self.root.joinpath(*rel.split("/")) if rel else self.root

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The folder-relative POSIX name of an absolute path inside the folder."""
        rel = os.path.relpath(os.fspath(path), self._root)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise SandboxError(f"'{display_path(path)}' is outside the opened folder")
        return "" if rel == os.curdir else PurePosixPath(*Path(rel).parts).as_posix()

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """True when ``path`` (absolute) really lies inside the folder, symlinks resolved."""
        return _is_within(os.path.realpath(os.fspath(path)), self._root)

    def check_still_inside(self, rel: str) -> Path:
        """Re-resolve a name given earlier; refuse if a symlink now sends it elsewhere.

        Change sets call this when checking for conflicts before writing, so a symlink created
        between the proposal and the apply is refused; the write itself then goes through
        directory handles (:mod:`workspace.changes.folderio`), so one swapped in after this check
        cannot redirect it either.
        """
        res = self.resolve(rel, for_write=True)
        if res.rel != rel:
            raise SandboxError(
                f"'{display_path(rel)}' now resolves to '{display_path(res.rel)}' (a symbolic link changed since the "
                "change was proposed); review the change again"
            )
        parent = os.path.realpath(str(res.path.parent))
        if not _is_within(parent, self._root):
            raise SandboxError(f"The folder of '{display_path(rel)}' now lies outside the opened folder; review the "
                               "change again")
        return res.path
