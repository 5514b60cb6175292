"""Tool calls in the chat: a call's card from its ``tool_use`` (or from the first event that names it), its
approval asked and decided, an MCP tool's progress, and its result or error (a denial, a stop).

:class:`ToolCalls` is the presenter's reducer of ``tool_use``, ``approval_requested``, ``approval_decided``,
``tool_progress``, ``tool_output``, ``tool_result`` and ``tool_error``; a call ends its model turn's thinking through the
:class:`~ui.chat.model.text.Texts` it is given."""

from __future__ import annotations

from typing import Any

from ui.chat.model.column import APPROVAL, WAITING, Column
from ui.chat.model.text import Texts
from ui.chat.model.tool_calls import ApprovalState, OutputState, ProgressState, ToolCallItem, call_item_class
from ui.formatting import result_error
from workspace import events as ev


class ToolCalls:
    """The cards of a run's tool calls (a reducer of :class:`~ui.chat.model.presenter.ChatPresenter`; the
    cards are kept in their runs' ``calls``, in the :class:`Column`)."""

    def __init__(self, texts: Texts) -> None:
        self._texts = texts

    # -- finding calls ---------------------------------------------------------------------------------
    @staticmethod
    def call(column: Column, call_id: str, run_id: str | None = None) -> ToolCallItem | None:
        """The call ``call_id`` of run ``run_id`` (call ids repeat across runs: a network's tasks, the
        turns of a scripted model); without ``run_id``, the first call with that id."""
        if run_id:
            run = column.runs.get(run_id)
            return run.calls.get(call_id) if run is not None else None
        for other in column.runs.values():
            if call_id in other.calls:
                return other.calls[call_id]
        return None

    @staticmethod
    def calls(column: Column) -> list[ToolCallItem]:
        return [call for run in column.runs.values() for call in run.calls.values()]

    # -- events ----------------------------------------------------------------------------------------
    def tool_use(self, column: Column, event: ev.ToolUse) -> None:
        self._card(column, event.run_id, event.robot, event.task, call_id=event.id, tool=event.name,
                   server=event.server, arguments=event.input, started=event.ts, from_text=event.from_text)
        run = column.run(event.run_id, event.robot, event.task)
        if run.first_token is None:  # a first model call that only called a tool: its call came
            run.first_token = event.ts
        column.set_activity(run, None)

    def asked_call(self, column: Column, event: ev.ToolUse) -> None:
        """The card of a call whose approval is asked while none of its run's events show here: made from the
        request, not from the run's stream, so it is not the model's first token (a stored thread has no
        such event; its time to first token must not have one live)."""
        self._card(column, event.run_id, event.robot, event.task, call_id=event.id, tool=event.name,
                   server=event.server, arguments=event.input, started=event.ts, from_text=event.from_text)
        column.set_activity(column.run(event.run_id, event.robot, event.task), None)

    def approval_requested(self, column: Column, event: ev.ApprovalRequested) -> None:
        call = self.call(column, event.id, event.run_id) or self._card(
            column, event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=event.server,
            arguments=event.input)
        call.approval = ApprovalState(state="asking")
        if call.status == "running":
            call.status = "approval"
        column.listener.item_changed(call)
        column.set_activity(column.run(event.run_id, event.robot, event.task), APPROVAL, since=event.ts)

    def approval_decided(self, column: Column, event: ev.ApprovalDecided) -> None:
        call = self.call(column, event.id, event.run_id)
        if call is not None:
            approved = event.decision == "approve"
            edited = approved and event.input is not None and event.input != call.arguments
            call.approval = ApprovalState(state="approved" if approved else "denied", scope=event.scope,
                                          reason=event.reason, edited=edited)
            if approved:
                call.started = event.ts  # the tool runs from now: its time ticking leaves out the wait for the person
                if edited:
                    call.arguments = event.input
                if call.status == "approval":
                    call.status = "running"
            elif call.status in ("running", "approval"):
                call.status = "denied"
            column.listener.item_changed(call)
        column.set_activity(column.run(event.run_id, event.robot, event.task), None)

    def tool_progress(self, column: Column, event: ev.ToolProgress) -> None:
        call = self.call(column, event.id, event.run_id)
        if call is None or call.status not in ("running", "approval"):
            return
        call.progress = ProgressState(value=event.progress, total=event.total, message=event.message)
        column.listener.item_changed(call)

    def tool_output(self, column: Column, event: ev.ToolOutput) -> None:
        """A chunk of what a running tool prints: added to its call's output (the last
        :data:`~ui.chat.model.tool_calls.OUTPUT_KEEP` characters kept), and the listener told."""
        call = self.call(column, event.id, event.run_id) or self._card(
            column, event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=None,
            arguments=None)
        if call.output is None:
            call.output = OutputState()
        added = call.output.append(event.text)
        if added:
            column.listener.tool_output(call, added)

    def tool_finished(self, column: Column, event: ev.ToolResult | ev.ToolError) -> None:
        call = self.call(column, event.id, event.run_id) or self._card(
            column, event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=event.server,
            arguments=None)
        if isinstance(event, ev.ToolResult):
            call.result = event.payload
            call.duration = event.duration
            error = result_error(event.payload)
            if error is None:
                call.status = "ok"
            else:  # an error carried as a result: shown (and counted) as one
                call.error = error
                call.status = "stopped" if "stopped the run" in str(error) else "error"
        else:
            text = str(event.error)
            denied = (call.approval is not None and call.approval.state == "denied") or \
                text.startswith("Denied by the user") or "approval policy denies" in text
            call.error = event.error
            call.duration = event.duration or call.duration
            call.status = "denied" if denied else ("stopped" if "stopped the run" in text else "error")
        column.listener.item_changed(call)
        run = column.run(event.run_id, event.robot, event.task)
        run.call_first_token = None  # the next model call streams after the tools
        if not any(c.status in ("running", "approval") for c in run.calls.values()):
            column.set_activity(run, WAITING, since=event.ts)  # the model's next turn

    def _card(self, column: Column, run_id: str, robot: str, task: str | None, *, call_id: str, tool: str,
              server: str | None, arguments: Any, started: float | None = None,
              from_text: bool = False) -> ToolCallItem:
        """The card of call ``call_id`` (made when first named): the model turn's thinking ends there."""
        run = column.run(run_id, robot, task)
        self._texts.end_reasoning(column, run)
        column.set_status(run, None)
        column.header(run, robot)
        run.text = None
        existing = run.calls.get(call_id)
        if existing is not None:
            return existing
        call = call_item_class(tool)(parent=column.container(run), run=run, call_id=call_id, tool=tool, robot=robot,
                                     server=server, arguments=arguments if arguments is not None else {}, task=task,
                                     started=started, from_text=from_text)
        run.calls[call_id] = call
        column.add(call)
        return call


__all__ = ["ToolCalls"]
