"""Tool calls in the chat: a call's card from its ``tool_use`` (or from the first event that names it), its
approval asked and decided, an MCP tool's progress, and its result or error (a denial, a stop)."""

from __future__ import annotations

from typing import Any

from ui.chat.model.text import Texts
from ui.chat.model.tool_calls import ApprovalState, ProgressState, ToolCallItem, call_item_class
from ui.formatting import result_error
from workspace import events as ev


class ToolCalls(Texts):
    """The cards of a run's tool calls (a part of :class:`~ui.chat.model.presenter.ChatPresenter`)."""

    def call(self, call_id: str, run_id: str | None = None) -> ToolCallItem | None:
        """The call ``call_id`` of run ``run_id`` (call ids repeat across runs: a network's tasks, the
        turns of a scripted model); without ``run_id``, the first call with that id."""
        if run_id:
            run = self._runs.get(run_id)
            return run.calls.get(call_id) if run is not None else None
        for other in self._runs.values():
            if call_id in other.calls:
                return other.calls[call_id]
        return None

    def calls(self) -> list[ToolCallItem]:
        return [call for run in self._runs.values() for call in run.calls.values()]

    def _tool_use(self, run_id: str, robot: str, task: str | None, *, call_id: str, tool: str,
                  server: str | None, arguments: Any, started: float | None = None,
                  from_text: bool = False) -> ToolCallItem:
        run = self._run(run_id, robot, task)
        self._end_reasoning(run)
        self._set_status(run, None)
        self._header(run, robot)
        run.text = None
        existing = run.calls.get(call_id)
        if existing is not None:
            return existing
        call = call_item_class(tool)(parent=self._container(run), run=run, call_id=call_id, tool=tool, robot=robot,
                                     server=server, arguments=arguments if arguments is not None else {}, task=task,
                                     started=started, from_text=from_text)
        run.calls[call_id] = call
        self._add(call)
        return call

    def _approval_requested(self, event: ev.ApprovalRequested) -> None:
        call = self.call(event.id, event.run_id) or self._tool_use(
            event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=event.server,
            arguments=event.input)
        call.approval = ApprovalState(state="asking")
        if call.status == "running":
            call.status = "approval"
        self.listener.item_changed(call)

    def _approval_decided(self, event: ev.ApprovalDecided) -> None:
        call = self.call(event.id, event.run_id)
        if call is None:
            return
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
        self.listener.item_changed(call)

    def _tool_progress(self, event: ev.ToolProgress) -> None:
        call = self.call(event.id, event.run_id)
        if call is None or call.status not in ("running", "approval"):
            return
        call.progress = ProgressState(value=event.progress, total=event.total, message=event.message)
        self.listener.item_changed(call)

    def _tool_finished(self, event: ev.ToolResult | ev.ToolError) -> None:
        call = self.call(event.id, event.run_id) or self._tool_use(
            event.run_id, event.robot, event.task, call_id=event.id, tool=event.name, server=event.server,
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
        self.listener.item_changed(call)
