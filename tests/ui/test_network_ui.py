"""Networks in the window: the picker, lanes per task in the chat, the Network dock, approvals, stop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from tests.fakes.app_window import turns_made, wait_until
from ui.chat.view.cards import ToolCard
from ui.chat.view.lanes import NetworkHeader
from ui.chat.view.messages import RunFooter, UserMessage
from ui.chat.view.stream import MarkdownStream
from workspace import events as ev
from workspace.messages import Message
from workspace.providers.testing import AgentInfo, FunctionProvider, ToolCall

WRITERS = """\
name: writers
description: two writers at once, then a reader
mcp: none
robots:
  left_bot: {system_prompt: "You are LEFT.", tools: [remember]}
  right_bot: {system_prompt: "You are RIGHT.", tools: [remember]}
  reader_bot: {system_prompt: "You are READER.", tools: none}
tasks:
  left: {robot: left_bot}
  right: {robot: right_bot}
  reader: {robot: reader_bot, depends_on: [left, right]}
"""


def triage_reply(messages: list[Message], info: AgentInfo) -> Any:
    system = info.system or ""
    text = str(messages[-1].content)
    if "triage desk" in system:
        return "billing" if "charge" in text else "general"
    if "billing specialist" in system:
        return f"**Billing** here. About: {text}"
    return f"General here. About: {text}"


@pytest.fixture
def provider() -> Any:
    """Overrides conftest's: every robot of a network answers by its system prompt."""
    return FunctionProvider(triage_reply)


@pytest.fixture
def writers(robotlab_home: Path) -> Path:
    path = robotlab_home / "config" / "networks" / "writers.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WRITERS, encoding="utf-8")
    return path


async def _idle(root: Any, what: str = "the run to end") -> None:
    await wait_until(lambda: root.controller.idle, what=what)
    await asyncio.sleep(0.05)


def _pick_network(root: Any, name: str) -> None:
    window = root.window
    row = window.robot_model.row_of(name, "network")
    assert row >= 0, f"{name} is not in the picker"
    window.robot_picker.setCurrentIndex(row)


def _refresh_networks(root: Any) -> None:
    root.window.robots.refresh()


def _lanes(root: Any) -> list[tuple[str, str]]:
    return [(lane.task, lane.status) for lane in root.window.chat.lanes()]


async def test_the_picker_lists_robots_and_networks_in_groups(desktop: Any) -> None:
    model = desktop.window.robot_model
    names = model.names()
    assert names[0] == "Robots" and "Networks" in names
    robots_at, networks_at = names.index("Robots"), names.index("Networks")
    assert "assistant" in names[robots_at:networks_at]
    assert {"support-triage", "parallel-analysis"} <= set(names[networks_at:])
    # the headings cannot be chosen
    assert not model.flags(model.index(networks_at)) & Qt.ItemFlag.ItemIsSelectable
    desktop.window.robot_picker.setCurrentIndex(networks_at)
    assert desktop.controller.target_kind == "robot"
    assert desktop.window.robot_picker.currentIndex() == model.row_of(desktop.controller.robot_name)

    _pick_network(desktop, "support-triage")
    assert desktop.controller.target_kind == "network" and desktop.controller.robot_name == "support-triage"
    assert desktop.window.status.robot.text() == "Network: support-triage"
    # the dock previews the picked network before anything runs
    pane = desktop.window.docks.network_pane
    assert pane.model.name == "support-triage"
    assert set(pane.graph.nodes) == {"classifier", "billing", "technical", "general"}
    assert set(pane.model.statuses().values()) == {"waiting"}
    assert [e.kind for e in pane.graph.edges] == ["route", "route", "route"]
    # back to a robot: no network to draw
    desktop.window.robot_picker.setCurrentIndex(model.row_of("assistant"))
    assert desktop.controller.target_kind == "robot"
    assert not pane.model.has_graph and pane.stack.currentWidget() is pane.empty


