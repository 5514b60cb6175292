"""Built-in file tools: read, list and search the opened folder; propose writes for review.

Reading tools (``read_file``, ``list_files``, ``search_files``) are read-only. Writing
tools (``write_file``, ``edit_file``, ``apply_patch``, ``create_file``, ``delete_file``,
``rename_file``) never touch disk: they add to the run's :class:`~workspace.changes.ChangeSet`
and tell the model the change awaits the user's review (or was applied, in auto mode;
or was refused, in read-only mode).

**What reads see.** Reads show the folder *as this run's pending proposals leave it*:
a file the robot edited earlier in the run reads back with the edit (and the result
says so in ``pending``), a file it proposed to delete is reported missing, a proposed
new file is listed. That keeps multi-step edits coherent (the second ``edit_file``
matches the text after the first) while the result makes clear nothing is on disk yet.

**Bytes survive.** Files are decoded with their own encoding and edited line-exactly:
CRLF endings, a missing final newline, BOMs and Windows-1252/Latin-1 text stay as they
were outside the edited text; new text adopts the file's newline style. Binary files
are never edited (delete or rename them whole).

**Parallel calls.** Writing tools do their work in a worker thread while holding the
change set's lock (read, compute, propose), so several edits of one file in the same
turn compose; their events are emitted afterwards on the event loop.

Paths are relative to the opened folder (absolute paths inside it work too); anything
outside it is refused (:mod:`workspace.sandbox`), and so are names with control, format or
bidirectional characters for writes. Messages show names through
:func:`~workspace.sandbox.display_path`. The temp files of atomic writes (``*.robotlab-tmp``)
never appear in listings, searches or reads. Errors say how to fix the call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from workspace.diffing import TextFormat, sniff, split_lines, strip_eol, unified_diff
from workspace.errors import SandboxError
from workspace.sandbox import SKIPPED_DIRS, Sandbox, display_path, is_temp_name
from workspace.tools.base import ToolContext, ToolOutput
from workspace.tools.decorator import tool
from workspace.tools.registry import register

if TYPE_CHECKING:
    from workspace.changes import ChangeSet, FileChange

MAX_READ_LINES = 2000
MAX_READ_CHARS = 200_000
MAX_LIST_ENTRIES = 1000
MAX_SEARCH_RESULTS = 500
MAX_SEARCH_FILE_BYTES = 4 * 1024 * 1024
MAX_EDIT_BYTES = 16 * 1024 * 1024
MAX_DIFF_CHARS = 4000

NO_FOLDER = (
    "No folder is open, so there are no files to work with. Ask the user to open a folder "
    "(File > Open Folder in the app, or --folder DIR on the command line)."
)
NO_CHANGE_SET = (
    "This run cannot change files: it has no change set for review. Describe the change to the user instead."
)

F = TypeVar("F", bound=Callable[..., Any])


class Refused(Exception):
    """A call the model can fix; the message says how."""


def _guard(fn: F) -> F:
    """Turn refusals into error results with a plain sentence (no exception type noise)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (Refused, SandboxError) as exc:
            return ToolOutput(str(exc), is_error=True)

    return wrapper  # type: ignore[return-value]


async def _write_in_thread(fn: Callable[..., Any], *args: Any, context: ToolContext | None) -> Any:
    """Run a writing tool's work in a worker thread, holding the change set's lock, and emit its
    events afterwards on the event loop (``ToolContext.emit`` feeds an asyncio queue)."""
    collected: list[tuple[Any, dict[str, Any]]] = []
    local = None
    if context is not None:
        local = dataclasses.replace(context, emit=lambda cls, **fields: collected.append((cls, fields)))

    def work() -> Any:
        changes = context.changes if context is not None else None
        if changes is None:
            return fn(*args, context=local)
        with changes.lock:
            return fn(*args, context=local)

    result = await asyncio.to_thread(work)
    emit = context.emit if context is not None else None
    if emit is not None:
        for cls, fields in collected:
            emit(cls, **fields)
    return result


# -- the workspace of a call --------------------------------------------------------------------


@dataclass(slots=True)
class _Workspace:
    sandbox: Sandbox
    changes: ChangeSet | None
    context: ToolContext | None

    def read(self, rel: str) -> bytes | None:
        """The file as the run's pending proposals leave it (None: absent). Disk reads never follow a
        symlink swapped in on the way (:func:`workspace.changes.fileio.disk_state`)."""
        if self.changes is not None:
            return self.changes.read_bytes(rel)
        from workspace.changes.errors import ChangeError
        from workspace.changes.fileio import disk_state

        try:
            return disk_state(self.sandbox, rel)[0]
        except ChangeError:
            return None

    def pending_note(self, rel: str) -> str | None:
        if self.changes is None:
            return None
        fc = self.changes.pending_change(rel)
        if fc is None:
            return None
        return ("This file has changes proposed in this run that await the user's review; you see the proposed "
                "text, which is not on disk yet.")

    def need_changes(self) -> ChangeSet:
        if self.changes is None:
            raise Refused(NO_CHANGE_SET)
        return self.changes


