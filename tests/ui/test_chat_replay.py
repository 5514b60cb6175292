"""A thread reopened looks exactly like it did live: robots and networks run in the window, then
their thread is opened again and the chat's widgets (as text), its view state and the totals are
compared. A network turn's totals, which once changed on reopening, are the network case."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import close_app, wait_until
from tests.ui.chat_dump import assert_same, reopen, snapshot
from workspace.messages import Message
from workspace.providers.testing import AgentInfo, FunctionProvider, ToolCall
from workspace.result import Usage

NOTES = "alpha\nbeta\ngamma\n"
WRITERS = """\
name: writers
description: two writers at once, then a reader
mcp: none
robots:
  left_bot: {system_prompt: "You are LEFT.", tools: [remember]}
  right_bot: {system_prompt: "You are RIGHT.", tools: [remember]}
  reader_bot: {system_prompt: "You are READER.", tools: [recall]}
tasks:
  left: {robot: left_bot}
  right: {robot: right_bot}
  reader: {robot: reader_bot, depends_on: [left, right]}
"""


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


def _assert_totals_match_the_store(root: Any) -> None:
    """The presenter's turn totals are the ones the store summed from the same usage events."""
    store, thread_id = root.controller.store, root.controller.thread_id
    stored = [Usage(t.input_tokens, t.output_tokens, t.cost) for t in store.path(thread_id)]
    shown = root.window.chat.presenter.state.turns
    assert [(u.input_tokens, u.output_tokens) for u in stored] == [
        (t.totals.input_tokens, t.totals.output_tokens) for t in shown]
    thread = store.usage(thread_id)
    total = root.window.chat.presenter.state.totals
    assert (thread.input_tokens, thread.output_tokens) == (total.input_tokens, total.output_tokens)


# -- a robot: text, tool calls, approvals (one edited, one denied), a change reviewed and applied ------
@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES, encoding="utf-8")
    (root / "app.py").write_text("print('hi')\n", encoding="utf-8")
    return root


async def test_a_robot_thread_reopens_as_it_was_shown_live(provider: Any, db_path: Path, folder: Path) -> None:
    from tests.fakes.app_window import running_app
    from workspace.config import load_config

    config = load_config(folder, overrides={"review": {"mode": "review"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1300, 850)) as root:
        window, chat = root.window, root.window.chat
        root.controller.set_robot("file-helper")
        policy = root.controller.workspace.approval.policy
        policy.set_rule("ask", tool="edit_file")
        policy.set_rule("ask", tool="delete_file")
        provider.enqueue(
            ["Let me look first.", ToolCall("list_files", {"path": "."}, id="l1"),
             ToolCall("read_file", {"path": "notes.txt"}, id="r1")],
            ["Now the edit.", ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"},
                                       id="e1")],
            [ToolCall("delete_file", {"path": "app.py"}, id="d1")],
            "I proposed an edit; the file stays.",
        )
        window.runs.send("capitalise beta and remove app.py")
        await wait_until(lambda: chat.pending_approval() is not None, what="the edit's approval")
        panel = chat.pending_approval()
        panel.editor.setPlainText(json.dumps({"path": "notes.txt", "search": "beta", "replace": "Beta"}))
        panel.edit_and_approve()
        await wait_until(lambda: chat.pending_approval() is not None, what="the delete's approval")
        panel = chat.pending_approval()
        panel.reason.setText("keep it")
        panel.deny()
        await _idle(root)
        # review and apply the change in the dock: the card follows
        pane = window.docks.changes_pane
        # (as a person does: once the dock shows the edit; on a busy machine it comes after the run's end)
        await wait_until(lambda: bool(pane.model.pending_files), what="the edit in the Changes dock")
        pane.accept_all_button.click()
        pane.apply_button.click()
        await asyncio.sleep(0)
        await pane.commands.wait_idle()
        await wait_until(lambda: (folder / "notes.txt").read_text(encoding="utf-8") == NOTES.replace("beta", "Beta"),
                         what="the edit written")
        provider.enqueue("Thanks, noted.")
        window.runs.send("thank you")
        await _idle(root)

        live = snapshot(root)
        widgets = live["widgets"]
        for shown in ("tool list_files [done]", "tool read_file [done]", "decision='Approved with edited arguments",
                      "tool delete_file [denied]", "decision='Denied: keep it.'", "change <b>Proposed changes</b>",
                      "[applied]", "note=", "footer '"):
            assert shown in widgets, (shown, widgets)
        assert '"replace": "Beta"' in widgets  # the arguments the edit ran with
        assert len(chat.user_messages()) == 2 and chat.user_messages()[-1].note_block is not None
        _assert_totals_match_the_store(root)

        reopened = await reopen(root)
        assert_same(live, reopened)
        _assert_totals_match_the_store(root)
        card = chat.change_card(root.controller.session.changes.id)
        assert card is None or card.status in ("pending", "decided")


