"""Reading the folder: read_file, list_files, search_files (they see this run's pending proposals)."""

from __future__ import annotations

import fnmatch
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from workspace.diffing import sniff, split_lines, strip_eol
from workspace.sandbox import SKIPPED_DIRS, display_path, is_temp_name
from workspace.tools.base import ToolContext
from workspace.tools.files.common import (
    MATCH_SLICE_SECONDS,
    MAX_LIST_ENTRIES,
    MAX_MATCH_SLICE_SECONDS,
    MAX_READ_CHARS,
    MAX_READ_LINES,
    MAX_SEARCH_FILE_BYTES,
    MAX_SEARCH_RESULTS,
    MAX_SEARCH_SECONDS,
    STREAM_BYTES,
    Refused,
    _existing_or_big,
    _guard,
    _text_of,
    _workspace,
)

if TYPE_CHECKING:
    from workspace.tools.files.common import _Workspace



@_guard
def _read_file(path: str, start_line: int | None = None, end_line: int | None = None,
               context: ToolContext | None = None) -> Any:
    ws = _workspace(context)
    if start_line is not None and start_line < 1:
        raise Refused("start_line counts from 1 (the first line); call read_file again with start_line=1 or more")
    rel, found = _existing_or_big(ws, path, stream_bytes=STREAM_BYTES)
    if not isinstance(found, bytes):
        with found:
            return _read_stream(rel, found, start_line, end_line)
    data = found
    text, fmt = _text_of(rel, data)
    lines = split_lines(text)
    total = len(lines)
    first = 1 if start_line is None else start_line
    last = total if end_line is None else end_line
    if not total:
        empty: dict[str, Any] = {"path": rel, "content": "", "start_line": 0, "end_line": 0, "total_lines": 0,
                                 "note": "The file is empty."}
        pending = ws.pending_note(rel)
        if pending:
            empty["pending"] = pending
        return empty
    if first > total:
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


_EOL = re.compile(rb"\r\n|\r|\n")
#: How much of a big file is read at a time, and how much of its start decides its encoding.
_CHUNK = 1 << 20
_HEAD = 1 << 16
#: Codecs whose line ends are the bytes CR and LF (a big file in another codec is refused).
_BYTE_NEWLINES = ("utf-8", "cp1252", "latin-1")


def _eols(data: bytes) -> int:
    """Line ends in ``data`` (CRLF counts once)."""
    if b"\r" not in data:
        return data.count(b"\n")
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _read_stream(rel: str, fh: BinaryIO, start_line: int | None, end_line: int | None) -> dict[str, Any]:
    """read_file of a big file unchanged by this run: only the lines asked for are kept (time grows with
    the file's size, memory does not); the total is counted as it goes."""
    size = os.fstat(fh.fileno()).st_size
    head = fh.read(_HEAD)
    cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
    fmt = sniff(head[: cut + 1] if cut > 0 else head)
    if fmt is None:
        raise Refused(f"'{display_path(rel)}' is a binary file ({size:,} bytes); the file tools read and edit text "
                      "files only. delete_file and rename_file work on binary files")
    if fmt.encoding not in _BYTE_NEWLINES:
        raise Refused(f"'{display_path(rel)}' is a {fmt.encoding} file of {size:,} bytes; read_file reads files of "
                      f"that encoding up to {STREAM_BYTES:,} bytes only")
    first = 1 if start_line is None else start_line
    if end_line is not None and end_line < first:
        raise Refused(f"end_line ({end_line}) is before start_line ({first}); give end_line >= start_line")
    last = first + MAX_READ_LINES - 1 if end_line is None else min(end_line, first + MAX_READ_LINES - 1)
    fh.seek(len(fmt.bom))
    shown: list[bytes] = []
    shown_size = 0
    current = bytearray()  # the line being read, while it is one to show
    long_line = 0  # the number of a line cut because it is very long
    done = False  # every line to show is read: the rest is only counted
    line = 1  # the number of the line the next byte belongs to
    ended = True  # the bytes read so far end a line (or there are none)
    while chunk := fh.read(_CHUNK):
        if chunk.endswith(b"\r"):
            chunk += fh.read(1)  # a CRLF stays in one chunk
        ended = chunk.endswith((b"\n", b"\r"))
        ends = _eols(chunk)
        if done or line + ends < first:
            line += ends
            continue
        pos = 0
        for match in _EOL.finditer(chunk):
            if line >= first:
                current += chunk[pos: min(match.start(), pos + max(MAX_READ_CHARS - len(current), 0))]
                if shown and shown_size + len(current) > MAX_READ_CHARS:
                    done = True  # this line would pass the size limit: shown from the next call
                    break
                if len(current) >= MAX_READ_CHARS:
                    long_line = line
                current += match.group()
                shown.append(bytes(current))
                shown_size += len(current)
                current.clear()
                if line >= last or long_line:
                    line += 1
                    pos = match.end()
                    done = True
                    break
            line += 1
            pos = match.end()
        if done:
            line += _eols(chunk[pos:])
        elif line >= first:
            current += chunk[pos: pos + max(MAX_READ_CHARS - len(current), 0)]
    if current and not done:  # the last line, without a line end
        shown.append(bytes(current))
    total = line - 1 if ended else line
    if total and first > total:
        raise Refused(f"'{rel}' has {total} lines, so start_line={first} is past its end; use a start_line "
                      f"between 1 and {total}")
    if not total:
        return {"path": rel, "content": "", "start_line": 0, "end_line": 0, "total_lines": 0,
                "note": "The file is empty."}
    lines = [fmt_line.decode(fmt.encoding, errors="replace") for fmt_line in shown]
    content = "".join(strip_eol(text) + "\n" for text in lines)
    shown_last = first + len(lines) - 1
    if lines and shown_last == total and not ended:
        content = content[:-1]
    notes = [f"The file is big ({size:,} bytes): read_file shows at most {MAX_READ_LINES} lines or "
             f"{MAX_READ_CHARS:,} characters a call."]
    if long_line:
        notes.append(f"Line {long_line} is very long; only its first {MAX_READ_CHARS:,} characters are shown.")
    wanted = total if end_line is None else min(end_line, total)
    out: dict[str, Any] = {"path": rel, "content": content, "start_line": first, "end_line": shown_last,
                           "total_lines": total}
    if shown_last < wanted:
        out["truncated"] = True
        notes.append(f"Showing lines {first}-{shown_last} of {total}; call read_file with start_line={shown_last + 1} "
                     "to read more.")
    if fmt.encoding != "utf-8" or fmt.bom or fmt.newline != "\n":
        out["format"] = fmt.label
    if not ended and shown_last == total:
        notes.append("The file does not end with a newline.")
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