def _workspace(context: ToolContext | None) -> _Workspace:
    folder = context.folder if context is not None else None
    changes = context.changes if context is not None else None
    if folder is None and changes is not None:
        folder = changes.folder
    if folder is None:
        raise Refused(NO_FOLDER)
    if changes is not None and Path(folder).resolve() == changes.folder:
        sandbox = changes.sandbox
    else:
        sandbox = Sandbox(folder)
    return _Workspace(sandbox, changes, context)


def _text_of(rel: str, data: bytes) -> tuple[str, TextFormat]:
    fmt = sniff(data)
    if fmt is None:
        raise Refused(f"'{display_path(rel)}' is a binary file ({len(data):,} bytes); the file tools read and edit text files "
                      "only. delete_file and rename_file work on binary files")
    return fmt.decode(data), fmt


def _existing(ws: _Workspace, path: str) -> tuple[str, bytes]:
    res = ws.sandbox.resolve(path)
    if res.path.is_dir():
        raise Refused(f"'{display_path(path)}' is a folder, not a file; use list_files to see what is in it")
    data = None if is_temp_name(res.path.name) else ws.read(res.rel)
    if data is None:
        pending = ws.changes.pending_paths().get(res.rel) if ws.changes is not None else None
        if pending:
            raise Refused(f"'{display_path(res.rel)}' is {pending} by a change proposed in this run (awaiting review)")
        raise Refused(f"'{display_path(path)}' does not exist in the opened folder; check the name with list_files")
    return res.rel, data


# -- reading --------------------------------------------------------------------------------------


@_guard
def _read_file(path: str, start_line: int | None = None, end_line: int | None = None,
               context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    rel, data = _existing(ws, path)
    text, fmt = _text_of(rel, data)
    lines = split_lines(text)
    total = len(lines)
    first = 1 if start_line is None else start_line
    last = total if end_line is None else end_line
    if first < 1:
        raise Refused("start_line counts from 1 (the first line); call read_file again with start_line=1 or more")
    if total and first > total:
        raise Refused(f"'{rel}' has {total} lines, so start_line={first} is past its end; use a start_line "
                      f"between 1 and {total}")
    if last < first:
        raise Refused(f"end_line ({last}) is before start_line ({first}); give end_line >= start_line")
    last = min(last, total)
    notes: list[str] = []
    truncated = False
    if last - first + 1 > MAX_READ_LINES:
        last = first + MAX_READ_LINES - 1
        truncated = True
    chunk: list[str] = []
    size = 0
    for n in range(first - 1, last):
        line = strip_eol(lines[n]) + "\n"
        if size + len(line) > MAX_READ_CHARS:
            if not chunk:
                chunk.append(line[:MAX_READ_CHARS] + "\n")
                notes.append(f"Line {n + 1} is very long; only its first {MAX_READ_CHARS:,} characters are shown.")
                last = n + 1
            else:
                last = n
            truncated = True
            break
        chunk.append(line)
        size += len(line)
    if chunk and not lines[last - 1].endswith(("\n", "\r")):
        chunk[-1] = chunk[-1][:-1]
    if truncated and last < total:
        notes.append(f"Showing lines {first}-{last} of {total}; call read_file with start_line={last + 1} to read "
                     "more.")
    out: dict[str, Any] = {"path": rel, "content": "".join(chunk), "start_line": first if total else 0,
                           "end_line": last, "total_lines": total}
    if truncated:
        out["truncated"] = True
    if fmt.encoding != "utf-8" or fmt.bom or fmt.newline != "\n":
        out["format"] = fmt.label
    if total and not fmt.final_newline and last == total:
        notes.append("The file does not end with a newline.")
    pending = ws.pending_note(rel)
    if pending:
        out["pending"] = pending
    if notes:
        out["note"] = " ".join(notes)
    return out


def _skip_dir(name: str) -> bool:
    return name in SKIPPED_DIRS


def _match(pattern: str | None, rel: str) -> bool:
    if not pattern:
        return True
    if "/" in pattern:
        return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern.replace("**/", ""))
    return fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern)


