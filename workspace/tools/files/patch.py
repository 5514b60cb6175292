"""Applying a unified diff as proposals (apply_patch): parsing, finding each hunk, the result."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workspace.diffing import TextFormat, split_lines, strip_eol
from workspace.tools.base import ToolContext, ToolOutput
from workspace.tools.files.common import Refused, _existing, _guard, _text_of, _workspace
from workspace.tools.files.writing import _ctx_ids, _proposed

if TYPE_CHECKING:
    pass



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


_GIT_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _git_unquote(text: str) -> tuple[str, str]:
    """A name in git's quoted form at the start of ``text`` (``"caf\\303\\251.md"``: C escapes, octal
    bytes of UTF-8, as git writes when ``core.quotePath`` is on) and what follows it. ``text`` not
    starting with a quote is returned as it is, with nothing after it."""
    if not text.startswith('"'):
        return text, ""
    out = bytearray()
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return os.fsdecode(bytes(out)), text[i + 1:]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _GIT_ESCAPES:
                out.append(_GIT_ESCAPES[nxt])
                i += 2
                continue
            octal = re.match(r"[0-7]{1,3}", text[i + 1:i + 4])
            if octal:
                out.append(int(octal.group(0), 8) & 0xFF)
                i += 1 + len(octal.group(0))
                continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    raise Refused(f"The patch names a file with an opening quote and no closing one: {text[:80]!r}. Write the "
                  "name as git does (\"a/x y.md\") or without quotes")


def _header_name(raw: str) -> str:
    """The file name of a '---' / '+++' / 'rename' line's rest: unquoted, without a timestamp."""
    raw = raw.strip()
    if raw.startswith('"'):
        return _git_unquote(raw)[0]
    return raw.split("\t", 1)[0].strip()


def _git_header_pair(rest: str) -> tuple[str, str] | None:
    """The two names of a ``diff --git`` line (quoted or not); None when they cannot be told apart."""
    if rest.startswith('"'):
        old, after = _git_unquote(rest)
        after = after.strip()
        new = _git_unquote(after)[0] if after.startswith('"') else after
    else:
        m = re.match(r'(a/.+?) ("b/.*"|b/.+)$', rest)
        if m is None:
            return None
        old, new = m.group(1), _header_name(m.group(2))
    if old.startswith("a/") and new.startswith("b/"):
        return old[2:], new[2:]
    return None


def _patch_path(name: str, prefix: str) -> str | None:
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
            pair = _git_header_pair(line[len("diff --git "):])
            if pair:
                cur.old, cur.new = pair
            i += 1
            continue
        if cur is not None and not cur.hunks and not cur.has_headers:
            if line.startswith("rename from "):
                cur.rename_from = _header_name(line[len("rename from "):])
                i += 1
                continue
            if line.startswith("rename to "):
                cur.rename_to = _header_name(line[len("rename to "):])
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
            old_name, new_name = _header_name(lines[i][4:]), _header_name(lines[i + 1][4:])
            both_prefixed = (old_name.startswith("a/") or old_name == "/dev/null") and \
                (new_name.startswith("b/") or new_name == "/dev/null")
            cur.old = _patch_path(old_name, "a/" if both_prefixed else "\0")
            cur.new = _patch_path(new_name, "b/" if both_prefixed else "\0")
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
