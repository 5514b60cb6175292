"""Proposed changes in the chat: a change set's card (auto mode makes one per write, a pending card takes
the files proposed after it), what the person decided (held until its card is shown), undo and redo."""

from __future__ import annotations

from typing import Any

from ui.chat.model.column import Column
from ui.chat.model.state import ChangeItem
from workspace import events as ev


class ChangeCards(Column):
    """The change cards of the column (a part of :class:`~ui.chat.model.presenter.ChatPresenter`)."""

    def _forget(self) -> None:
        super()._forget()
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

    def _change_proposed(self, event: ev.ChangeProposed) -> None:
        existing = self.change_item(event.change_set_id)
        if existing is not None and existing.status == "pending":
            existing.merge_files(list(event.files))
            self.listener.item_changed(existing)
            return
        run = self._run(event.run_id, event.robot, event.task)
        self._header(run, event.robot)
        run.text = None
        item = ChangeItem(parent=self._container(run), run=run, change_set_id=event.change_set_id,
                          robot=event.robot, files=list(event.files))
        self._changes.setdefault(event.change_set_id, []).append(item)
        self._add(item)
        for decision in self._decisions.pop(event.change_set_id, []):
            self.change_decided(decision)

    def change_decided(self, event: ev.ChangeDecided) -> None:
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
        self.listener.item_changed(item)

    def set_change_files(self, change_set_id: str, files: list[dict[str, Any]]) -> None:
        """The change set's files as now composed (events of parallel calls race): a pending card's list."""
        item = self.change_item(change_set_id)
        if item is not None and item.status == "pending":
            before = [dict(f) for f in item.files]
            item.merge_files(files)
            if item.files != before:  # the dock calls this at every refresh: redraw only what changed
                self.listener.item_changed(item)

    def set_change_undone(self, item: ChangeItem, undone: bool) -> None:
        """The written changes were undone (or redone) from the card or the Changes dock."""
        item.undone = undone
        self.listener.item_changed(item)
