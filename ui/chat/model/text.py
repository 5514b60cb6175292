"""The text and the thinking of a run in the chat: a model turn's answer grows as its deltas come and is made
exactly its ``text`` event at the end; its thinking streams, folds when the answer begins, and is made whole by
its ``reasoning`` event."""

from __future__ import annotations

from ui.chat.model.column import Column
from ui.chat.model.state import ReasoningItem, RunState, TextItem
from workspace import events as ev


class Texts(Column):
    """A run's answer and thinking (a part of :class:`~ui.chat.model.presenter.ChatPresenter`)."""

    def _append_text(self, run: RunState, robot: str, delta: str) -> TextItem:
        self._fold_reasoning(run)  # the answer began: the thinking folds away
        self._set_status(run, None)
        item = run.text
        if item is None:
            self._header(run, robot)
            item = TextItem(parent=self._container(run), run=run)
            run.text = item
            run.texts.append(item)
            self._add(item)
        item.text += delta
        self.listener.text_appended(item, delta)
        return item

    def _complete_text(self, event: ev.Text) -> None:
        """A model turn's text is complete: the item shows exactly it; later text starts a new one."""
        run = self._run(event.run_id, event.robot, event.task)
        self._end_reasoning(run)
        item = run.text
        if item is None:
            item = self._append_text(run, event.robot, event.text)
        elif item.text != event.text:
            item.text = event.text
            self.listener.item_changed(item)
        run.text = None

    # -- thinking ----------------------------------------------------------------------------------------
    # A model turn's thinking streams (``reasoning_delta``), folds when its answer begins, and is made
    # whole by its ``reasoning`` event (which comes before the turn's ``text``): the item stays the run's
    # ``reasoning`` until the model turn ends (its text, a tool call, the run's end).
    def _append_reasoning(self, run: RunState, robot: str, delta: str) -> ReasoningItem:
        self._set_status(run, None)
        item = run.reasoning
        if item is None or item.done:
            self._header(run, robot)
            run.text = None  # the answer that follows starts below the thinking
            item = ReasoningItem(parent=self._container(run), run=run)
            run.reasoning = item
            self._add(item)
        item.text += delta
        self.listener.item_changed(item)
        return item

    def _complete_reasoning(self, event: ev.Reasoning) -> None:
        """A model turn's whole thinking: the block shows exactly it, folded."""
        run = self._run(event.run_id, event.robot, event.task)
        item = run.reasoning
        if item is None:
            item = self._append_reasoning(run, event.robot, event.text)
        changed = item.text != event.text
        item.text = event.text
        self._fold_reasoning(run, changed=changed)

    def _fold_reasoning(self, run: RunState, *, changed: bool = False) -> None:
        """The answer began: the thinking is complete and folds away (unless the person chose)."""
        item = run.reasoning
        if item is None:
            return
        if not item.done:
            item.done = True
            if not item.user_toggled:
                item.collapsed = True
            changed = True
        if changed:
            self.listener.item_changed(item)

    def _end_reasoning(self, run: RunState) -> None:
        """The model turn ended (its text, a tool call, the run's end)."""
        self._fold_reasoning(run)
        run.reasoning = None

    def set_reasoning_collapsed(self, item: ReasoningItem, collapsed: bool) -> None:
        """The person opened or closed a thinking block (automatic folding leaves it alone then)."""
        item.collapsed = collapsed
        item.user_toggled = True
        self.listener.item_changed(item)