def _folder_files(ws: _Workspace, top: str | os.PathLike[str], rel_top: str, pending: dict[str, str],
                  ended: Callable[[], bool]) -> Iterator[str]:
    """The files under ``top`` (``rel_top`` in the folder) a search looks at, in :func:`os.walk`'s order (a folder's
    files by name, then each of its sub-folders by name, depth first; skipped folders, temporary files and links
    out of the folder left out), then this run's proposed new files under it. Listed a folder at a time as the
    search goes, so memory holds the largest folder's names and the path down to it, never the tree's; ``ended``
    is asked at every entry listed, so a Stop or the time limit ends the walk inside a folder of any size."""
    stack: list[tuple[str, str]] = [(os.fspath(top), rel_top)]
    walked: set[str] = set()  # this run's pending paths found on disk (the rest are new files, added at the end)
    while stack:
        root, rel_root = stack.pop()
        prefix = rel_root + "/" if rel_root else ""
        files: list[str] = []
        dirs: list[str] = []
        try:
            with os.scandir(root) as entries:
                for entry in entries:
                    if ended():
                        return
                    try:
                        is_dir = entry.is_dir()
                        linked = is_dir and entry.is_symlink()  # (os.walk: a link to a folder is not followed)
                    except OSError:
                        is_dir = linked = False
                    if not is_dir:
                        files.append(entry.name)
                    elif not linked and not _skip_dir(entry.name):
                        dirs.append(entry.name)
        except OSError:
            continue  # (os.walk: a folder that cannot be listed is passed over)
        for name in sorted(files):
            if is_temp_name(name):
                continue
            full = os.path.join(root, name)
            if os.path.islink(full) and not ws.sandbox.contains(full):
                continue
            rel = prefix + name
            if rel in pending:
                walked.add(rel)
            yield rel
        stack.extend((os.path.join(root, d), prefix + d) for d in sorted(dirs, reverse=True))
    prefix = rel_top + "/" if rel_top else ""
    yield from (p for p, what in sorted(pending.items())
                if p.startswith(prefix) and p not in walked and (what == "created" or what.startswith("renamed from")))


class _SlowLine(Exception):
    """A line a regular expression did not match within :data:`MAX_MATCH_SLICE_SECONDS`: skipped, and said."""


