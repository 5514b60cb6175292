"""Reading the folder: read_file, list_files, search_files (they see this run's pending proposals)."""

from __future__ import annotations

import fnmatch
import os
import re
from typing import TYPE_CHECKING, Any

from workspace.diffing import sniff, split_lines, strip_eol
from workspace.sandbox import SKIPPED_DIRS, display_path, is_temp_name
from workspace.tools.base import ToolContext
from workspace.tools.files.common import (
    MAX_LIST_ENTRIES,
    MAX_READ_CHARS,
    MAX_READ_LINES,
    MAX_SEARCH_FILE_BYTES,
    MAX_SEARCH_RESULTS,
    Refused,
    _existing,
    _guard,
    _text_of,
    _workspace,
)

if TYPE_CHECKING:
    pass



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
