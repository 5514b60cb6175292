"""Hunks and file changes: one file's proposal (base, proposed content) split into hunks that are
decided one by one, and what merging the decided hunks produces.

Merging works on exact lines, so untouched bytes survive: line endings (CRLF, CR), a missing
final newline, byte-order marks and non-UTF-8 encodings are kept. Binary files are changed as
whole files (one ``file`` hunk), never merged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workspace.changes.errors import ChangeError
from workspace.changes.fileio import sha256
from workspace.diffing import (
    TextFormat,
    changed_blocks,
    pair_lines,
    sniff,
    split_lines,
    strip_eol,
    unified_diff,
)
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from workspace.diffing import InlinePair

#: The decision on a hunk.
PENDING, ACCEPTED, REJECTED = "pending", "accepted", "rejected"

#: Above this many bytes a file is not diffed line by line (one whole-file hunk instead).
MAX_DIFF_BYTES = 32 * 1024 * 1024


@dataclass(eq=False, slots=True)
class Hunk:
    """One place that changed in a file, decided on its own.

    ``kind`` is ``"lines"`` (a block of lines; ``old_start``/``old_end`` index the
    base's lines, ``new_start``/``new_end`` the proposal's, 0-based, end exclusive),
    ``"rename"`` (the file moves to ``FileChange.new_path``) or ``"file"`` (the whole
    file at once: binary files, empty files).
    """

    id: str
    path: str
    kind: str
    index: int
    old_start: int = 0
    old_end: int = 0
    new_start: int = 0
    new_end: int = 0
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)
    status: str = PENDING
    #: The user's reason for rejecting (or a note on an acceptance).
    reason: str | None = None
    #: The user's replacement for ``new_lines`` (set by :meth:`ChangeSet.edit_hunk`).
    edited_lines: list[str] | None = None
    #: False when the hunk was rejected only because nobody decided before applying.
    reviewed: bool = True
    _inline: list[InlinePair] | None = None

    @property
    def edited(self) -> bool:
        return self.edited_lines is not None

    @property
    def final_lines(self) -> list[str]:
        """The lines this hunk puts in the file when accepted (the user's edit if any)."""
        return self.edited_lines if self.edited_lines is not None else self.new_lines

    @property
    def added(self) -> int:
        return len(self.final_lines) if self.kind == "lines" else 0

    @property
    def removed(self) -> int:
        return len(self.old_lines) if self.kind == "lines" else 0

    @property
    def number(self) -> int:
        """1-based position in the file (what people and models are told)."""
        return self.index + 1

    @property
    def decided(self) -> bool:
        return self.status != PENDING

    def header(self) -> str:
        """``@@ -a,b +c,d @@`` (line numbers 1-based, as in a unified diff)."""
        if self.kind != "lines":
            return f"@@ {self.kind} @@"

        def rng(start: int, count: int) -> str:
            first = start + 1 if count else start
            return f"{first}" if count == 1 else f"{first},{count}"

        return f"@@ -{rng(self.old_start, self.old_end - self.old_start)} +" \
               f"{rng(self.new_start, self.new_end - self.new_start)} @@"

    def where(self) -> str:
        """Human location in the base file: ``line 7``, ``lines 7-9``, ``after line 6``."""
        if self.kind == "rename":
            return "the rename"
        if self.kind == "file":
            return "the whole file"
        if self.old_end > self.old_start:
            if self.old_end - self.old_start == 1:
                return f"line {self.old_start + 1}"
            return f"lines {self.old_start + 1}-{self.old_end}"
        return "the start of the file" if self.old_start == 0 else f"after line {self.old_start}"

    def inline(self) -> list[InlinePair]:
        """Paired old/new lines with the changed character spans (computed on first use)."""
        if self._inline is None:
            self._inline = pair_lines(self.old_lines, self.final_lines) if self.kind == "lines" else []
        return self._inline

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "index": self.index, "kind": self.kind, "status": self.status,
            "reason": self.reason, "edited": self.edited, "reviewed": self.reviewed,
            "old_start": self.old_start + 1, "old_count": self.old_end - self.old_start,
            "new_start": self.new_start + 1, "new_count": self.new_end - self.new_start,
            "added": self.added, "removed": self.removed,
        }
        if self.edited_lines is not None:
            out["final_text"] = "".join(strip_eol(x) + "\n" for x in self.edited_lines)
        return out

    def _key(self) -> tuple[Any, ...]:
        return (self.kind, self.old_start, self.old_end, tuple(self.old_lines), tuple(self.new_lines))


def _diff_name(prefix: str, rel: str) -> str:
    """A diff header's file name; one with control or bidi characters escaped and quoted, as git
    does, so it can never break the header onto lines of its own."""
    shown = display_path(rel)
    return f"{prefix}{rel}" if shown == rel else f'"{prefix}{shown}"'


