"""Proposed changes in the chat: a change set's card (auto mode makes one per write, a pending card takes
the files proposed after it), what the person decided (held until its card is shown), undo and redo.

:class:`ChangeCards` is the presenter's reducer of ``change_proposed`` and ``change_decided``; it keeps the
cards of each change set and the decisions waiting for theirs (a new column makes a new one)."""

from __future__ import annotations

from typing import Any

from ui.chat.model.column import Column
from ui.chat.model.state import ChangeItem, NoticeItem
from workspace import events as ev

#: The end of a verify's output its chat line shows (the review shows more).
VERIFY_DETAILS_CHARS = 4_000


class ChangeCards:
    """The change cards of the column (a reducer of :class:`~ui.chat.model.presenter.ChatPresenter`)."""

    def __init__(self) -> None:
        self._changes: dict[str, list[ChangeItem]] = {}
        #: Decisions about change sets not shown yet (their turn loads later, or never).
        self._decisions: dict[str, list[ev.ChangeDecided]] = {}

    def change_item(self, change_set_id: str) -> ChangeItem | None:
        """The latest change card of a change set (auto mode makes one per write)."""
        items = self._changes.get(change_set_id)
        return items[-1] if items else None

    def change_items(self, change_set_id: str) -> list[ChangeItem]:
        return list(self._changes.get(change_set_id, []))

    def all_change_items(self) -> list[ChangeItem]:
        """Every change card shown, in the order they came."""
        return [item for items in self._changes.values() for item in items]

    def change_proposed(self, column: Column, event: ev.ChangeProposed) -> None:
        existing = self.change_item(event.change_set_id)
        if existing is not None and existing.status == "pending":
            existing.merge_files(list(event.files))
            column.listener.item_changed(existing)
            return
        run = column.run(event.run_id, event.robot, event.task)
        column.header(run, event.robot)
        run.text = None
        item = ChangeItem(parent=column.container(run), run=run, change_set_id=event.change_set_id,
                          robot=event.robot, files=list(event.files))
        self._changes.setdefault(event.change_set_id, []).append(item)
        column.add(item)
        for decision in self._decisions.pop(event.change_set_id, []):
            self.change_decided(column, decision)

    def change_decided(self, column: Column, event: ev.ChangeDecided) -> None:
        """What the person decided about a change set (a run's event, or the Changes dock's now)."""
        item = self.change_item(event.change_set_id)
        if item is None:
            self._decisions.setdefault(event.change_set_id, []).append(event)
            return
        for f in event.outcome:
            item.outcome[str(f.get("path"))] = f
        item.status = "decided"
        item.undone = False
        if event.checkpoint_id:
            item.checkpoint_id = event.checkpoint_id
        column.listener.item_changed(item)

    def set_change_files(self, column: Column, change_set_id: str, files: list[dict[str, Any]]) -> None:
        """The change set's files as now composed (events of parallel calls race): a pending card's list."""
        item = self.change_item(change_set_id)
        if item is not None and item.status == "pending":
            before = [dict(f) for f in item.files]
            item.merge_files(files)
            if item.files != before:  # the dock calls this at every refresh: redraw only what changed
                column.listener.item_changed(item)

    def verify_finished(self, column: Column, event: ev.VerifyFinished) -> NoticeItem:
        """A verify's result as one line under its change card's turn ("✗ verify failed on the proposed
        changes (exit code 1, 2.1 s)"); the command and its output expand under it."""
        card = self.change_item(event.change_set_id)
        run = card.run if card is not None and card.run is not None else column.run(event.run_id, event.robot)
        output = event.output.rstrip("\n")
        if len(output) > VERIFY_DETAILS_CHARS:
            output = f"[… {len(output) - VERIFY_DETAILS_CHARS:,} characters before this …]\n" + \
                output[-VERIFY_DETAILS_CHARS:]
        mark = "✓ verify passed" if event.passed else "✗ verify failed"
        what = "the accepted hunks" if event.subset == "accepted" else "the proposed changes"
        why = "" if event.passed else ("timed out, " if event.timed_out else f"exit code {event.exit_code}, ")
        item = NoticeItem(parent=run.turn, run=run, text=f"{mark} on {what} ({why}{event.duration:.1f} s)",
                          level="info" if event.passed else "error",
                          details=f"$ {event.command}\n{output or '(no output)'}")
        column.add(item)
        return item

    @staticmethod
    def set_change_undone(column: Column, item: ChangeItem, undone: bool) -> None:
        """The written changes were undone (or redone) from the card or the Changes dock."""
        item.undone = undone
        column.listener.item_changed(item)


__all__ = ["ChangeCards"]
