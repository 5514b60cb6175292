"""A run's life in the chat: its start (the chips of what its message attached), what it waits for
(connecting, queued, retrying), its usage, the notices about it (a compaction, the MCP servers, a model
changed), and how it ends — its footer, the error across the column, the lanes and the calls it leaves.

:class:`RunLifecycle` is the presenter's reducer of ``run_started``, ``run_status``, ``usage``,
``context_compacted``, ``mcp_servers``, ``model_changed`` and the terminal events; the end of a run ends
its thinking through the :class:`~ui.chat.model.text.Texts` and its network's lanes through the
:class:`~ui.chat.model.lanes.NetworkLanes` it is given."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, assert_never

from ui.chat.model.column import WAITING, Column
from ui.chat.model.lanes import NetworkLanes
from ui.chat.model.state import (
    AttachmentChip,
    CallLaneItem,
    ErrorItem,
    NoticeItem,
    RunEnd,
    RunOutcome,
    RunState,
    split_fix,
)
from ui.chat.model.text import Texts
from ui.chat.model.tool_calls import ProgressState
from workspace import events as ev
from workspace.delegation import STOPPED_IN_BACKGROUND
from workspace.result import STOP_NOTES, NetworkResult, RobotResult, Usage
from workspace.session.recording import NOT_SAVED

#: Why the lane of a run started in the background (a delegation) stops when the run that started it ended first.
BACKGROUND_NOT_FOLLOWED = ("not followed: it went on in the background after the run that started it ended; its "
                           "later work is not in this conversation")

#: Why such a lane stopped when the person pressed Stop while it still went on (Stop stops it; the reason is stored
#: with the delegate's run, so the reopened thread says so too).
BACKGROUND_STOPPED = STOPPED_IN_BACKGROUND


class RunLifecycle:
    """How runs start, wait, count and end (a reducer of :class:`~ui.chat.model.presenter.ChatPresenter`;
    it keeps nothing of its own: what it changes is the runs in the :class:`Column`)."""

    def __init__(self, texts: Texts, lanes: NetworkLanes) -> None:
        self._texts = texts
        self._lanes = lanes

    # -- the start -------------------------------------------------------------------------------------
    @staticmethod
    def run_started(column: Column, event: ev.RunStarted) -> None:
        run = column.run(event.run_id, event.robot, event.task)
        run.started = event.ts
        turn = run.turn
        if event.attachments and not event.nested and event.task is None and turn.user is not None:
            # The chips of the files, images and resources sent with the turn's message (live and stored alike).
            turn.user.attachments = [AttachmentChip.from_ref(ref) for ref in event.attachments]
            column.listener.user_changed(turn)
        run.language_model = event.is_language_model
        column.set_activity(run, WAITING, since=event.ts)
        if run.inner is not None:
            run.inner.started = event.ts
            run.inner.message = event.message
            column.listener.item_changed(run.inner)

    # -- what the run waits for ------------------------------------------------------------------------
    @staticmethod
    def status(column: Column, event: ev.RunStatus) -> None:
        run = column.run(event.run_id, event.robot, event.task)
        match event.state:
            case "fallback":
                column.set_status(run, None)
                column.notice(run, f"⇄ {event.detail}" if event.detail else f"⇄ Continuing with {event.model}",
                              level="warning")
            case "notice":  # the run's end not saved (a full disk) is a warning; the rest are news
                column.notice(run, event.detail, level="warning" if event.detail.startswith(NOT_SAVED) else "info")
            case _:
                column.set_status(run, status_text(event), since=event.ts)

    # -- usage -----------------------------------------------------------------------------------------
    @staticmethod
    def usage(column: Column, event: ev.Usage) -> None:
        run = column.run(event.run_id, event.robot, event.task)
        run.usage = Usage(event.total_input_tokens, event.total_output_tokens, event.total_cost,
                          run.usage.reasoning_tokens + event.reasoning_tokens, run.usage.estimated or event.estimated)
        run.model_calls.append(event)
        if run.call_first_token is not None and event.ts > run.call_first_token:
            # The call streamed from its first token to its usage (sent as the stream ends).
            run.streamed_tokens += event.output_tokens
            run.streamed_seconds += event.ts - run.call_first_token
        run.call_first_token = None
        lane = run.lane or run.inner
        if lane is not None:  # a task's (a robot used as a tool's) usage shows in its lane's header
            lane.usage = run.usage
            column.listener.item_changed(lane)
            return
        run.footer = True
        column.listener.run_changed(run)

    # -- notices ---------------------------------------------------------------------------------------
    @staticmethod
    def compacted(column: Column, event: ev.ContextCompacted) -> None:
        column.notice(column.run(event.run_id, event.robot, event.task), compaction_text(event),
                      details=event.summary.strip() + "\n\n*The model now sees this summary instead of the "
                      "messages above; they are still in the thread, searchable and exported.*")

    @staticmethod
    def mcp_servers(column: Column, event: ev.McpServers) -> None:
        column.notice(column.run(event.run_id, event.robot, event.task), event.message,
                      level="warning" if event.failed or event.starting else "info")

    @staticmethod
    def model_changed(column: Column, event: ev.ModelChanged) -> None:
        # Between the answers: under the turn it follows, below its footer (a notice of no run).
        run = column.run(event.run_id, event.robot, event.task)
        column.add(NoticeItem(parent=run.turn, text=event.describe(),
                              details=f"Before: {event.previous or 'the offline demo'}. The thread's next "
                              "messages go to the new model; the conversation so far is sent to it as it is."))

    # -- the end of a run ------------------------------------------------------------------------------
    def end(self, column: Column, event: ev.TerminalEvent, outcome: RunOutcome, *, message: str | None,
            result: Any) -> None:
        """A terminal event: how its run (or the lane it works in, or its call's lane) ends."""
        run = column.run(event.run_id, event.robot)
        if run.inner is not None:  # a robot used as a tool ended: its lane, not the run that called it
            self._end_inner(column, run, run.inner, outcome, message=message, ts=event.ts)
            return
        if event.nested:  # a network task's own run ended: its task_finished says how the lane ends
            run.text = None
            return
        if run.lane is not None:  # a task run's end: the end belongs to its network run
            run.text = None
            parent = column.runs.get(run.lane.group.run_id)
            if parent is None:
                return
            run = parent
        elif isinstance(event, ev.RunFailed):
            self.finish(column, run, outcome, message=message, ts=event.ts, result=result)
            # The error across the column: what went wrong, the fix it names, Retry.
            text, fix = split_fix(event.error or "The run failed without saying why.")
            column.add(ErrorItem(parent=run.turn, run=run, message=text, fix=fix, error_type=event.error_type))
            return
        self.finish(column, run, outcome, message=message, ts=event.ts, result=result)

    @staticmethod
    def background_stopped(column: Column, run_ids: Iterable[str], *, reason: str = BACKGROUND_STOPPED) -> int:
        """Stop stopped the delegates' runs ``run_ids`` that went on in the background after the run that started
        them ended: their lanes say they were stopped (``reason``), not that they were not followed. How many
        changed."""
        wanted = set(run_ids)
        changed = 0
        for run in column.runs.values():
            lane = run.inner
            if lane is not None and lane.run_id in wanted and lane.reason == BACKGROUND_NOT_FOLLOWED:
                lane.reason = reason
                column.listener.item_changed(lane)
                changed += 1
        return changed

    def _end_inner(self, column: Column, run: RunState, lane: CallLaneItem, outcome: RunOutcome, *,
                   message: str | None, ts: float | None) -> None:
        run.text = None
        self._texts.end_reasoning(column, run)
        run.end = RunEnd(outcome=outcome, message=message)
        lane.status = "done" if outcome == "finished" else "failed" if outcome == "failed" else "cancelled"
        lane.reason = message if outcome != "finished" else None
        lane.finished = ts
        if outcome == "finished" and not lane.user_toggled:
            lane.collapsed = True  # the answer is in the card's result
        column.listener.item_changed(lane)

    def finish(self, column: Column, run: RunState, outcome: RunOutcome, *, message: str | None,
               ts: float | None, result: Any) -> None:
        """``run`` ended (or was cut off by the app's close: ``interrupted``): its footer, its network's
        lanes, the robots it used as tools, the approvals still asked, the MCP calls in flight."""
        run.activity = run.activity_since = None
        for child in run.children:
            child.activity = child.activity_since = None
        if run.network is not None:
            self._lanes.finish_group(column, run.network, message or "interrupted", ts)
        for call in run.calls.values():  # robots used as tools that never said how they ended
            inner = call.inner
            if inner is not None and inner.status == "running" and inner.run is not None:
                # A call that answered while its run went on started it in the background (a delegation).
                why = (BACKGROUND_NOT_FOLLOWED if call.status not in ("running", "approval") and outcome == "finished"
                       else message or "the run that called it ended")
                self._end_inner(column, inner.run, inner, "interrupted" if outcome == "interrupted" else "cancelled",
                                message=why, ts=ts)
        run.text = None
        for each in (run, *run.children):
            self._texts.end_reasoning(column, each)
        own = _own_result(run, result)
        usage = own.usage if own is not None else None
        if usage is not None and (usage.input_tokens or usage.output_tokens):
            run.result_usage = usage
        duration = own.duration if own is not None else None
        if not duration and run.started is not None and ts is not None:
            duration = max(0.0, ts - run.started)
        stop = own.stop_reason if outcome == "finished" and isinstance(own, RobotResult) else None
        if stop == "length":  # the answer was cut off at the token limit: the model may go on
            column.notice(run, "The answer was cut off at the token limit.", level="warning", action="continue",
                          details=STOP_NOTES["length"])
        elif stop == "context_full":  # the window is full: going on or a larger max_tokens cannot help
            column.notice(run, "The answer stopped: the model's context window is full.", level="warning",
                          details=STOP_NOTES["context_full"])
        run.end = RunEnd(outcome=outcome, message=message, max_turns=stop == "max_turns", duration=duration or None,
                         stop_reason=stop)
        run.footer = True
        for each in (run, *run.children):
            for call in each.calls.values():
                if call.approval is not None and call.approval.state == "asking":
                    call.approval.state = "stopped"
                    column.listener.item_changed(call)
                if outcome == "cancelled" and call.server and call.status == "running":
                    # An MCP call in flight when the run stopped: the SDK sent notifications/cancelled.
                    call.progress = ProgressState(value=call.progress.value if call.progress else 0.0,
                                                  total=call.progress.total if call.progress else None,
                                                  cancelled=True)
                    column.listener.item_changed(call)
        column.listener.run_changed(run)


def _own_result(run: RunState, result: Any) -> RobotResult | NetworkResult | None:
    """The terminal event's result when it is this run's own (a network's NetworkResult, a robot's
    RobotResult), with its usage; None otherwise (a stored network result read back as its last
    task's RobotResult would give that task's figures for the whole turn)."""
    if isinstance(result, NetworkResult) and result.network == run.robot:
        return result
    if isinstance(result, RobotResult) and result.robot_name == run.robot and run.network is None:
        return result
    return None


def status_text(event: ev.RunStatus) -> str | None:
    """The activity line for what a run waits for (None: nothing to wait for, the tokens stream)."""
    detail = event.detail
    match event.state:
        case "loading":
            return f"Loading — {detail}" if detail else "Loading…"
        case "connecting":
            return f"Connecting to {event.endpoint}…" if event.endpoint else "Connecting…"
        case "queued":
            return f"Queued — {detail}" if detail else "Queued…"
        case "waiting":
            return f"Waiting — {detail}" if detail else "Waiting for the first token…"
        case "retrying":
            return f"Retrying — {detail}" if detail else "Retrying…"
        case "streaming" | "fallback" | "notice":
            return None
        case _:
            assert_never(event.state)


def compaction_text(event: ev.ContextCompacted) -> str:
    """The marker's line: how many messages were summarised, and the tokens before and after."""
    why = {"manual": " on request", "overflow": " after the server refused the request as too long"}.get(
        event.trigger, "")
    window = f" of {event.window:,}" if event.window else ""
    return (f"⟲ Conversation compacted{why} — {event.newly_replaced} earlier messages summarised "
            f"({event.tokens_before:,} → {event.tokens_after:,} tokens{window})")


__all__ = ["RunLifecycle", "compaction_text", "status_text"]
