"""An MCP server's requests in the chat: the sampling card and the elicitation form.

The presenter part runs on events (live, then the same turn reopened from its events); the window
part drives the real reference server (server-everything's trigger-sampling-request and
trigger-elicitation-request) through the whole app, then reopens the thread: decided requests show
what was decided, exactly as they did live.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fakes.stored_turns import FakeInfo, FakeView

from tests.fakes.app_window import close_app, turns_made, wait_until
from tests.ui.chat_dump import dump_state, dump_widgets, request_card_line
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.tool_calls import ElicitationItem, SamplingItem
from workspace import events as ev
from workspace.mcp.requests import ELICITATION, SAMPLING

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "As on your passport"},
        "age": {"type": "integer", "title": "Age", "minimum": 1, "maximum": 130},
        "pet": {"type": "string", "enum": ["cat", "dog"], "enumNames": ["Cat", "Dog"], "default": "dog"},
        "ok": {"type": "boolean", "title": "Agreed", "description": "I agree"},
    },
    "required": ["name"],
}
SAMPLE_INPUT = {"messages": [{"role": "user", "text": "What is 2+2?"}], "model": "Scripted",
                "systemPrompt": "Be brief.", "maxTokens": 50}


def E(cls: type[ev.BaseEvent], seq: int, **fields: Any) -> Any:
    return cls(run_id="r1", robot="helper", seq=seq, ts=100.0 + seq, **fields)


def _sampling_events(decision: str = "approve", *, scope: str = "once") -> list[ev.Event]:
    edited = {**SAMPLE_INPUT, "messages": [{"role": "user", "text": "What is 3+3?"}]}
    events: list[ev.Event] = [
        E(ev.RunStarted, 1, model="m"),
        E(ev.ToolUse, 2, id="t1", name="everything__trigger-sampling-request", input={"prompt": "x"},
          server="everything"),
        E(ev.ApprovalRequested, 3, id="mcp-sampling-1", name=SAMPLING, input=SAMPLE_INPUT, server="everything",
          annotations={"mcpRequest": "sampling"}),
    ]
    if decision == "approve":
        events += [E(ev.ApprovalDecided, 4, id="mcp-sampling-1", name=SAMPLING, decision="approve", input=edited,
                     scope=scope),
                   E(ev.ToolResult, 5, id="mcp-sampling-1", name=SAMPLING, payload={"data": "6"}, server="everything")]
    elif decision == "deny":
        events += [E(ev.ApprovalDecided, 4, id="mcp-sampling-1", name=SAMPLING, decision="deny", input=SAMPLE_INPUT,
                     reason="not now", scope="once")]
    return events


def _elicitation_events(action: str) -> list[ev.Event]:
    request = {"message": "Who are you?", "requestedSchema": SCHEMA, "content": {"name": "", "pet": "dog"}}
    events: list[ev.Event] = [
        E(ev.ToolUse, 6, id="t2", name="everything__trigger-elicitation-request", input={}, server="everything"),
        E(ev.ApprovalRequested, 7, id="mcp-elicitation-2", name=ELICITATION, input=request, server="everything",
          annotations={"mcpRequest": "elicitation"}),
    ]
    if action == "accept":
        content = {"name": "Ada", "pet": "cat", "ok": True}
        events += [E(ev.ApprovalDecided, 8, id="mcp-elicitation-2", name=ELICITATION, decision="approve",
                     input={**request, "content": content}, scope="once"),
                   E(ev.ToolResult, 9, id="mcp-elicitation-2", name=ELICITATION, payload={"data": content},
                     server="everything")]
    elif action in ("decline", "cancel"):
        events += [E(ev.ApprovalDecided, 8, id="mcp-elicitation-2", name=ELICITATION, decision="deny",
                     input=request, reason=action, scope="once")]
    return events


# -- the presenter --------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
def test_requests_become_their_own_items_and_read_the_same_reopened(action: str) -> None:
    events = [*_sampling_events(), *_elicitation_events(action), E(ev.RunFinished, 20)]
    live = ChatPresenter()
    live.add_user("go")
    live.feed_all(events)
    sampling = live.call("mcp-sampling-1", "r1")
    elicitation = live.call("mcp-elicitation-2", "r1")
    assert isinstance(sampling, SamplingItem) and isinstance(elicitation, ElicitationItem)
    assert sampling.messages == [{"role": "user", "text": "What is 3+3?"}]  # as edited
    assert sampling.model == "Scripted" and sampling.max_tokens == 50 and sampling.answer == "6"
    assert sampling.outcome == "Approved with edited messages."
    assert elicitation.action == action
    if action == "accept":
        assert elicitation.content == {"name": "Ada", "pet": "cat", "ok": True}
    text = dump_state(live.state)
    assert "sampling [ok]" in text and f"action={action}" in text

    reopened = ChatPresenter()
    reopened.load_turn(FakeView(FakeInfo("turn1"), events))
    assert dump_state(reopened.state).replace("turn=yes", "turn=no") == text


def test_a_request_nobody_answered_is_stopped_and_always_allowing_says_so() -> None:
    presenter = ChatPresenter()
    presenter.add_user("go")
    presenter.feed_all([*_sampling_events("none"), *_elicitation_events("none"),
                        E(ev.RunCancelled, 20, reason="stopped by the user")])
    sampling = presenter.call("mcp-sampling-1", "r1")
    elicitation = presenter.call("mcp-elicitation-2", "r1")
    assert isinstance(sampling, SamplingItem) and sampling.outcome == "Stopped before anyone decided."
    assert isinstance(elicitation, ElicitationItem) and elicitation.action == "stopped"

    presenter = ChatPresenter()
    presenter.feed_all(_sampling_events(scope="server"))
    item = presenter.call("mcp-sampling-1", "r1")
    assert isinstance(item, SamplingItem) and "without asking from now on" in item.outcome

    presenter = ChatPresenter()
    presenter.feed_all([*_sampling_events("deny")])
    item = presenter.call("mcp-sampling-1", "r1")
    assert isinstance(item, SamplingItem) and item.status == "denied" and item.outcome == "Denied: not now."


def test_an_elicitation_with_a_bad_schema_shows_its_error() -> None:
    presenter = ChatPresenter()
    presenter.feed(E(ev.ToolError, 3, id="mcp-elicitation-9", name=ELICITATION, server="bad",
                     error="bad asked for input with a schema that is not valid: property 'a' has type 'object'"))
    item = presenter.call("mcp-elicitation-9", "r1")
    assert isinstance(item, ElicitationItem) and item.action == "error" and "not valid" in str(item.error)


# -- the widgets, live against server-everything, then reopened -----------------------------------------
@pytest.fixture
def everything_robot(robotlab_home: Path, mcp_bin: Path) -> str:
    from workspace import paths

    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("mcpServers:\n"
                      f"  everything:\n    command: {mcp_bin / 'mcp-server-everything'}\n"
                      "    autoApprove: [trigger-sampling-request, trigger-elicitation-request]\n",
                      encoding="utf-8")
    robot = paths.user_robots_dir() / "asker.md"
    robot.parent.mkdir(parents=True, exist_ok=True)
    robot.write_text("---\ntools: [\"everything__*\"]\nmcp: [everything]\n---\nYou call the server's tools.", encoding="utf-8")
    return "asker"


@pytest.mark.timeout(120)
async def test_sampling_card_and_elicitation_form_against_the_reference_server(
        everything_robot: str, provider: Any, db_path: Path) -> None:
    from ui.app import Application
    from ui.chat.view.elicitation_form import ElicitationForm
    from ui.chat.view.sampling_card import SamplingCard
    from workspace.mcp import set_default_manager
    from workspace.providers.testing import ToolCall

    set_default_manager(None)
    root = Application(provider=provider, db_path=db_path)
    root.window.resize(1100, 900)
    root.window.show()
    chat = root.window.chat
    try:
        root.controller.set_robot(everything_robot)
        # 1. Sampling: the card asks; the person edits the message and the token limit, and approves.
        provider.enqueue([ToolCall("everything__trigger-sampling-request", {"prompt": "hello?", "maxTokens": 80})],
                         "Four.", "The server got its answer.")
        root.window.runs.send("ask the model through the server")
        try:
            await wait_until(lambda: any(c.asking for c in chat.request_cards()), timeout=30, what="the sampling card")
        except AssertionError:
            print(dump_widgets(chat))
            raise
        card = chat.request_cards()[0]
        assert isinstance(card, SamplingCard)
        assert card.accessibleName() == "Sampling request from everything"
        assert "hello?" in card.editors[0].toPlainText() and card.max_tokens is not None
        assert card.max_tokens.value() == 80
        assert root.window.chat.pending_approval() is card  # Ctrl+J goes to it
        root.window.grab().save(str(db_path.parent / "sampling-card.png"))
        card.editors[0].setPlainText("What is 2+2? Answer in one word.")
        card.max_tokens.setValue(20)
        card.approve()
        await wait_until(lambda: root.controller.idle, timeout=60, what="the run to end")
        await asyncio.sleep(0.05)
        assert "2+2? Answer in one word." in str(provider.history[1].messages[-1].to_dict())
        assert card.status_pill is not None and card.status_pill.text() == "answered"
        assert "Four." in " ".join(card.texts())
        tool = chat.card("call_1") or next(c for c in chat.tool_cards() if "sampling" in c.tool)
        assert tool.status == "ok"

        # 2. Elicitation: the form asks; Accept with the required name empty says why and keeps asking.
        provider.enqueue([ToolCall("everything__trigger-elicitation-request", {})], "Thanks, Ada.")
        root.window.runs.send("ask me for my details")
        await wait_until(lambda: any(isinstance(c, ElicitationForm) and c.asking for c in chat.request_cards()),
                         timeout=60, what="the elicitation form")
        form = next(c for c in chat.request_cards() if isinstance(c, ElicitationForm))
        assert form.editors["name"].input.accessibleName() == "String (required)"
        assert form.accept() is False
        assert form.editors["name"].problem.text() == "This field is required."
        assert form.asking
        name_input = form.editors["name"].input
        email_input = form.editors["email"].input
        from PySide6.QtWidgets import QLineEdit

        assert isinstance(name_input, QLineEdit) and isinstance(email_input, QLineEdit)
        email_input.setText("not an email")
        name_input.setText("Ada Lovelace")
        assert form.accept() is False
        assert "email address" in form.editors["email"].problem.text()
        email_input.setText("ada@example.com")
        root.window.grab().save(str(db_path.parent / "elicitation-form.png"))
        assert form.accept() is True
        await wait_until(lambda: root.controller.idle, timeout=60, what="the run to end")
        await asyncio.sleep(0.05)
        result = next(c for c in chat.tool_cards() if "elicitation" in c.tool)
        assert result.status == "ok" and "Ada Lovelace" in str(result.result)
        assert form.status_pill is not None and form.status_pill.text() == "accepted"
        assert any("Ada Lovelace" in t for t in form.texts())

        # 3. Reopened: the decided requests read exactly as they did live.
        live = [request_card_line(c) for c in chat.request_cards()]
        thread_id = root.controller.thread_id
        root.window.threads.new()
        await asyncio.sleep(0.05)
        root.window.threads.open(thread_id)
        await asyncio.sleep(0.05)
        await turns_made(chat)
        assert [request_card_line(c) for c in chat.request_cards()] == live
    finally:
        await close_app(root)
        set_default_manager(None)


async def test_the_cards_answer_from_the_keyboard_and_name_their_fields(qapp_instance: Any) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QWidget

    from ui.chat.view.chat import ChatView
    from ui.chat.view.elicitation_form import ElicitationForm
    from ui.chat.view.sampling_card import SamplingCard
    from workspace.approval import ApprovalRequest

    loop = asyncio.get_running_loop()
    chat = ChatView()
    chat.resize(800, 1400)
    chat.show()
    chat.activateWindow()
    try:
        chat.presenter.add_user("go")
        chat.presenter.feed_all(_sampling_events("none") + _elicitation_events("none"))
        sampled: asyncio.Future[Any] = loop.create_future()
        chat.ask_approval(ApprovalRequest(call_id="mcp-sampling-1", robot="helper", tool=SAMPLING,
                                          input=SAMPLE_INPUT, server="everything", run_id="r1",
                                          annotations={"mcpRequest": "sampling"}), sampled)
        elicited: asyncio.Future[Any] = loop.create_future()
        request = {"message": "Who are you?", "requestedSchema": SCHEMA, "content": {}}
        chat.ask_approval(ApprovalRequest(call_id="mcp-elicitation-2", robot="helper", tool=ELICITATION,
                                          input=request, server="everything", run_id="r1",
                                          annotations={"mcpRequest": "elicitation"}), elicited)
        await asyncio.sleep(0.05)  # laid out and shown
        card, form = chat.request_cards()
        assert isinstance(card, SamplingCard) and isinstance(form, ElicitationForm)

        # Every field has a name a screen reader says; required ones say so.
        names = [w.accessibleName() for w in form.findChildren(QWidget) if w.accessibleName()]
        assert "Your name (required)" in names and "Age" in names and "pet" in names and "Agreed" in names
        assert card.editors[0].accessibleName() == "Message 1 (user), editable"
        assert card.max_tokens is not None and card.max_tokens.accessibleName() == "Maximum tokens of the answer"

        # The form: Tab goes from field to field; Enter in a text field accepts once every field fits.
        name = form.editors["name"].input
        assert isinstance(name, QLineEdit)
        name.setFocus()
        QTest.keyClick(name, Qt.Key.Key_Return)
        assert not elicited.done() and form.editors["name"].problem.text() == "This field is required."
        QTest.keyClicks(name, "Ada")
        chain, widget = [], name
        while len(chain) < 8:
            widget = widget.nextInFocusChain()
            if widget.isVisible() and widget.focusPolicy().value & Qt.FocusPolicy.TabFocus.value:
                chain.append(widget)
        assert any(isinstance(w, QComboBox) for w in chain) and any(isinstance(w, QCheckBox) for w in chain)
        QTest.keyClick(name, Qt.Key.Key_Return)
        assert elicited.done() and elicited.result().input["content"] == {"name": "Ada", "pet": "dog", "ok": False}

        # The sampling card: y approves when the card has the focus (not when typing in a field).
        card.editors[0].setFocus()
        QTest.keyClick(card.editors[0], Qt.Key.Key_Y)
        assert not sampled.done() and card.editors[0].toPlainText() == "yWhat is 2+2?"  # typed, not approved
        card.setFocus()
        QTest.keyClick(card, Qt.Key.Key_Y)
        assert sampled.done() and sampled.result().approved
        assert sampled.result().input["messages"][0]["text"] == "yWhat is 2+2?"  # the edit went with it
    finally:
        chat.close()
        chat.deleteLater()