@dataclass(slots=True)
class Merge:
    """What applying a file's decided hunks produces."""

    #: The path the content ends up at (``new_path`` if the rename was accepted).
    target: str
    #: The content (None: the file is gone).
    data: bytes | None
    #: Anything to write or move at all.
    changed: bool
    #: At least one hunk accepted.
    accepted: bool


@dataclass(eq=False)
class FileChange:
    """One file's proposed change: the base (disk at proposal time), the proposal, its hunks.

    ``action`` is ``create``, ``modify``, ``delete`` or ``rename``. ``state`` moves from
    ``pending`` to ``applied`` (something accepted was written), ``rejected`` (nothing
    accepted, nothing written), ``conflict`` (skipped because the file changed on disk)
    or ``failed`` (auto mode only: the immediate write failed; nothing was changed).
    """

    id: str
    path: str
    before: bytes | None
    after: bytes | None
    new_path: str | None = None
    before_mode: int | None = None
    state: str = PENDING
    #: A file-level note: the user's reason for rejecting the whole file, or a conflict's cause.
    reason: str | None = None
    tool_ids: list[str] = field(default_factory=list)
    #: The user replaced the proposed text of the whole file (:meth:`ChangeSet.set_file_text`).
    user_edited: bool = False
    conflict: Conflict | None = None
    format: TextFormat | None = None
    old_lines: list[str] | None = None
    new_lines: list[str] | None = None
    hunks: list[Hunk] = field(default_factory=list)
    _counter: int = 0
    before_hash: str | None = None

    def __post_init__(self) -> None:
        self.before_hash = sha256(self.before) if self.before is not None else None
        self.recompute()

    # -- description --------------------------------------------------------------------------
    @property
    def action(self) -> str:
        if self.before is None:
            return "create"
        if self.new_path is not None:
            return "rename"
        if self.after is None:
            return "delete"
        return "modify"

    @property
    def target(self) -> str:
        """The path the proposal puts the file at."""
        return self.new_path or self.path

    @property
    def display_path(self) -> str:
        """The path (``old → new`` for a rename) as people may see it: control, format and bidi
        characters escaped (:func:`workspace.sandbox.display_path`)."""
        return display_path(f"{self.path} → {self.new_path}" if self.new_path else self.path)

    @property
    def binary(self) -> bool:
        return self.format is None

    @property
    def added(self) -> int:
        return sum(h.added for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(h.removed for h in self.hunks)

    @property
    def pending(self) -> bool:
        return self.state == PENDING

    def counts(self) -> dict[str, int]:
        out = {PENDING: 0, ACCEPTED: 0, REJECTED: 0}
        for h in self.hunks:
            out[h.status] += 1
        return {"hunks": len(self.hunks), **out, "added": self.added, "removed": self.removed}

    # -- hunks --------------------------------------------------------------------------------
    def _next_id(self) -> str:
        self._counter += 1
        return f"{self.id}.h{self._counter}"

    def recompute(self) -> None:
        """(Re)build the hunks from before/after, keeping decisions on hunks that did not change."""
        previous = {h._key(): h for h in self.hunks}
        fmt = sniff(self.before) if self.before is not None else (
            sniff(self.after) if self.after is not None else TextFormat())
        old_text = new_text = None
        if fmt is not None:
            try:
                old_text = fmt.decode(self.before) if self.before is not None else ""
                new_text = fmt.decode(self.after) if self.after is not None else ""
                if self.after is not None and fmt.encode(new_text) != self.after:
                    fmt = None
            except (UnicodeDecodeError, UnicodeEncodeError):
                fmt = None
        size = max(len(self.before or b""), len(self.after or b""))
        self.format = fmt
        hunks: list[Hunk] = []

        def make(kind: str, **kw: Any) -> Hunk:
            hunk = Hunk(id="", path=self.path, kind=kind, index=len(hunks), **kw)
            old = previous.pop(hunk._key(), None)
            if old is not None:
                hunk.id, hunk.status, hunk.reason = old.id, old.status, old.reason
                hunk.edited_lines, hunk.reviewed = old.edited_lines, old.reviewed
            else:
                hunk.id = self._next_id()
            hunks.append(hunk)
            return hunk

        if self.new_path is not None:
            make("rename", old_lines=[self.path], new_lines=[self.new_path])
        if fmt is None or old_text is None or new_text is None or size > MAX_DIFF_BYTES:
            self.old_lines = self.new_lines = None
            if self.before != self.after:
                make("file")
        else:
            self.old_lines = split_lines(old_text)
            self.new_lines = split_lines(new_text)
            for _, i1, i2, j1, j2 in changed_blocks(self.old_lines, self.new_lines):
                make("lines", old_start=i1, old_end=i2, new_start=j1, new_end=j2,
                     old_lines=self.old_lines[i1:i2], new_lines=self.new_lines[j1:j2])
            if not any(h.kind == "lines" for h in hunks) and (self.before is None) != (self.after is None):
                make("file")  # creating or deleting an empty file
        self.hunks = hunks

    def hunk(self, hunk_id: str) -> Hunk:
        for h in self.hunks:
            if h.id == hunk_id:
                return h
        raise KeyError(f"No hunk {hunk_id!r} in {self.path}")

    def context(self, hunk: Hunk, lines: int = 3) -> tuple[list[str], list[str]]:
        """Unchanged base lines just before and after a ``lines`` hunk (for the view)."""
        if hunk.kind != "lines" or self.old_lines is None:
            return [], []
        return (self.old_lines[max(0, hunk.old_start - lines): hunk.old_start],
                self.old_lines[hunk.old_end: hunk.old_end + lines])

    # -- merging ------------------------------------------------------------------------------
    def merge(self, *, pending: str = REJECTED) -> Merge:
        """The result of the decided hunks (``pending`` hunks count as ``pending``)."""

        def ok(h: Hunk) -> bool:
            status = h.status if h.status != PENDING else pending
            return status == ACCEPTED

        rename_ok = any(h.kind == "rename" and ok(h) for h in self.hunks)
        target = self.new_path if (rename_ok and self.new_path) else self.path
        content = [h for h in self.hunks if h.kind != "rename"]
        accepted = rename_ok or any(ok(h) for h in content)
        data: bytes | None
        if not content:
            data = self.before
        elif content[0].kind == "file":
            h = content[0]
            if ok(h) and h.edited_lines is not None:
                data = self.encode("".join(h.edited_lines))
            else:
                data = self.after if ok(h) else self.before
        elif all(ok(h) and not h.edited for h in content):
            data = self.after
        elif not any(ok(h) for h in content):
            data = self.before
        else:
            assert self.old_lines is not None
            out: list[str] = []
            i = 0
            for h in content:
                out.extend(self.old_lines[i:h.old_start])
                out.extend(h.final_lines if ok(h) else h.old_lines)
                i = h.old_end
            out.extend(self.old_lines[i:])
            data = self.encode("".join(out))
        changed = target != self.path or data != self.before
        return Merge(target=target, data=data, changed=changed, accepted=accepted)

    def user_text(self, text: str, *, hint: str = "") -> str:
        """The user's ``text`` for this file, in its newline style. :class:`ChangeError` when the file
        is binary or its encoding cannot hold the text (``hint`` ends that message)."""
        fmt = self.format
        if fmt is None:
            raise ChangeError(f"{self.path} is a binary file; its content cannot be edited here")
        converted = fmt.with_newlines(text)
        bad = fmt.can_encode(converted)
        if bad is not None:
            raise ChangeError(f"{self.path} is stored as {fmt.encoding}, which cannot hold {bad!r}{hint}")
        return converted

    def encode(self, text: str) -> bytes:
        """``text`` in the file's encoding (UTF-8 for binary files)."""
        fmt = self.format or TextFormat()
        return fmt.encode(text)

    def text(self, which: str = "after") -> str | None:
        """Decoded ``before``/``after``/``merged`` text (None if absent or binary)."""
        data = {"before": self.before, "after": self.after}.get(which)
        if which == "merged":
            data = self.merge().data
        if data is None or self.format is None:
            return None
        return self.format.decode(data)

    def unified_diff(self, *, merged: bool = False, context: int = 3) -> str:
        """The proposal (or, with ``merged``, the decided result) as a unified diff."""
        old_name = _diff_name("a/", self.path) if self.before is not None else "/dev/null"
        after = self.merge().data if merged else self.after
        target = self.merge().target if merged else self.target
        new_name = _diff_name("b/", target) if after is not None else "/dev/null"
        head = ""
        if target != self.path:
            head = f"rename from {display_path(self.path)}\nrename to {display_path(target)}\n"
        if self.format is None:
            if self.before == after:
                return head
            return head + f"Binary files {old_name} and {new_name} differ\n"
        old = self.old_lines or []
        if not merged and self.new_lines is not None:
            new = self.new_lines
            opcodes = [("replace", h.old_start, h.old_end, h.new_start, h.new_end)
                       for h in self.hunks if h.kind == "lines"]
            body = unified_diff(old, new, old_name=old_name, new_name=new_name, context=context, opcodes=opcodes)
        else:
            new = split_lines(self.format.decode(after)) if after is not None else []
            body = unified_diff(old, new, old_name=old_name, new_name=new_name, context=context)
        if not body and self.before is None and after is not None:
            body = f"--- /dev/null\n+++ {new_name}\n"  # an empty new file
        if not body and after is None and self.before is not None:
            body = f"--- {old_name}\n+++ /dev/null\n"
        return head + body

    # -- reporting ----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """One ``ChangeProposed.files`` entry."""
        out: dict[str, Any] = {"id": self.id, "path": self.path, "action": self.action,
                               "hunks": len(self.hunks), "added": self.added, "removed": self.removed}
        if self.new_path:
            out["new_path"] = self.new_path
        if self.binary:
            out["binary"] = True
        return out

    def outcome(self) -> dict[str, Any]:
        """One ``ChangeDecided.outcome`` entry (hunk indexes are 0-based positions in ``hunks``)."""
        reasons = [h.reason for h in self.hunks if h.status == REJECTED and h.reason]
        reason = self.reason or ("; ".join(dict.fromkeys(reasons)) if reasons else None)
        out: dict[str, Any] = {
            "path": self.path,
            "action": self.action,
            "status": self.state,
            "accepted": [h.index for h in self.hunks if h.status == ACCEPTED],
            "rejected": [h.index for h in self.hunks if h.status == REJECTED],
            "edited": [h.index for h in self.hunks if h.edited],
            "reason": reason,
            "hunks": [h.to_dict() for h in self.hunks],
        }
        if self.new_path:
            out["new_path"] = self.new_path
        if self.user_edited:
            out["user_edited"] = True
        return out

    # -- persistence (ChangeSet.snapshot) -----------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready record of the change and its decisions; contents are named by hash (the
        caller stores them)."""
        return {
            "id": self.id, "path": self.path, "new_path": self.new_path, "before_mode": self.before_mode,
            "before": sha256(self.before) if self.before is not None else None,
            "after": sha256(self.after) if self.after is not None else None,
            "state": self.state, "reason": self.reason, "tool_ids": list(self.tool_ids),
            "user_edited": self.user_edited, "counter": self._counter,
            "hunks": [{"id": h.id, "status": h.status, "reason": h.reason, "reviewed": h.reviewed,
                       "edited_lines": h.edited_lines} for h in self.hunks],
        }

    @classmethod
    def from_snapshot(cls, entry: dict[str, Any], content: Callable[[str], bytes]) -> FileChange:
        """The change a :meth:`snapshot` recorded (same ids and decisions); ``content(hash)`` gives
        the stored contents."""
        before = content(entry["before"]) if entry.get("before") else None
        after = content(entry["after"]) if entry.get("after") else None
        fc = cls(id=entry["id"], path=entry["path"], before=before, after=after,
                 new_path=entry.get("new_path"), before_mode=entry.get("before_mode"))
        fc.state, fc.reason = entry.get("state", PENDING), entry.get("reason")
        fc.tool_ids, fc.user_edited = list(entry.get("tool_ids", [])), bool(entry.get("user_edited"))
        fc._counter = int(entry.get("counter", fc._counter))
        saved = entry.get("hunks", [])
        if len(saved) == len(fc.hunks):
            for h, s in zip(fc.hunks, saved, strict=True):
                h.id, h.status, h.reason = s["id"], s["status"], s.get("reason")
                h.reviewed, h.edited_lines = bool(s.get("reviewed", True)), s.get("edited_lines")
        return fc


@dataclass(slots=True)
class Conflict:
    """A file that changed on disk after the proposal: the three versions, for a three-way view."""

    path: str
    #: What the proposal was made against (None: the file did not exist).
    base: bytes | None
    #: What is on disk now (None: the file is gone).
    disk: bytes | None
    #: What applying the accepted hunks would write (None: delete).
    proposed: bytes | None
    message: str = ""
    file_id: str = ""

    def texts(self) -> tuple[str | None, str | None, str | None]:
        """The three versions decoded (None for absent or binary versions)."""

        def dec(data: bytes | None) -> str | None:
            if data is None:
                return None
            fmt = sniff(data)
            return fmt.decode(data) if fmt is not None else None

        return dec(self.base), dec(self.disk), dec(self.proposed)

    def to_dict(self) -> dict[str, Any]:
        base, disk, proposed = self.texts()
        return {"path": self.path, "message": self.message, "base": base, "disk": disk, "proposed": proposed}


def compare_texts(old: str, new: str, *, name: str = "text") -> FileChange:
    """Hunks (with intra-line spans) between any two texts: two tool results, two runs' answers.

    The returned :class:`FileChange` is only a view model (nothing to apply): the same
    hunks, navigation and unified output as a file's review.
    """
    return FileChange(id="cmp", path=name, before=old.encode(), after=new.encode())