async def test_a_network_run_streams_into_lanes_in_order(desktop: Any, provider: Any) -> None:
    window = desktop.window
    _pick_network(desktop, "support-triage")
    window.runs.send("I was charged twice")
    await _idle(desktop)
    session = desktop.controller.session
    assert session.is_network and session.thread.kind == "network"
    items = window.chat.items()
    assert isinstance(items[0], UserMessage) and isinstance(items[1], NetworkHeader)
    assert isinstance(items[-1], RunFooter)
    assert _lanes(desktop) == [("classifier", "done"), ("technical", "skipped"), ("general", "skipped"),
                               ("billing", "done")]
    lanes = {lane.task: lane for lane in window.chat.lanes()}
    # the classifier's work folds away; the last task's answer (the network's answer) stays open
    assert lanes["classifier"].collapsed and lanes["classifier"].summary.text() == "billing"
    assert not lanes["billing"].collapsed
    assert lanes["billing"].text == "**Billing** here. About: I was charged twice"
    assert "not activated" in lanes["technical"].summary.text()
    assert lanes["billing"].chip.text() == "billing" and lanes["billing"].duration.text()
    assert [lane.title.text() for lane in window.chat.lanes()] == ["classifier", "technical", "general", "billing"]
    assert all(lane.title.font().bold() for lane in window.chat.lanes())
    # the robot's text lives inside its lane, not loose in the column
    assert not any(isinstance(w, MarkdownStream) for w in items)
    # a click on the header opens a folded lane
    lanes["classifier"].header.clicked.emit()
    assert not lanes["classifier"].collapsed and lanes["classifier"].user_toggled
    # the footer has the network's totals; the header summarises the tasks
    footer = items[-1]
    assert "tokens" in footer.usage.text()
    assert "2 done" in items[1].kind.text() and "2 skipped" in items[1].kind.text()
    # the thread reopens with the same lanes (rendered from the store)
    window.threads.new()
    window.threads.open(session.thread_id)
    await asyncio.sleep(0.05)
    await turns_made(window.chat)
    assert _lanes(desktop) == [("classifier", "done"), ("technical", "skipped"), ("general", "skipped"),
                               ("billing", "done")]
    assert window.network_model.statuses() == {"classifier": "done", "billing": "done", "technical": "skipped",
                                               "general": "skipped"}


async def test_the_dock_shows_the_offline_demo_triage(db_path: Path) -> None:
    """The shipped support-triage network on the offline demo: one specialist runs, two are skipped."""
    from tests.fakes.app_window import close_app
    from ui.app import Application
    from workspace.providers.demo import DemoProvider

    root = Application(provider=DemoProvider(delay=0.001), db_path=db_path, theme_name="light")
    root.window.resize(1400, 900)
    root.window.show()
    try:
        window = root.window
        _pick_network(root, "support-triage")
        window.runs.send("I was charged twice for my subscription")
        await _idle(root)
        statuses = window.network_model.statuses()
        assert statuses["classifier"] == "done"
        specialists = {name: statuses[name] for name in ("billing", "technical", "general")}
        assert sorted(specialists.values()) == ["done", "skipped", "skipped"]
        assert specialists["billing"] == "done"
        pane = window.docks.network_pane
        assert window.network_model.run_status == "finished"
        assert "2 done" in pane.state.text() and "2 skipped" in pane.state.text()
        # the answer task is open in the panel; the route it took is drawn as taken
        assert pane.selected() == "billing"
        taken = {(e.edge["from"], e.edge["to"]): e.state() for e in pane.graph.edges}
        assert taken == {("classifier", "billing"): "taken", ("classifier", "technical"): "not-taken",
                         ("classifier", "general"): "not-taken"}
        # clicking a node opens that task: its transcript and why it was skipped
        node = pane.graph.nodes["technical"]
        view = pane.graph
        window.docks["network"].show()
        window.docks["network"].raise_()
        await asyncio.sleep(0.05)
        center = view.mapFromScene(node.mapToScene(node.boundingRect().center()))
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                         QPoint(center.x(), center.y()))
        assert pane.selected() == "technical"
        assert "WHY IT WAS SKIPPED" in pane.detail.overview.toPlainText()
        assert "routed to billing" in pane.detail.overview.toPlainText()
        pane.select("billing")
        transcript = pane.detail.transcript.toPlainText()
        assert "task_started" in transcript and "text" in transcript and "task_finished" in transcript
        assert "Billing specialist" in pane.detail.overview.toPlainText()
        assert '"status": "done"' in pane.detail.result.toPlainText()
        assert '"robot_name": "billing"' in pane.detail.result.toPlainText()
        assert "received" in pane.detail.overview.toPlainText().lower()
        # "show in chat" opens the task's lane
        window.chat.lane("classifier").set_collapsed(True)
        pane.select("classifier")
        pane.detail.reveal.click()
        assert not window.chat.lane("classifier").collapsed
    finally:
        await close_app(root)


