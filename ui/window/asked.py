"""Approvals in the order of their run's events: a chat gets an approval after the call it is about.

The approval gate asks in the run's task, and the window hears it at once (``Controller.approval_needed``);
the run's events reach the chat later, through the recording and the bridge. So an approval is not handed to a
chat when it is asked, but when the chat's stream brings the event that asks it (:func:`asked_by`): the
``approval_requested`` after the call's ``tool_use`` (a tool call's approval, an MCP server's request), or a
question's ``tool_use`` (AskUser's, a person's task: they have no approval event). The chat has shown the call
then, so the approval goes in its card, in its place, with nothing to wait for. One asked after its call came (an
AskUser question, asked while its tool runs) goes in at once (:func:`waits_for_its_call` is False), and so does
one that no stream of the chat carries (no run: a call run again from the inspector; a thread opened with one
waiting in a run nobody follows): its card is made from the request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from ui.chat.view.chat import ChatView
    from workspace import events as ev
    from workspace.approval import ApprovalDecision, ApprovalRequest

    Waiting = list[tuple[str | None, ApprovalRequest, asyncio.Future[ApprovalDecision]]]
    Asked = tuple[ApprovalRequest, asyncio.Future[ApprovalDecision]]


def asked_by(event: ev.Event, waiting: Callable[[], Waiting]) -> Asked | None:
    """The approval waiting (of ``waiting()``: the controller's, oldest first) that ``event``, one of a run's events
    the chat has just shown, asks: the ``approval_requested`` of its call, or a question's ``tool_use``."""
    from workspace import events as ev

    if isinstance(event, ev.ApprovalRequested):
        question = False
    elif isinstance(event, ev.ToolUse):
        question = True
    else:
        return None
    for _thread, request, future in waiting():
        if request.call_id == event.id and (request.run_id or "") == event.run_id \
                and bool(request.annotations.get("askUser")) == question:  # workspace.ask_user.front_end_ask's
            return request, future
    return None


def waits_for_its_call(chat: ChatView, request: ApprovalRequest, *, streaming: bool) -> bool:
    """Whether ``request``, asked now, is left for the chat's stream to bring (:func:`asked_by`): its call is not
    shown yet, and the chat follows a run live (``streaming``) whose events carry it (the request names a run)."""
    return streaming and bool(request.run_id) and chat.presenter.call(request.call_id, request.run_id) is None


def show_asked(chat: ChatView, event: ev.Event, waiting: Callable[[], Waiting]) -> None:
    """``event`` to the chat's presenter, then the approval it asks (if one waits) to the chat."""
    chat.presenter.feed(event)
    asked = asked_by(event, waiting)
    if asked is not None:
        chat.ask_approval(*asked)


__all__ = ["asked_by", "show_asked", "waits_for_its_call"]