@_guard
def _search_files(query: str, path: str = ".", regex: bool = False, case_sensitive: bool | None = None,
                  pattern: str | None = None, max_results: int = 100, context: ToolContext | None = None,
                  stop: threading.Event | None = None) -> Any:
    """``stop``: set when the call is cancelled; looked at between files and lines, and between the slices of
    time a regular expression matches one line in (a backtracking pattern ends a slice after it is set)."""
    ws = _workspace(context)
    stop = stop or threading.Event()
    if not query:
        raise Refused("query is empty; give the text (or regex=true pattern) to search for")
    base = ws.sandbox.resolve(path)
    sensitive = case_sensitive if case_sensitive is not None else (query != query.lower())
    deadline = time.monotonic() + MAX_SEARCH_SECONDS
    search: Any
    if regex:
        # The `regex` module, not `re`: a model's pattern may backtrack for hours on one line ((a|aa)+$), and `re`
        # holds the interpreter's lock meanwhile, so the window freezes with the search. `regex` stops at a time
        # limit and lets go of the lock while it matches.
        import regex as regex_module

        try:
            compiled = regex_module.compile(query, 0 if sensitive else regex_module.IGNORECASE)
        except (regex_module.error, RecursionError, OverflowError, ValueError) as exc:
            raise Refused(f"The regular expression is invalid ({exc}); fix it, or pass regex=false to search for "
                          "the literal text") from None

        def search(line: str) -> Any:
            # In slices of time, each twice the last up to MAX_MATCH_SLICE_SECONDS: a cancelled search's thread ends
            # within a slice (`regex` stops a match at its timeout alone), and a match that takes less than the
            # longest slice takes less than twice again its own time (each slice matches the line from its start).
            # A line that needs more is skipped (_SlowLine, said in the result), the search going on with the next.
            slice_s = MATCH_SLICE_SECONDS
            while True:
                left = deadline - time.monotonic()
                if stop.is_set() or left <= 0:
                    raise TimeoutError
                try:
                    return compiled.search(line, timeout=max(0.001, min(left, slice_s)), concurrent=True)
                except TimeoutError:
                    if slice_s >= MAX_MATCH_SLICE_SECONDS and left > slice_s:
                        raise _SlowLine from None
                    slice_s = min(2 * slice_s, MAX_MATCH_SLICE_SECONDS)
    else:
        search = re.compile(re.escape(query), 0 if sensitive else re.IGNORECASE).search
    limit = max(1, min(int(max_results), MAX_SEARCH_RESULTS))
    pending = ws.changes.pending_paths() if ws.changes is not None else {}

    def ended() -> bool:
        return stop.is_set() or time.monotonic() > deadline

    candidates: Iterator[str]
    if base.path.is_file() or (not base.path.exists() and base.rel in pending):
        candidates = iter([] if is_temp_name(base.path.name) else [base.rel])
    elif base.path.is_dir():
        candidates = _folder_files(ws, base.path, base.rel, pending, ended)
    else:
        raise Refused(f"'{display_path(path)}' does not exist in the opened folder; use list_files to find the right "
                      "path")
    matches: list[dict[str, Any]] = []
    searched = 0
    skipped = 0
    slow: list[str] = []  # "path:line" of the lines too slow to match (regular expressions)
    truncated = False
    out_of_time = time.monotonic() > deadline
    for rel in candidates:
        if out_of_time or time.monotonic() > deadline or stop.is_set():
            out_of_time = True
            break
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
            if stop.is_set():
                out_of_time = True
                break
            try:
                found = search(line)
            except _SlowLine:
                slow.append(f"{rel}:{n}")
                continue
            except TimeoutError:
                out_of_time = True
                break
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
        if truncated or out_of_time:
            break
    out_of_time = out_of_time or (not truncated and ended())  # (the walk ended by the time limit, or Stop)
    out: dict[str, Any] = {"query": query, "matches": matches, "files_searched": searched}
    notes = []
    if out_of_time:
        out["truncated"] = True
        notes.append(f"The search stopped after {MAX_SEARCH_SECONDS:.0f} s, with the matches found by then: narrow it "
                     "with path or pattern" + (", or write the regular expression so it cannot backtrack (no nested "
                                               "repeats such as (a+)+)" if regex else "") + ".")
    if truncated:
        out["truncated"] = True
        notes.append(f"Stopped after {limit} matches; narrow the search with path or pattern, or raise max_results.")
    if slow:
        shown = ", ".join(slow[:5]) + (f" and {len(slow) - 5} more" if len(slow) > 5 else "")
        notes.append(f"{len(slow)} line(s) took the regular expression more than {MAX_MATCH_SLICE_SECONDS:g} s each and "
                     f"were skipped ({shown}): write it so it cannot backtrack (no nested repeats such as (a+)+).")
    if skipped:
        notes.append(f"{skipped} file(s) larger than {MAX_SEARCH_FILE_BYTES // (1024 * 1024)} MB were not searched.")
    if any(m.get("pending") for m in matches):
        notes.append("Matches marked 'pending' are in text proposed in this run, not on disk yet.")
    if notes:
        out["note"] = " ".join(notes)
    return out


# -- writing --------------------------------------------------------------------------------------