async def test_an_approval_in_a_network_names_the_robot_and_the_task(desktop: Any, writers: Path) -> None:
    def reply(messages: list[Message], info: AgentInfo) -> Any:
        system = info.system or ""
        if messages[-1].is_tool_result:
            return "stored"
        if "LEFT" in system:
            return ToolCall("remember", {"key": "left", "value": 1}, id="c1")
        if "RIGHT" in system:
            return "nothing to store"
        return "read"

    desktop.controller.workspace.provider = FunctionProvider(reply)
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    _refresh_networks(desktop)
    _pick_network(desktop, "writers")
    desktop.window.runs.send("go")
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    panel = desktop.window.chat.pending_approval()
    assert panel.request.robot == "left_bot" and panel.request.task == "left"
    title = panel.findChild(type(desktop.window.status.robot), "ApprovalTitle").text()
    assert "left_bot" in title and "in task" in title and "<b>left</b>" in title
    # the card sits in the asking task's lane, which is open
    lane = desktop.window.chat.lane("left")
    assert lane is not None and not lane.collapsed
    assert [c.call_id for c in lane.tool_cards()] == ["c1"]
    # the dock follows the bridge's batches, a frame after the card
    await wait_until(lambda: desktop.window.network_model.statuses()["left"] == "running", what="the dock")
    QTest.keyClick(panel, Qt.Key.Key_Y)
    await _idle(desktop)
    assert _lanes(desktop) == [("left", "done"), ("right", "done"), ("reader", "done")]
    card = desktop.window.chat.card("c1")
    assert isinstance(card, ToolCard) and card.status == "ok"
    # the memory dock shows the shared value with its writer
    entry = desktop.window.memory_model.entry("left")
    assert entry is not None and entry.value == 1 and entry.writer == "left_bot"


async def test_stop_mid_run_cancels_every_running_task(desktop: Any, writers: Path) -> None:
    async def reply(messages: list[Message], info: AgentInfo) -> Any:
        await asyncio.Event().wait()  # never answers
        return "unreachable"

    desktop.controller.workspace.provider = FunctionProvider(reply)
    _refresh_networks(desktop)
    _pick_network(desktop, "writers")
    window = desktop.window
    window.runs.send("go")
    await wait_until(lambda: _lanes(desktop) == [("left", "running"), ("right", "running")],
                     what="two lanes running")
    # the dock's model follows the bridge's batches (a frame later than the lanes)
    await wait_until(lambda: window.network_model.statuses() == {"left": "running", "right": "running",
                                                                 "reader": "waiting"}, what="the dock")
    QTest.keyClick(window, Qt.Key.Key_Escape)
    await _idle(desktop, "the run to stop")
    assert _lanes(desktop) == [("left", "cancelled"), ("right", "cancelled"), ("reader", "cancelled")]
    assert window.network_model.statuses() == {"left": "cancelled", "right": "cancelled", "reader": "cancelled"}
    assert window.network_model.run_status == "cancelled"
    footer = [w for w in window.chat.items() if isinstance(w, RunFooter)][-1]
    assert "Stopped" in footer.status.text()
    assert "stopped" in window.docks.network_pane.state.text()
    # the stored transcript agrees
    turn = desktop.controller.session.transcript()[-1]
    assert turn.status == "cancelled"
    finished = {e.task: e.status for e in turn.events if isinstance(e, ev.TaskFinished)}
    assert finished == {"left": "cancelled", "right": "cancelled", "reader": "cancelled"}
    assert not window.composer.running


