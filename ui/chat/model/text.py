"""The text and the thinking of a run in the chat: a model turn's answer grows as its deltas come and is made
exactly its ``text`` event at the end; its thinking streams, folds when the answer begins, and is made whole by
its ``reasoning`` event.

:class:`Texts` is the presenter's reducer of ``text_delta``, ``text``, ``reasoning_delta`` and ``reasoning``;
the tool calls and the end of a run end a model turn's thinking through :meth:`Texts.end_reasoning`."""

from __future__ import annotations

from ui.chat.model.column import Column
from ui.chat.model.state import ReasoningItem, RunState, TextItem
from workspace import events as ev


class Texts:
    """A run's answer and thinking (a reducer of :class:`~ui.chat.model.presenter.ChatPresenter`; it keeps
    nothing of its own: what it changes is the runs' items in the :class:`Column`)."""

    # -- the answer ------------------------------------------------------------------------------------
    def text_delta(self, column: Column, event: ev.TextDelta) -> None:
        run = column.run(event.run_id, event.robot, event.task)
        token_came(run, event.ts)
        column.set_activity(run, None)
        self.append_text(column, run, event.robot, event.text)

    def text(self, column: Column, event: ev.Text) -> None:
        """A model turn's text is complete: the item shows exactly it; later text starts a new one."""
        run = column.run(event.run_id, event.robot, event.task)
        if run.text is None:  # a stored model turn's text (its deltas joined, at the first one's time)
            token_came(run, event.ts)
        column.set_activity(run, None)
        self.end_reasoning(column, run)
        item = run.text
        if item is None:
            item = self.append_text(column, run, event.robot, event.text)
        elif item.text != event.text:
            item.text = event.text
            column.listener.item_changed(item)
        run.text = None

    def append_text(self, column: Column, run: RunState, robot: str, delta: str) -> TextItem:
        if run.reasoning is not None:  # the answer began: the thinking folds away
            self.fold_reasoning(column, run)
        column.set_status(run, None)
        item = run.text
        if item is None:
            column.header(run, robot)
            item = TextItem(parent=column.container(run), run=run)
            run.text = item
            run.texts.append(item)
            column.add(item)
        item.text += delta
        column.listener.text_appended(item, delta)
        return item

    # -- thinking ----------------------------------------------------------------------------------------
    # A model turn's thinking streams (``reasoning_delta``), folds when its answer begins, and is made
    # whole by its ``reasoning`` event (which comes before the turn's ``text``): the item stays the run's
    # ``reasoning`` until the model turn ends (its text, a tool call, the run's end).
    def reasoning_delta(self, column: Column, event: ev.ReasoningDelta) -> None:
        run = column.run(event.run_id, event.robot, event.task)
        token_came(run, event.ts)
        self.append_reasoning(column, run, event.robot, event.text)

    def reasoning(self, column: Column, event: ev.Reasoning) -> None:
        """A model turn's whole thinking: the block shows exactly it, folded."""
        run = column.run(event.run_id, event.robot, event.task)
        item = run.reasoning
        if item is None:  # stored thinking (its deltas joined, at the first one's time)
            token_came(run, event.ts)
            item = self.append_reasoning(column, run, event.robot, event.text)
        changed = item.text != event.text
        item.text = event.text
        self.fold_reasoning(column, run, changed=changed)

    def append_reasoning(self, column: Column, run: RunState, robot: str, delta: str) -> ReasoningItem:
        column.set_status(run, None)
        item = run.reasoning
        if item is None or item.done:
            column.header(run, robot)
            run.text = None  # the answer that follows starts below the thinking
            item = ReasoningItem(parent=column.container(run), run=run)
            run.reasoning = item
            column.add(item)
        item.text += delta
        column.listener.item_changed(item)
        return item

    def fold_reasoning(self, column: Column, run: RunState, *, changed: bool = False) -> None:
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
            column.listener.item_changed(item)

    def end_reasoning(self, column: Column, run: RunState) -> None:
        """The model turn ended (its text, a tool call, the run's end)."""
        self.fold_reasoning(column, run)
        run.reasoning = None

    def set_reasoning_collapsed(self, column: Column, item: ReasoningItem, collapsed: bool) -> None:
        """The person opened or closed a thinking block (automatic folding leaves it alone then)."""
        item.collapsed = collapsed
        item.user_toggled = True
        column.listener.item_changed(item)


def token_came(run: RunState, ts: float) -> None:
    """A model call's token (text or thinking) came at ``ts``: the first of the run, of the call."""
    if run.first_token is None:
        run.first_token = ts
    if run.call_first_token is None:
        run.call_first_token = ts


__all__ = ["Texts", "token_came"]
