"""Proposing writes: write_file, create_file, edit_file (search/replace), delete_file, rename_file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workspace.diffing import TextFormat, sniff, split_lines, strip_eol, unified_diff
from workspace.sandbox import display_path
from workspace.tools.base import ToolContext, ToolOutput
from workspace.tools.files.common import (
    MAX_DIFF_CHARS,
    MAX_EDIT_BYTES,
    Refused,
    _existing,
    _guard,
    _text_of,
    _Workspace,
    _workspace,
)

if TYPE_CHECKING:
    from workspace.changes import FileChange



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

        emit(ChangeProposed(change_set_id=changes.id, files=[fc.summary()],
             tool_id=context.call_id if context is not None else None))
    diff = _diff_preview(rel, before, after, new_rel)
    stats = f"+{fc.added} -{fc.removed} in {len(fc.hunks)} hunk{'s' if len(fc.hunks) != 1 else ''}"
    out: dict[str, Any] = {"path": rel, "action": fc.action, "change_set_id": changes.id, "diff": diff}
    if new_rel:
        out["new_path"] = new_rel
    if changes.mode == "auto":
        result = changes.last_result
        if emit is not None and result is not None:
            from workspace.events import ChangeDecided

            emit(ChangeDecided(change_set_id=changes.id, outcome=result.outcome,
                 checkpoint_id=result.checkpoint_id))
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
