"""``robotlab threads show ID``: one stored thread for people (its messages, the robots' text, tool
calls and results, approvals, changes) or, with ``--json``, for programs.

What was stored came from models and tools: every string is printed through
:func:`workspace.cli.render.printable`, so an escape sequence or a bidi override in a file name or
an answer is shown, never obeyed by the terminal.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from workspace import events as ev
from workspace.cli.render import EventPrinter, printable

if TYPE_CHECKING:
    from workspace.persistence import Store, ThreadInfo, TurnInfo

#: How ``show`` names an origin: ``{"origin": "cli", "command": "run"}`` -> "the terminal (robotlab run)".
ORIGIN_TEXT = {"cli": "the terminal"}


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "—"


def origin_text(thread: ThreadInfo) -> str:
    if thread.origin is None:
        return "the window"
    text = ORIGIN_TEXT.get(thread.origin, thread.origin)
    command = thread.metadata.get("command")
    return f"{text} (robotlab {command})" if command else text


class TranscriptPrinter(EventPrinter):
    """The live printer's lines for stored events: the complete ``text`` of each model turn (streamed
    text was joined by :func:`~workspace.persistence.coalesce_text`) instead of deltas."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.Text | ev.TextDelta):
            if not event.text:
                return
            label = self._who(event)
            if self._in_text:
                self.out.write("\n")
                self._in_text = False
            for line in printable(event.text.rstrip("\n")).split("\n"):
                self.out.write(f"{label}{line}".rstrip(" ") + "\n")
            self.out.flush()
            return
        super().__call__(event)


def print_thread(store: Store, thread_id: str, *, out: TextIO, full: bool = False) -> None:
    """The thread's current branch, turn by turn (``full``: tool inputs and results not shortened)."""
    from workspace.persistence import coalesce_text

    thread = store.get_thread(thread_id)
    printer = TranscriptPrinter(out, show_task=thread.kind == "network", preview=10**9 if full else 240)
    title = printable(thread.display_title, one_line=True)
    deleted = " (deleted)" if thread.deleted_at else ""
    out.write(printer._c("1", f"Thread {thread.id[:8]} · {title}{deleted}") + "\n")
    facts = [f"{thread.kind} {printable(thread.robot, one_line=True)}", f"{thread.turn_count} turn(s)",
             f"from {origin_text(thread)}"]
    if thread.model:
        facts.append(printable(thread.model, one_line=True))
    if thread.folder:
        facts.append(f"folder {printable(thread.folder, one_line=True)}")
    out.write(printer._c("2", "  " + " · ".join(facts)) + "\n")
    usage = f" · {thread.input_tokens} in / {thread.output_tokens} out tokens" if thread.input_tokens else ""
    cost = f", ${thread.cost:.4f}" if thread.cost else ""
    out.write(printer._c("2", f"  created {_when(thread.created_at)} · updated {_when(thread.updated_at)}"
                              f"{usage}{cost} · id {thread.id}") + "\n")
    pairs = store.path_events(thread.id)
    if not pairs:
        out.write("\n(no messages yet)\n")
    for number, (turn, events) in enumerate(pairs, start=1):
        out.write("\n" + printer._c("1", f"── {number} · you · {_when(turn.created_at)}") + "\n")
        from workspace.changes import split_user_message

        review, text = split_user_message(turn.user_text)
        if review:
            out.write(printer._c("2", printable(review)) + "\n")
        out.write(printable(text) + "\n\n")
        for event in coalesce_text(events):
            printer(event)
        printer.finish()
        if turn.status in ("interrupted", "running"):  # no terminal event says how it ended
            why = "the program stopped before the run ended" if turn.status == "interrupted" else "still running"
            out.write(printer._c("33", f"■ {turn.status}: {why}") + "\n")
    out.flush()


def thread_json(store: Store, thread_id: str) -> dict[str, Any]:
    """The thread and the turns of its current branch, each with its events (text deltas joined)."""
    from workspace.persistence import coalesce_text

    thread = store.get_thread(thread_id)

    def turn_dict(turn: TurnInfo, events: list[ev.Event]) -> dict[str, Any]:
        return {"id": turn.id, "parent_turn_id": turn.parent_turn_id, "user_text": turn.user_text,
                "status": turn.status, "created_at": turn.created_at, "finished_at": turn.finished_at,
                "run_id": turn.run_id, "input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens,
                "cost": turn.cost, "events": [ev.to_dict(e) for e in coalesce_text(events)]}

    return {"thread": thread_dict(thread),
            "turns": [turn_dict(turn, events) for turn, events in store.path_events(thread.id)]}


def thread_dict(t: ThreadInfo) -> dict[str, Any]:
    """A thread as ``threads list --json`` and ``threads show --json`` print it."""
    return {
        "id": t.id, "title": t.title, "robot": t.robot, "kind": t.kind, "folder": t.folder,
        "created_at": t.created_at, "updated_at": t.updated_at, "deleted_at": t.deleted_at,
        "turns": t.turn_count, "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
        "cost": t.cost, "model": t.model, "origin": t.origin, "metadata": dict(t.metadata),
    }


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