async def test_the_network_model_follows_events_without_a_window() -> None:
    from ui.network.model import NetworkModel

    model = NetworkModel()
    graph = {"name": "n", "nodes": [{"name": "a", "robot": "ra", "optional": False, "step": 1},
                                    {"name": "b", "robot": "rb", "optional": True, "step": 2}],
             "edges": [{"from": "a", "to": "b", "kind": "route", "label": "yes"}], "groups": {}}
    model.set_graph(graph)
    changed: list[str] = []
    model.task_changed.connect(changed.append)
    model.add_events([
        ev.RunStarted(run_id="n1", robot="n", seq=1, message="hi"),
        ev.TaskStarted(run_id="n1", robot="ra", seq=2, task="a", message="hi", ts=10.0),
        ev.RunStarted(run_id="a1", robot="ra", seq=3, task="a"),
        ev.Text(run_id="a1", robot="ra", seq=4, task="a", text="yes"),
        ev.TaskFinished(run_id="n1", robot="ra", seq=5, task="a", status="done", ts=11.5),
        ev.TaskFinished(run_id="n1", robot="rb", seq=6, task="b", status="skipped", error="not activated"),
        ev.RunFinished(run_id="n1", robot="n", seq=7),
    ])
    assert model.statuses() == {"a": "done", "b": "skipped"}
    assert changed == ["a", "b"]
    a = model.task("a")
    assert a is not None and a.text == "yes" and a.message == "hi" and a.duration == 1.5
    assert model.task("b").reason == "not activated"  # type: ignore[union-attr]
    assert model.run_status == "finished" and model.answer_task == "a" and model.message == "hi"
    assert model.summary() == "1 done · 1 skipped"
    assert model.steps() == [["a"], ["b"]]
    # a new run starts every task over
    model.add_events([ev.RunStarted(run_id="n2", robot="n", seq=1)])
    assert model.statuses() == {"a": "waiting", "b": "waiting"} and model.run_status == "running"


async def test_regenerate_a_network_answer_and_switch_themes(desktop: Any) -> None:
    window = desktop.window
    _pick_network(desktop, "support-triage")
    window.runs.send("I was charged twice")
    await _idle(desktop)
    expected = [("classifier", "done"), ("technical", "skipped"), ("general", "skipped"), ("billing", "done")]
    window.runs.regenerate_last()
    await _idle(desktop)
    assert window.chat.user_messages()[-1].sibling_count == 2
    assert _lanes(desktop) == expected
    assert len(window.chat.lane_groups) == 1  # the fork shows only the new run
    assert window.network_model.statuses()["billing"] == "done"
    window.settings_flow.set_theme("dark")
    await turns_made(window.chat)  # (the thread shown again: its turns' widgets come in the next steps)
    assert _lanes(desktop) == expected and window.docks.network_pane.graph.nodes
    window.settings_flow.set_theme("light")


async def test_a_failing_task_fails_the_network_visibly(desktop: Any) -> None:
    from workspace.providers.testing import Fail

    def reply(messages: list[Message], info: AgentInfo) -> Any:
        if "triage desk" in (info.system or ""):
            return "billing"
        return ["Looking", Fail("the billing system is down")]

    desktop.controller.workspace.provider = FunctionProvider(reply)
    window = desktop.window
    _pick_network(desktop, "support-triage")
    window.runs.send("I was charged twice")
    await _idle(desktop)
    assert _lanes(desktop) == [("classifier", "done"), ("technical", "skipped"), ("general", "skipped"),
                               ("billing", "failed")]
    billing = window.chat.lane("billing")
    assert billing is not None and not billing.collapsed
    assert "billing system is down" in billing.note.text()
    footer = [w for w in window.chat.items() if isinstance(w, RunFooter)][-1]
    assert "Failed" in footer.status.text() and "billing" in footer.status.text()
    assert window.network_model.run_status == "failed"
    assert window.network_model.statuses()["billing"] == "failed"
    assert window.docks.network_pane.selected() == "billing"  # the dock opens the failed task
    assert "WHY IT FAILED" in window.docks.network_pane.detail.overview.toPlainText()
