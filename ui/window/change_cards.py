"""The chat's change cards follow the review: what the Changes dock decided, counted, undid or redid.

The Changes pane never touches the chat; it says what happened through its signals
(:class:`~ui.review.pane.ChangesPane`), and this part — the chat's owner — applies each through the
chat presenter's own methods. So the presenter has one writer: its owner, fed the run's events and
these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ui.chat.model.state import ChangeItem
    from ui.chat.view.chat import ChatView
    from ui.review.pane import ChangesPane
    from workspace import events as ev


class ChangeCards:
    """Applies the Changes pane's news to the chat's change cards."""

    def __init__(self, chat: ChatView) -> None:
        self.chat = chat

    def follow(self, pane: ChangesPane) -> None:
        """Subscribe to ``pane`` (and send its Undo / Redo the cards ask for), then take its current counts."""
        pane.decided.connect(self.decided)
        pane.files_counted.connect(self.files_counted)
        pane.undone_changed.connect(self.undone_changed)
        pane.history_undone.connect(self.history_undone)
        pane.verified.connect(self.verified)
        self.chat.change_undo_requested.connect(pane.undo_from_card)
        pane.sync(history=False)  # the counts it had when made, before anyone listened

    def _item(self, change_set_id: str, checkpoint_id: str = "") -> ChangeItem | None:
        """The state of the shown card of a change set (the one of that checkpoint, when auto mode made several)."""
        if not change_set_id:
            return None
        if checkpoint_id:
            for widget in self.chat.items():
                if getattr(widget, "checkpoint_id", None) == checkpoint_id:
                    item: ChangeItem | None = getattr(widget, "item", None)
                    return item
        card = self.chat.change_card(change_set_id)
        return card.item if card is not None else None

    def decided(self, event: ev.ChangeDecided) -> None:
        """An apply made in the review: the card shows the outcome (only a card that shows)."""
        if self.chat.change_card(event.change_set_id) is not None:
            self.chat.presenter.change_decided(event)

    def verified(self, event: ev.VerifyFinished) -> None:
        """A verify of the thread's changes ended (after a run, "Verify again", before Apply): its line in the chat."""
        self.chat.presenter.verify_finished(event)

    def files_counted(self, change_set_id: str, files: list[dict[str, Any]]) -> None:
        """A pending card counts what the review counts."""
        self.chat.presenter.set_change_files(change_set_id, files)

    def undone_changed(self, change_set_id: str, checkpoint_id: str, undone: bool) -> None:
        item = self._item(change_set_id, checkpoint_id)
        if item is not None:
            self.chat.presenter.set_change_undone(item, undone)

    def history_undone(self, by_checkpoint: dict[str, bool], undone_sets: set[str]) -> None:
        """What the thread's change history says was undone shows on every decided card."""
        presenter = self.chat.presenter
        for item in presenter.all_change_items():
            if item.status != "decided" or item.checkpoint_id is None:
                continue
            undone = by_checkpoint.get(item.checkpoint_id, item.change_set_id in undone_sets)
            if undone != item.undone:
                presenter.set_change_undone(item, undone)