# -- networks: tasks at once with tool calls and an approval in a lane; the offline demo -------------------
@pytest.fixture
def writers(robotlab_home: Path) -> Path:
    path = robotlab_home / "config" / "networks" / "writers.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WRITERS, encoding="utf-8")
    return path


def _writers_reply(messages: list[Message], info: AgentInfo) -> Any:
    system = info.system or ""
    last = messages[-1]
    if last.is_tool_result:
        return "Stored, " + "and that is all. " * (3 if "LEFT" in system else 1)
    if "LEFT" in system:
        return ["Storing **left**.", ToolCall("remember", {"key": "left", "value": 1}, id="c1")]
    if "RIGHT" in system:
        return ["Storing right.", ToolCall("remember", {"key": "right", "value": 2}, id="c1")]
    if len(messages) == 1:
        return [ToolCall("recall", {"key": "left"}, id="c1")]
    return "Read both."


async def test_a_network_thread_reopens_with_the_same_lanes_and_totals(desktop: Any, writers: Path) -> None:
    """Two tasks at once (text interleaved, the same call id in both), an approval inside a lane, two
    turns: the footer's totals are every task's, live and reopened."""
    root = desktop
    window = root.window
    root.controller.workspace.provider = FunctionProvider(_writers_reply)
    root.controller.workspace.approval.policy.set_rule("ask", tool="remember", robot="left_bot")
    window.robots.refresh()
    window.robot_picker.setCurrentIndex(window.robot_model.row_of("writers", "network"))
    for message in ("go", "again"):
        window.runs.send(message)
        await wait_until(lambda: window.chat.pending_approval() is not None, what="the approval in the lane")
        window.chat.pending_approval().approve()
        await _idle(root)
    live = snapshot(root)
    lanes = [line for line in live["widgets"].splitlines() if line.startswith("lane ")]
    assert len(lanes) == 6 and all("[done]" in line for line in lanes)
    # the footer sums the three tasks, not the last task's figures
    presenter = window.chat.presenter
    turn = presenter.state.turns[-1]
    network_run = turn.top_runs[0]
    reader = next(r for r in turn.runs if r.lane is not None and r.lane.task == "reader")
    assert network_run.totals.input_tokens > reader.usage.input_tokens
    assert network_run.totals == turn.totals
    _assert_totals_match_the_store(root)
    reopened = await reopen(root)
    assert_same(live, reopened)
    _assert_totals_match_the_store(root)


async def test_the_offline_demo_networks_reopen_as_they_ran(db_path: Path) -> None:
    from ui.app import Application
    from workspace.providers.demo import DemoProvider

    root = Application(provider=DemoProvider(delay=0.001), db_path=db_path, theme_name="light")
    root.window.resize(1400, 900)
    root.window.show()
    try:
        window = root.window
        for network, message in (("parallel-analysis", "The new Acme dashboard is fast, but the export is broken."),
                                 ("support-triage", "I was charged twice for my subscription")):
            window.threads.new()
            window.robot_picker.setCurrentIndex(window.robot_model.row_of(network, "network"))
            window.runs.send(message)
            await _idle(root)
            window.runs.send(message + " Again, please.")
            await _idle(root)
            live = snapshot(root)
            assert "footer '" in live["widgets"] and "[done]" in live["widgets"]
            _assert_totals_match_the_store(root)
            assert_same(live, await reopen(root))
    finally:
        await close_app(root)
