"""Telling the model: the review outcome as text, put in front of the next user message.

``format_outcome`` turns ``ChangeDecided.outcome`` (per file: what was accepted, rejected and
why, the user's edits) into the note the model reads; :func:`compose_user_message` puts the note
in a ``<change-review>`` block in front of the user's next message and
:func:`split_user_message` takes it apart again (the transcript shows it as its own block).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from workspace.changes.hunks import ACCEPTED, REJECTED
from workspace.sandbox import display_path


def _hunk_phrase(h: dict[str, Any]) -> str:
    start, count = h["old_start"], h["old_count"]
    if h["kind"] == "rename":
        return "the rename"
    if h["kind"] == "file":
        return "the whole-file change"
    if count == 0:
        where = "at the start" if start <= 1 else f"after line {start - 1}"
    elif count == 1:
        where = f"line {start}"
    else:
        where = f"lines {start}-{start + count - 1}"
    return f"hunk {h['index'] + 1} ({where})"


#: Lines of a verify command's output the model is told (its end: where test runners say what failed).
VERIFY_NOTE_LINES = 60


def _verify_lines(verify: Mapping[str, Any]) -> list[str]:
    what = "the hunks the user accepted" if verify.get("subset") == "accepted" else "your proposed changes"
    command = verify.get("command") or "the verify command"
    if verify.get("passed"):
        return [f"The verify command `{command}` passed on {what}."]
    why = "timed out" if verify.get("timed_out") else f"exit code {verify.get('exit_code')}"
    lines = [f"The verify command `{command}` FAILED on {what} ({why}). Fix what it reports; the end of its output:"]
    shown = str(verify.get("output") or "").splitlines()[-VERIFY_NOTE_LINES:]
    lines.extend("    " + s for s in shown)
    return lines


def format_outcome(outcome: Sequence[dict[str, Any]], *, change_set_id: str | None = None,
                   max_edit_lines: int = 40, verify: Mapping[str, Any] | None = None) -> str:
    """The review outcome as text for the model: per file, what was accepted, rejected and why.

    ``outcome`` is a list of ``FileChange.outcome()`` dicts (what ``ChangeDecided``
    carries), so a session can rebuild the message from stored events alone. ``verify``: the set's
    latest verify (:meth:`ChangeSet.note_verify`), said after the files.
    """
    head = "The user reviewed the file changes you proposed"
    head += f" (change set {change_set_id}):" if change_set_id else ":"
    lines = [head]
    for f in outcome:
        name = display_path(f["path"] + (f" → {f['new_path']}" if f.get("new_path") else ""))
        hunks = f.get("hunks", [])
        status = f.get("status")
        action = f.get("action", "modify")
        if status in ("undone", "redone"):
            lines.append(f"- {name}: the user undid your earlier change to this file; it is back as it was before "
                         "that change." if status == "undone" else
                         f"- {name}: the user redid your earlier change to this file after undoing it; that change "
                         "is on disk again.")
            continue
        if status == "applied" and f.get("undone"):
            lines.append(f"- {name}: applied, then undone by the user: the file is back as it was before, none of "
                         "this change is on disk.")
            continue
        if status in ("conflict", "failed"):
            cause = f.get("reason") or ("the file changed on disk meanwhile" if status == "conflict"
                                        else "it could not be written")
            lines.append(f"- {name}: NOT applied — {cause}. The file is as the user left it; read it again "
                         "before proposing a new change.")
            continue
        accepted = [h for h in hunks if h["status"] == ACCEPTED]
        rejected = [h for h in hunks if h["status"] == REJECTED and h.get("reviewed", True)]
        unreviewed = [h for h in hunks if h["status"] == REJECTED and not h.get("reviewed", True)]
        noun = {"create": "creation", "delete": "deletion", "rename": "rename"}.get(action, "edit")
        if accepted and not rejected and not unreviewed:
            edited = [h for h in accepted if h.get("edited")]
            if f.get("user_edited"):
                lines.append(f"- {name}: accepted after the user rewrote the proposed content; the file on "
                             "disk is the user's version.")
            elif edited:
                lines.append(f"- {name}: {noun} accepted and written; "
                             + ", ".join(_hunk_phrase(h) for h in edited) + " with the user's edits.")
            else:
                total = f" (all {len(accepted)} hunks)" if len(accepted) > 1 else ""
                lines.append(f"- {name}: {noun} accepted and written{total}.")
        elif not accepted and f.get("combined"):
            lines.append(f"- {name}: none of your hunks was taken; the file on disk is as the hunks taken from "
                         "the other candidates (if any, below) made it.")
        elif not accepted:
            reason = f.get("reason")
            why = f' — reason: "{reason}"' if reason else " (no reason given)"
            if unreviewed and not rejected:
                lines.append(f"- {name}: {noun} NOT applied: the user did not accept it. The file is unchanged.")
            else:
                lines.append(f"- {name}: {noun} rejected{why}. The file is unchanged.")
        else:
            parts = []
            for h in hunks:
                phrase = _hunk_phrase(h)
                if h["status"] == ACCEPTED:
                    parts.append(f"{phrase} accepted" + (" with the user's edits" if h.get("edited") else ""))
                elif h.get("reviewed", True):
                    why = f' (reason: "{h["reason"]}")' if h.get("reason") else ""
                    parts.append(f"{phrase} rejected{why}")
                else:
                    parts.append(f"{phrase} not accepted")
            on_disk = (" The file on disk has the accepted hunks and those taken from the other candidates."
                       if f.get("combined") else " The file on disk contains only the accepted hunks.")
            lines.append(f"- {name}: partly applied — " + "; ".join(parts) + "." + on_disk)
        for h in hunks:
            text = h.get("final_text")
            if h.get("edited") and text:
                shown = text.splitlines()[:max_edit_lines]
                lines.append(f"  The user's version of {_hunk_phrase(h)}:")
                lines.extend("    " + s for s in shown)
    # A combined review (several candidates answered one message): which hunks of whose were taken.
    lines.extend(dict.fromkeys(str(f["combined"]) for f in outcome if f.get("combined")))
    if verify:
        lines.extend(_verify_lines(verify))
    lines.append("Read a file again before changing it further: the files on disk are the source of truth.")
    return "\n".join(lines)


def compose_user_message(note: str | None, message: str) -> str:
    """The next user message with the review outcome in front (what the session sends)."""
    if not note:
        return message
    return f"<change-review>\n{note}\n</change-review>\n\n{message}"


_NOTE = re.compile(r"\A<change-review>\n(.*?)\n</change-review>\n\n", re.DOTALL)


def split_user_message(text: str) -> tuple[str | None, str]:
    """``(review note or None, what the user typed)`` of a message built by :func:`compose_user_message`
    (the transcript shows the note as a separate, collapsible block)."""
    m = _NOTE.match(text)
    if m is None:
        return None, text
    return m.group(1), text[m.end():]