@_guard
def _list_files(path: str = ".", recursive: bool = False, pattern: str | None = None,
                context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    base = ws.sandbox.resolve(path)
    if base.path.is_file():
        raise Refused(f"'{display_path(path)}' is a file, not a folder; use read_file to read it")
    pending = ws.changes.pending_paths() if ws.changes is not None else {}
    if not base.path.is_dir() and not any(p.startswith(base.rel + "/") for p in pending):
        raise Refused(f"The folder '{display_path(path)}' does not exist; use list_files with path='.' to see the "
                      "top level")
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    truncated = False

    def add(entry: dict[str, Any]) -> bool:
        nonlocal truncated
        if len(entries) >= MAX_LIST_ENTRIES:
            truncated = True
            return False
        entries.append(entry)
        return True

    def describe(full: str, rel: str, is_dir: bool) -> dict[str, Any] | None:
        name = rel + "/" if is_dir else rel
        if os.path.islink(full):
            target = os.path.realpath(full)
            entry: dict[str, Any] = {"path": name, "type": "symlink"}
            entry["target"] = ws.sandbox.relative(target) if ws.sandbox.contains(target) else "(outside the folder)"
            return entry
        if is_dir:
            return {"path": name, "type": "dir"}
        try:
            size = os.path.getsize(full)
        except OSError:
            return None
        entry = {"path": rel, "type": "file", "size": size}
        if rel in pending:
            entry["pending"] = pending[rel]
        return entry

    prefix = base.rel + "/" if base.rel else ""
    if base.path.is_dir():
        if recursive:
            for root, dirs, files in os.walk(base.path, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not _skip_dir(d))
                rel_root = ws.sandbox.relative(root)
                rel_prefix = rel_root + "/" if rel_root else ""
                for d in dirs:
                    rel = rel_prefix + d
                    if pattern and not _match(pattern, rel):
                        continue
                    entry = describe(os.path.join(root, d), rel, True)
                    if entry is not None and not add(entry):
                        break
                for f in sorted(files):
                    if is_temp_name(f):  # an interrupted write's temp file: the workspace's, not the user's
                        continue
                    rel = rel_prefix + f
                    seen.add(rel)
                    if not _match(pattern, rel):
                        continue
                    entry = describe(os.path.join(root, f), rel, False)
                    if entry is not None and not add(entry):
                        break
                if truncated:
                    break
        else:
            with os.scandir(base.path) as it:
                items = sorted(it, key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
            for item in items:
                if is_temp_name(item.name):
                    continue
                is_dir = item.is_dir(follow_symlinks=False)
                rel = prefix + item.name
                seen.add(rel)
                if is_dir and _skip_dir(item.name):
                    continue
                if pattern and not _match(pattern, rel):
                    continue
                entry = describe(item.path, rel, is_dir)
                if entry is not None and not add(entry):
                    break
    # Files this run proposed to create (or rename to) show up too.
    for rel, what in sorted(pending.items()):
        if rel in seen or not rel.startswith(prefix):
            continue
        rest = rel[len(prefix):]
        if not recursive and "/" in rest:
            continue
        if what == "deleted" or what.startswith("renamed to"):
            continue
        if _match(pattern, rel):
            data = ws.read(rel)
            add({"path": rel, "type": "file", "size": len(data or b""), "pending": what})
    out: dict[str, Any] = {"path": base.rel or ".", "entries": entries}
    if truncated:
        out["truncated"] = True
        out["note"] = (f"Only the first {MAX_LIST_ENTRIES} entries are shown; list a sub-folder or pass a pattern "
                       "such as '*.py' to see the rest.")
    if any("pending" in e for e in entries):
        out["pending"] = ("Entries marked 'pending' are changes proposed in this run that await the user's review; "
                          "they are not on disk yet.")
    return out


@_guard
def _search_files(query: str, path: str = ".", regex: bool = False, case_sensitive: bool | None = None,
                  pattern: str | None = None, max_results: int = 100, context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    if not query:
        raise Refused("query is empty; give the text (or regex=true pattern) to search for")
    base = ws.sandbox.resolve(path)
    sensitive = case_sensitive if case_sensitive is not None else (query != query.lower())
    flags = 0 if sensitive else re.IGNORECASE
    try:
        matcher = re.compile(query if regex else re.escape(query), flags)
    except re.error as exc:
        raise Refused(f"The regular expression is invalid ({exc}); fix it, or pass regex=false to search for the "
                      "literal text") from None
    limit = max(1, min(int(max_results), MAX_SEARCH_RESULTS))
    pending = ws.changes.pending_paths() if ws.changes is not None else {}
    candidates: list[str] = []
    if base.path.is_file() or (not base.path.exists() and base.rel in pending):
        candidates = [] if is_temp_name(base.path.name) else [base.rel]
    elif base.path.is_dir():
        for root, dirs, files in os.walk(base.path, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not _skip_dir(d))
            rel_root = ws.sandbox.relative(root)
            for f in sorted(files):
                full = os.path.join(root, f)
                if is_temp_name(f) or (os.path.islink(full) and not ws.sandbox.contains(full)):
                    continue
                candidates.append((rel_root + "/" if rel_root else "") + f)
        prefix = base.rel + "/" if base.rel else ""
        known = set(candidates)
        candidates += [p for p, what in sorted(pending.items())
                       if p.startswith(prefix) and p not in known
                       and (what == "created" or what.startswith("renamed from"))]
    else:
        raise Refused(f"'{display_path(path)}' does not exist in the opened folder; use list_files to find the right "
                      "path")
    matches: list[dict[str, Any]] = []
    searched = 0
    skipped = 0
    truncated = False
    for rel in candidates:
        if pattern and not _match(pattern, rel):
            continue
        try:
            file_path = ws.sandbox.abspath(rel)
            if rel not in pending and file_path.stat().st_size > MAX_SEARCH_FILE_BYTES:
                skipped += 1
                continue
            data = ws.read(rel)
        except OSError:
            continue
        if data is None:
            continue
        fmt = sniff(data)
        if fmt is None:
            continue
        searched += 1
        for n, line in enumerate(split_lines(fmt.decode(data)), start=1):
            found = matcher.search(line)
            if found is None:
                continue
            text = strip_eol(line)
            if len(text) > 300:
                start = max(0, found.start() - 100)
                text = ("…" if start else "") + text[start:start + 300] + "…"
            item: dict[str, Any] = {"path": rel, "line": n, "text": text}
            if rel in pending:
                item["pending"] = True
            matches.append(item)
            if len(matches) >= limit:
                truncated = True
                break
        if truncated:
            break
    out: dict[str, Any] = {"query": query, "matches": matches, "files_searched": searched}
    notes = []
    if truncated:
        out["truncated"] = True
        notes.append(f"Stopped after {limit} matches; narrow the search with path or pattern, or raise max_results.")
    if skipped:
        notes.append(f"{skipped} file(s) larger than {MAX_SEARCH_FILE_BYTES // (1024 * 1024)} MB were not searched.")
    if any(m.get("pending") for m in matches):
        notes.append("Matches marked 'pending' are in text proposed in this run, not on disk yet.")
    if notes:
        out["note"] = " ".join(notes)
    return out


# -- writing --------------------------------------------------------------------------------------


def _diff_preview(rel: str, before: bytes | None, after: bytes | None, new_rel: str | None = None) -> str:
    """A short unified diff of one call's change (what the model just proposed)."""
    def lines(data: bytes | None, fmt: TextFormat | None) -> list[str] | None:
        if data is None:
            return []
        if fmt is None:
            return None
        try:
            return split_lines(fmt.decode(data))
        except UnicodeDecodeError:
            return None

    fmt = sniff(before) if before is not None else (sniff(after) if after is not None else None)
    old, new = lines(before, fmt), lines(after, fmt)
    if old is None or new is None:
        return "(binary content)"
    text = unified_diff(old, new, old_name=f"a/{rel}" if before is not None else "/dev/null",
                        new_name=f"b/{new_rel or rel}" if after is not None else "/dev/null", context=2)
    text = text.replace("\r\n", "\n")  # the model sees plain lines; the file keeps its own endings
    if len(text) > MAX_DIFF_CHARS:
        cut = text[:MAX_DIFF_CHARS]
        text = cut[: cut.rfind("\n") + 1] + "… (diff shortened)\n"
    return text


def _proposed(ws: _Workspace, rel: str, verb: str, fc: FileChange | None, before: bytes | None,
              after: bytes | None, *, new_rel: str | None = None) -> Any:
    """The tool result of a write: what was proposed, what happens next. Emits the events."""
    changes = ws.need_changes()
    context = ws.context
    shown = display_path(f"{rel} → {new_rel}" if new_rel else rel)
    if fc is None:
        return {"path": rel, "status": "unchanged", "change_set_id": changes.id,
                "message": f"No change: {shown} already has that content."}
    emit = context.emit if context is not None else None
    if emit is not None:
        from workspace.events import ChangeProposed

        emit(ChangeProposed, change_set_id=changes.id, files=[fc.summary()],
             tool_id=context.call_id if context is not None else None)
    diff = _diff_preview(rel, before, after, new_rel)
    stats = f"+{fc.added} -{fc.removed} in {len(fc.hunks)} hunk{'s' if len(fc.hunks) != 1 else ''}"
    out: dict[str, Any] = {"path": rel, "action": fc.action, "change_set_id": changes.id, "diff": diff}
    if new_rel:
        out["new_path"] = new_rel
    if changes.mode == "auto":
        result = changes.last_result
        if emit is not None and result is not None:
            from workspace.events import ChangeDecided

            emit(ChangeDecided, change_set_id=changes.id, outcome=result.outcome,
                 checkpoint_id=result.checkpoint_id)
        if fc.state == "applied":
            out["status"] = "applied"
            out["message"] = (f"Applied: {verb} {shown} ({stats}). The file on disk now has this change; the user "
                              "can undo it.")
            return out
        reason = fc.reason or (result.error if result is not None else None) or "it could not be written"
        return ToolOutput(f"The change to {shown} was NOT applied: {reason}. Read the file again and retry.",
                          is_error=True)
    out["status"] = "pending_review"
    out["message"] = (f"Proposed: {verb} {shown} ({stats}). It awaits the user's review and is NOT on disk yet; "
                      "later reads in this run show the proposed text. You will be told which hunks the user "
                      "accepted or rejected.")
    return out


def _ctx_ids(context: ToolContext | None) -> dict[str, Any]:
    if context is None:
        return {}
    return {"tool_id": context.call_id or None, "run_id": context.run_id or None, "robot": context.robot or None}


def _encode_for(rel: str, existing: bytes | None, content: str) -> bytes:
    """``content`` encoded like the file it replaces (its codec, BOM and newline style)."""
    if existing is None:
        fmt = TextFormat()
        return fmt.encode(content)
    fmt_or_none = sniff(existing)
    if fmt_or_none is None:
        raise Refused(f"'{rel}' is a binary file; write_file will not overwrite it with text. delete_file it first "
                      "if you really mean to replace it")
    fmt = fmt_or_none
    text = fmt.with_newlines(content)
    bad = fmt.can_encode(text)
    if bad is not None:
        raise Refused(f"'{rel}' is stored as {fmt.encoding}, which cannot hold the character {bad!r}; use "
                      "characters that encoding supports (or an ASCII equivalent)")
    return fmt.encode(text)


@_guard
def _write_file(path: str, content: str, context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    changes = ws.need_changes()
    res = ws.sandbox.resolve(path, for_write=True)
    if res.path.is_dir():
        raise Refused(f"'{display_path(path)}' is a folder; give a file path such as '{display_path(res.rel)}/notes.txt'")
    before = ws.read(res.rel)
    after = _encode_for(res.rel, before, content)
    fc = changes.propose(res.rel, after, **_ctx_ids(context))
    verb = "rewrite" if before is not None else "create"
    return _proposed(ws, res.rel, verb, fc, before, after)


@_guard
def _create_file(path: str, content: str = "", context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    changes = ws.need_changes()
    res = ws.sandbox.resolve(path, for_write=True)
    if res.path.is_dir():
        raise Refused(f"'{display_path(path)}' is a folder; give a file path such as '{display_path(res.rel)}/notes.txt'")
    if ws.read(res.rel) is not None:
        raise Refused(f"'{display_path(res.rel)}' already exists; use edit_file to change part of it or write_file to "
                      "replace it")
    after = TextFormat().encode(content)
    fc = changes.propose(res.rel, after, create=True, **_ctx_ids(context))
    return _proposed(ws, res.rel, "create", fc, None, after)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + text.count("\r", 0, index) - text.count("\r\n", 0, index) + 1


def _not_found_hint(text: str, search: str) -> str:
    import difflib

    lines = [strip_eol(x) for x in split_lines(text)]
    wanted = [strip_eol(x) for x in split_lines(search.replace("\r\n", "\n"))]
    if not wanted:
        return ""
    squeezed = [" ".join(x.split()) for x in lines]
    target = [" ".join(x.split()) for x in wanted]
    for i in range(len(lines) - len(wanted) + 1):
        if squeezed[i:i + len(wanted)] == target:
            return (f" A match that differs only in whitespace/indentation starts at line {i + 1}: copy those lines "
                    "exactly as read_file shows them.")
    first = next((x for x in wanted if x.strip()), "")
    close = difflib.get_close_matches(first, lines, n=1, cutoff=0.6)
    if close:
        n = lines.index(close[0]) + 1
        shown = close[0] if len(close[0]) <= 120 else close[0][:119] + "…"
        return f" The closest line is line {n}: {shown!r}."
    return ""


@_guard
def _edit_file(path: str, search: str, replace: str, replace_all: bool = False,
               context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    changes = ws.need_changes()
    if search == "":
        raise Refused("search is empty; give the exact text to replace (use create_file or write_file for whole "
                      "files)")
    if search == replace:
        raise Refused("search and replace are the same, so nothing would change; give the new text in replace")
    res = ws.sandbox.resolve(path, for_write=True)
    rel, before = _existing(ws, res.rel)
    if len(before) > MAX_EDIT_BYTES:
        raise Refused(f"'{rel}' is too large to edit through the tools ({len(before):,} bytes)")
    text, fmt = _text_of(rel, before)
    variants = [(search, replace)]
    if fmt.newline != "\n":
        variants.append((fmt.with_newlines(search), fmt.with_newlines(replace)))
    found = None
    for s, r in variants:
        count = text.count(s)
        if count:
            found = (s, r, count)
            break
    pending = " (you see the text as your earlier proposals in this run left it)" if ws.pending_note(rel) else ""
    if found is None:
        raise Refused(f"The search text was not found in '{rel}'{pending}. It must match the file exactly, including "
                      "whitespace, indentation and line breaks; read_file the part you want to change and copy it."
                      + _not_found_hint(text, search))
    s, r, count = found
    if count > 1 and not replace_all:
        where: list[str] = []
        start = 0
        capped = False
        while True:
            k = text.find(s, start)
            if k < 0:
                break
            line_no = str(_line_of(text, k))
            if line_no not in where:
                if len(where) == 10:
                    capped = True
                    break
                where.append(line_no)
            start = k + len(s)
        lines = ("line " if len(where) == 1 else "lines ") + ", ".join(where) + (", …" if capped else "")
        raise Refused(f"The search text occurs {count} times in '{rel}' ({lines}). Include more surrounding text "
                      "in search so it matches exactly one place, or set replace_all=true to replace every "
                      "occurrence.")
    new_text = text.replace(s, r) if replace_all else text.replace(s, r, 1)
    bad = fmt.can_encode(new_text)
    if bad is not None:
        raise Refused(f"'{rel}' is stored as {fmt.encoding}, which cannot hold the character {bad!r}; use "
                      "characters that encoding supports (or an ASCII equivalent)")
    after = fmt.encode(new_text)
    fc = changes.propose(rel, after, **_ctx_ids(context))
    verb = f"edit ({count} replacements)" if replace_all and count > 1 else "edit"
    return _proposed(ws, rel, verb, fc, before, after)


@_guard
def _delete_file(path: str, context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    changes = ws.need_changes()
    res = ws.sandbox.resolve(path, for_write=True)
    if res.path.is_dir():
        raise Refused(f"'{display_path(path)}' is a folder; delete_file removes single files (delete the files in it "
                      "one by one)")
    rel, before = _existing(ws, res.rel)
    fc = changes.propose(rel, None, **_ctx_ids(context))
    return _proposed(ws, rel, "delete", fc, before, None)


@_guard
def _rename_file(path: str, new_path: str, context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    changes = ws.need_changes()
    res = ws.sandbox.resolve(path, for_write=True)
    if res.path.is_dir():
        raise Refused(f"'{display_path(path)}' is a folder; rename_file moves single files (move the files in it one "
                      "by one)")
    rel, before = _existing(ws, res.rel)
    dst = ws.sandbox.resolve(new_path, for_write=True).rel
    fc = changes.propose_rename(rel, dst, **_ctx_ids(context))
    return _proposed(ws, rel, "rename", fc, before, before, new_rel=dst)


# -- apply_patch -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _PatchHunk:
    header: str
    old_start: int
    lines: list[tuple[str, str, bool]] = field(default_factory=list)  # (tag, text, ends with newline)


@dataclass(slots=True)
class _FilePatch:
    old: str | None = None
    new: str | None = None
    rename_from: str | None = None
    rename_to: str | None = None
    new_file: bool = False
    deleted: bool = False
    has_headers: bool = False
    hunks: list[_PatchHunk] = field(default_factory=list)

    @property
    def source(self) -> str | None:
        return self.rename_from or self.old

    @property
    def target(self) -> str | None:
        return self.rename_to or self.new


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _patch_path(raw: str, prefix: str) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    if name == "/dev/null":
        return None
    if name.startswith(prefix):
        name = name[len(prefix):]
    return name


def parse_patch(patch: str) -> list[_FilePatch]:
    """Parse a unified diff (plain or git style; several files) leniently: header counts are ignored."""
    lines = patch.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[_FilePatch] = []
    cur: _FilePatch | None = None
    i = 0

    def header_pair(k: int) -> bool:
        return lines[k].startswith("--- ") and k + 1 < len(lines) and lines[k + 1].startswith("+++ ")

    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            cur = _FilePatch()
            files.append(cur)
            m = re.match(r"diff --git a/(.+) b/(.+)$", line)
            if m:
                cur.old, cur.new = m.group(1), m.group(2)
            i += 1
            continue
        if cur is not None and not cur.hunks and not cur.has_headers:
            if line.startswith("rename from "):
                cur.rename_from = line[len("rename from "):].strip()
                i += 1
                continue
            if line.startswith("rename to "):
                cur.rename_to = line[len("rename to "):].strip()
                i += 1
                continue
            if line.startswith("new file mode"):
                cur.new_file = True
                i += 1
                continue
            if line.startswith("deleted file mode"):
                cur.deleted = True
                i += 1
                continue
            if line.startswith(("index ", "similarity index", "dissimilarity index", "old mode", "new mode",
                                "copy from", "copy to")):
                i += 1
                continue
        if header_pair(i):
            if cur is None or cur.hunks or cur.has_headers:
                cur = _FilePatch()
                files.append(cur)
            old_raw, new_raw = lines[i][4:], lines[i + 1][4:]
            old_name, new_name = old_raw.split("\t", 1)[0].strip(), new_raw.split("\t", 1)[0].strip()
            both_prefixed = (old_name.startswith("a/") or old_name == "/dev/null") and \
                (new_name.startswith("b/") or new_name == "/dev/null")
            cur.old = _patch_path(old_raw, "a/" if both_prefixed else "\0")
            cur.new = _patch_path(new_raw, "b/" if both_prefixed else "\0")
            cur.new_file = cur.new_file or cur.old is None
            cur.deleted = cur.deleted or cur.new is None
            cur.has_headers = True
            i += 2
            continue
        if line.startswith("@@"):
            if cur is None:
                raise Refused("The patch has a hunk (@@ ... @@) before any file header; start each file with "
                              "'--- a/PATH' and '+++ b/PATH' lines")
            m = _HUNK_HEADER.match(line)
            hunk = _PatchHunk(header=line, old_start=int(m.group(1)) if m else 0)
            cur.hunks.append(hunk)
            i += 1
            while i < len(lines):
                body = lines[i]
                if body.startswith("@@") or body.startswith("diff --git ") or header_pair(i):
                    break
                if body.startswith("\\"):
                    if hunk.lines:
                        tag, text, _ = hunk.lines[-1]
                        hunk.lines[-1] = (tag, text, False)
                    i += 1
                    continue
                if body == "":
                    hunk.lines.append((" ", "", True))
                elif body[0] in " -+":
                    hunk.lines.append((body[0], body[1:], True))
                else:
                    break
                i += 1
            continue
        if line.strip() == "" or cur is None or not cur.hunks:
            i += 1  # prose before or between files
            continue
        raise Refused(f"Unexpected line {i + 1} in the patch: {line[:80]!r}. Hunk lines start with ' ' (context), "
                      "'-' (removed) or '+' (added)")
    files = [f for f in files if f.hunks or f.rename_to or f.deleted or f.new_file]
    if not files:
        raise Refused("No file changes found in the patch. Give a unified diff: '--- a/PATH', '+++ b/PATH', then "
                      "hunks starting with '@@ -OLD,N +NEW,M @@'")
    return files


def _find_block(keys: list[str], block: list[str], start: int, expected: int) -> int:
    """Where ``block`` occurs in ``keys`` at or after ``start``, nearest to ``expected``; -1 if nowhere."""
    n = len(block)
    if n == 0:
        return max(start, min(expected, len(keys)))
    best = -1
    for strict in (True, False):
        wanted = block if strict else [b.rstrip() for b in block]
        hay = keys if strict else [k.rstrip() for k in keys]
        positions = [i for i in range(start, len(hay) - n + 1) if hay[i] == wanted[0] and hay[i:i + n] == wanted]
        if positions:
            best = min(positions, key=lambda p: abs(p - expected))
            return best
    return best


def _apply_hunks(rel: str, text: str, fmt: TextFormat, hunks: list[_PatchHunk]) -> str:
    lines = split_lines(text)
    keys = [strip_eol(x) for x in lines]
    nl = fmt.newline
    out: list[str] = []

    def append(line: str) -> None:
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += nl
        out.append(line)

    pos = 0
    offset = 0
    for number, hunk in enumerate(hunks, start=1):
        block = [t for tag, t, _ in hunk.lines if tag in " -"]
        expected = max(0, hunk.old_start - 1 + offset) if hunk.old_start else pos
        at = _find_block(keys, block, pos, expected)
        if at < 0:
            shown = "\n".join(block[:6])
            raise Refused(f"Hunk {number} of '{rel}' ({hunk.header.strip()}) does not match the file: these lines "
                          f"were not found{' after the previous hunk' if pos else ''}:\n{shown}\nRead the file "
                          "again (read_file) and make the patch from its current text, or use edit_file for small "
                          "changes. Nothing was changed.")
        for line in lines[pos:at]:
            append(line)
        k = at
        for tag, body, has_nl in hunk.lines:
            if tag == " ":
                append(lines[k])
                k += 1
            elif tag == "-":
                k += 1
            else:
                append(body + (nl if has_nl else ""))
        offset += (len([1 for t, _, _ in hunk.lines if t in " +"]) - len(block))
        pos = k
    for line in lines[pos:]:
        append(line)
    return "".join(out)


@_guard
def _apply_patch(patch: str, context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    changes = ws.need_changes()
    files = parse_patch(patch)
    # Work everything out first: a patch applies completely or not at all.
    planned: list[tuple[str, str | None, bytes | None, bytes | None]] = []  # (rel, new_rel, before, after)
    for fp in files:
        src_name, dst_name = fp.source, fp.target
        if fp.new_file or src_name is None:
            if dst_name is None:
                raise Refused("A file in the patch has /dev/null on both sides; give its path")
            dst = ws.sandbox.resolve(dst_name, for_write=True).rel
            if ws.read(dst) is not None:
                raise Refused(f"The patch creates '{dst}', which already exists; make a patch that modifies it "
                              "(with context lines) instead")
            body = "".join(t + ("\n" if has_nl else "") for h in fp.hunks for tag, t, has_nl in h.lines if tag == "+")
            planned.append((dst, None, None, TextFormat().encode(body)))
            continue
        src = ws.sandbox.resolve(src_name, for_write=True).rel
        rel, before = _existing(ws, src)
        if fp.deleted or dst_name is None:
            planned.append((rel, None, before, None))
            continue
        text, fmt = _text_of(rel, before) if fp.hunks else ("", TextFormat())
        after: bytes | None = before
        if fp.hunks:
            new_text = _apply_hunks(rel, text, fmt, fp.hunks)
            bad = fmt.can_encode(new_text)
            if bad is not None:
                raise Refused(f"'{rel}' is stored as {fmt.encoding}, which cannot hold the character {bad!r}")
            after = fmt.encode(new_text)
        dst = ws.sandbox.resolve(dst_name, for_write=True).rel
        planned.append((rel, dst if dst != rel else None, before, after))
    results = []
    for path_rel, new_rel, old_data, new_data in planned:
        if new_data is None:
            fc = changes.propose(path_rel, None, **_ctx_ids(context))
            results.append(_proposed(ws, path_rel, "delete", fc, old_data, None))
            continue
        fc = None
        if new_data != old_data:
            fc = changes.propose(path_rel, new_data, create=old_data is None, **_ctx_ids(context))
        if new_rel:
            fc = changes.propose_rename(path_rel, new_rel, **_ctx_ids(context))
        verb = "create" if old_data is None else ("rename and edit" if new_rel and new_data != old_data else
                                                  ("rename" if new_rel else "edit"))
        results.append(_proposed(ws, path_rel, verb, fc, old_data, new_data, new_rel=new_rel))
    errors = [r for r in results if isinstance(r, ToolOutput)]
    if errors:
        return ToolOutput(" ".join(str(e.data) for e in errors), is_error=True)
    message = " ".join(str(r.get("message", "")) for r in results)
    return {"files": results, "change_set_id": changes.id, "message": message}


# -- the tools ------------------------------------------------------------------------------------------


@tool(name="read_file", read_only=True)
def read_file(path: str, start_line: int | None = None, end_line: int | None = None,
              context: ToolContext | None = None) -> Any:
    """Read a text file of the opened folder, whole or a range of lines (at most 2000 lines per call).

    Shows the file as this run's pending proposals leave it ("pending" says so).

    Args:
        path: file path relative to the opened folder, e.g. "src/app.py"
        start_line: first line to return, counting from 1 (default: 1)
        end_line: last line to return, inclusive (default: the end of the file)
    """
    return _read_file(path, start_line, end_line, context=context)


@tool(name="list_files", read_only=True)
def list_files(path: str = ".", recursive: bool = False, pattern: str | None = None,
               context: ToolContext | None = None) -> Any:
    """List the files and folders in a folder of the opened folder (skips .git, node_modules, .venv, __pycache__).

    Args:
        path: folder relative to the opened folder (default: its top level ".")
        recursive: also list everything in sub-folders
        pattern: only names matching this glob, e.g. "*.py" or "src/*.md"
    """
    return _list_files(path, recursive, pattern, context=context)


@tool(name="search_files", read_only=True)
def search_files(query: str, path: str = ".", regex: bool = False, case_sensitive: bool | None = None,
                 pattern: str | None = None, max_results: int = 100, context: ToolContext | None = None) -> Any:
    """Search the text files of the opened folder for a string or regular expression; returns matching lines.

    Args:
        query: the text to find (or a Python regular expression with regex=true)
        path: a folder or file to search in, relative to the opened folder (default: everything)
        regex: treat query as a regular expression
        case_sensitive: match case exactly (default: only if the query has capital letters)
        pattern: only search files whose names match this glob, e.g. "*.py"
        max_results: stop after this many matching lines (at most 500)
    """
    return _search_files(query, path, regex, case_sensitive, pattern, max_results, context=context)


@tool(name="write_file", read_only=False, destructive=False)
async def write_file(path: str, content: str, context: ToolContext | None = None) -> Any:
    """Propose the whole content of a file (creating or replacing it). The user reviews it before it is written.

    Prefer edit_file for changing part of an existing file.

    Args:
        path: file path relative to the opened folder
        content: the complete new text of the file
    """
    return await _write_in_thread(_write_file, path, content, context=context)


@tool(name="edit_file", read_only=False, destructive=False)
async def edit_file(path: str, search: str, replace: str, replace_all: bool = False,
              context: ToolContext | None = None) -> Any:
    """Propose replacing an exact piece of text in a file. The user reviews it before it is written.

    search must match the file exactly (whitespace and indentation included) and only once, unless replace_all.

    Args:
        path: file path relative to the opened folder
        search: the exact text to replace, with enough surrounding lines to be unique
        replace: the text to put in its place
        replace_all: replace every occurrence instead of requiring exactly one
    """
    return await _write_in_thread(_edit_file, path, search, replace, replace_all, context=context)


@tool(name="apply_patch", read_only=False, destructive=False)
async def apply_patch(patch: str, context: ToolContext | None = None) -> Any:
    """Propose changes to one or more files as a unified diff. The user reviews them before they are written.

    Use '--- a/PATH' / '+++ b/PATH' headers ('/dev/null' to create or delete), hunks with 3 lines of context;
    git rename headers work too. The whole patch applies or nothing does.

    Args:
        patch: the unified diff text
    """
    return await _write_in_thread(_apply_patch, patch, context=context)


@tool(name="create_file", read_only=False, destructive=False)
async def create_file(path: str, content: str = "", context: ToolContext | None = None) -> Any:
    """Propose a new file (refused if it exists). The user reviews it before it is written.

    Args:
        path: the new file's path relative to the opened folder; missing folders are created
        content: the file's text
    """
    return await _write_in_thread(_create_file, path, content, context=context)


@tool(name="delete_file", read_only=False, destructive=True)
async def delete_file(path: str, context: ToolContext | None = None) -> Any:
    """Propose deleting a file. The user reviews it before anything is deleted.

    Args:
        path: file path relative to the opened folder
    """
    return await _write_in_thread(_delete_file, path, context=context)


@tool(name="rename_file", read_only=False, destructive=False)
async def rename_file(path: str, new_path: str, context: ToolContext | None = None) -> Any:
    """Propose moving or renaming a file. The user reviews it before anything moves.

    Args:
        path: the file's current path relative to the opened folder
        new_path: its new path (must not exist yet); missing folders are created
    """
    return await _write_in_thread(_rename_file, path, new_path, context=context)


FILE_TOOLS = [read_file, list_files, search_files, write_file, edit_file, apply_patch, create_file, delete_file,
              rename_file]
for _tool in FILE_TOOLS:
    register(_tool)
