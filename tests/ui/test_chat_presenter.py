"""The chat's presenter without a window: events in, view state out (every event class), the
same state for a live run and its stored turn, lazy loading, and the totals of network turns."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from fakes.stored_turns import FakeInfo, FakeSource, FakeView

from tests.ui.chat_dump import dump_state
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.state import (
    ChangeItem,
    HeaderItem,
    Item,
    LaneItem,
    NetworkItem,
    RunState,
    TextItem,
    TurnState,
)
from ui.chat.model.tool_calls import ToolCallItem
from workspace import events as ev
from workspace.persistence import coalesce_text
from workspace.result import NetworkResult, RobotResult, TaskState, Usage

ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    """A ChatListener that writes down what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def chat_reset(self) -> None:
        self.calls.append(("reset", None))

    def turn_added(self, turn: TurnState) -> None:
        self.calls.append(("turn", turn))

    def turn_removed(self, turn: TurnState) -> None:
        self.calls.append(("turn_removed", turn))

    def user_changed(self, turn: TurnState) -> None:
        self.calls.append(("user", turn))

    def item_added(self, item: Item) -> None:
        self.calls.append(("added", item))

    def item_changed(self, item: Item) -> None:
        self.calls.append(("changed", item))

    def text_appended(self, item: TextItem, delta: str) -> None:
        self.calls.append(("text", delta))

    def tool_output(self, item: ToolCallItem, text: str) -> None:
        self.calls.append(("output", text))

    def run_changed(self, run: RunState) -> None:
        self.calls.append(("run", run))

    def hidden_changed(self) -> None:
        self.calls.append(("hidden", None))

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def E(cls: type[ev.Event], seq: int, run: str = "r1", robot: str = "assistant", **fields: Any) -> Any:
    return cls(run_id=run, robot=robot, seq=seq, ts=100.0 + seq, **fields)


def usage(seq: int, run: str, robot: str, total_in: int, total_out: int, *, task: str | None = None,
          calls_in: int = 0, calls_out: int = 0) -> ev.Usage:
    return ev.Usage(run_id=run, robot=robot, seq=seq, task=task, ts=100.0 + seq, input_tokens=calls_in or total_in,
                    output_tokens=calls_out or total_out, total_input_tokens=total_in, total_output_tokens=total_out,
                    cost=0.001, total_cost=0.001)


def robot_events() -> list[ev.Event]:
    """A robot's turn: text, two tool calls (one asked for approval and edited), a change, text."""
    files = [{"path": "notes.txt", "action": "modify", "hunks": 1, "added": 2, "removed": 1}]
    return [
        E(ev.RunStarted, 1, message="store teal"),
        E(ev.TextDelta, 2, text="Let me "),
        E(ev.TextDelta, 3, text="store it."),
        usage(4, "r1", "assistant", 10, 5),
        E(ev.Text, 5, text="Let me store it."),
        E(ev.ToolUse, 6, id="c1", name="remember", input={"key": "color", "value": "teal"}),
        E(ev.ApprovalRequested, 7, id="c1", name="remember", input={"key": "color", "value": "teal"}),
        E(ev.ApprovalDecided, 8, id="c1", name="remember", decision="approve",
          input={"key": "color", "value": "blue"}, scope="once"),
        E(ev.MemoryChanged, 9, key="color", value="blue", writer="assistant"),
        E(ev.ToolResult, 10, id="c1", name="remember", payload={"data": {"stored": True}}, duration=0.02),
        E(ev.ToolUse, 11, id="c2", name="write_file", input={"path": "notes.txt"}),
        E(ev.ChangeProposed, 12, change_set_id="cs1", files=files, tool_id="c2"),
        E(ev.ToolResult, 13, id="c2", name="write_file", payload={"data": "proposed"}, duration=0.01),
        usage(14, "r1", "assistant", 30, 12, calls_in=20, calls_out=7),
        E(ev.TextDelta, 15, text="All **done**."),
        E(ev.Text, 16, text="All **done**."),
        E(ev.RunFinished, 17, result=RobotResult(robot_name="assistant", output=[], usage=Usage(30, 12, 0.002),
                                                 duration=1.5)),
        E(ev.ChangeDecided, 18, change_set_id="cs1",
          outcome=[{"path": "notes.txt", "accepted": [0], "rejected": [], "status": "applied"}], checkpoint_id="k1"),
    ]


def test_a_robot_turn_becomes_messages_cards_and_a_footer() -> None:
    recorder = Recorder()
    presenter = ChatPresenter(recorder)
    turn = presenter.add_user("store teal")
    presenter.set_user(turn, turn_id="t1")
    for event in robot_events():
        presenter.feed(event)
    kinds = [type(i).__name__ for i in turn.items]
    assert kinds == ["HeaderItem", "TextItem", "ToolCallItem", "ToolCallItem", "ChangeItem", "TextItem"]
    header, first, c1, c2, change, last = turn.items
    assert isinstance(header, HeaderItem) and header.robot == "assistant"
    assert isinstance(first, TextItem) and first.text == "Let me store it."
    assert isinstance(last, TextItem) and last.text == "All **done**."
    # the approved call runs with the edited arguments; its approval says so
    assert isinstance(c1, ToolCallItem) and c1.status == "ok" and c1.arguments == {"key": "color", "value": "blue"}
    assert c1.approval is not None and c1.approval.note == "Approved with edited arguments (once)."
    assert c1.result_value == {"stored": True} and c1.duration == 0.02
    assert isinstance(c2, ToolCallItem) and c2.status == "ok"
    assert isinstance(change, ChangeItem) and change.status == "decided" and change.accepted == 1
    assert change.written and change.checkpoint_id == "k1" and change.can_undo
    run = presenter.run("r1")
    assert run is not None and run.footer and run.end is not None
    assert run.end.outcome == "finished" and run.end.duration == 1.5 and run.end.status_text == ""
    assert run.totals == Usage(30, 12, 0.001) and len(run.model_calls) == 2
    assert turn.totals == presenter.state.totals == Usage(30, 12, 0.001)
    assert run.answer_text == "Let me store it.\n\nAll **done**."
    # the text grew by its deltas; the listener saw every step
    assert [d for name, d in recorder.calls if name == "text"] == ["Let me ", "store it.", "All **done**."]
    assert recorder.names()[:2] == ["turn", "user"]


def test_every_event_class_is_handled_in_any_order() -> None:
    """Each class of the Event union, fed with defaults, changes the state or is ignored on purpose."""
    presenter = ChatPresenter(Recorder())
    presenter.add_user("hi")
    for seq, cls in enumerate(typing.get_args(ev.Event), 1):
        presenter.feed(cls(run_id="r", robot="assistant", seq=seq))
    turn = presenter.state.turns[-1]
    run = presenter.run("r")
    assert run is not None and run.end is not None and run.end.outcome == "cancelled"  # the last terminal
    assert any(isinstance(i, ToolCallItem) for i in turn.items)
    assert any(isinstance(i, ChangeItem) for i in turn.items)
    assert any(isinstance(i, TextItem) for i in turn.items)


@pytest.mark.parametrize(("event", "status"), [
    (E(ev.ToolError, 3, id="c1", name="rm", error="Denied by the user: too risky"), "denied"),
    (E(ev.ToolError, 3, id="c1", name="rm", error="The approval policy denies 'rm'."), "denied"),
    (E(ev.ToolError, 3, id="c1", name="rm", error="The user stopped the run before this tool call finished."),
     "stopped"),
    (E(ev.ToolError, 3, id="c1", name="rm", error={"type": "OSError", "message": "disk full"}), "error"),
    (E(ev.ToolResult, 3, id="c1", name="rm", payload={"error": "no such file"}), "error"),
])
def test_tool_errors_denials_and_stops(event: ev.Event, status: str) -> None:
    presenter = ChatPresenter()
    presenter.add_user("remove it")
    presenter.feed(E(ev.RunStarted, 1))
    presenter.feed(E(ev.ToolUse, 2, id="c1", name="rm", input={"path": "x"}))
    presenter.feed(event)
    call = presenter.call("c1")
    assert call is not None and call.status == status and call.failed
    assert call.error_label == {"denied": "Denied", "stopped": "Stopped"}.get(status, "Error")


def test_a_result_without_its_call_still_shows_a_card() -> None:
    presenter = ChatPresenter()
    presenter.add_user("x")
    presenter.feed(E(ev.ToolResult, 2, id="c9", name="recall", payload={"data": 1}))
    call = presenter.call("c9")
    assert call is not None and call.status == "ok" and call.arguments == {}


@pytest.mark.parametrize(("terminal", "outcome", "text"), [
    (E(ev.RunFailed, 9, error="the model went away"), "failed", "Failed — the model went away"),
    (E(ev.RunCancelled, 9), "cancelled", "■ Stopped by you"),
    (E(ev.RunCancelled, 9, reason="timed out"), "cancelled", "■ Stopped — timed out"),
    (E(ev.RunFinished, 9, result=RobotResult(robot_name="assistant", output=[], stop_reason="max_turns")),
     "finished", "■ Stopped at the turn limit"),
])
def test_how_a_run_ended(terminal: ev.Event, outcome: str, text: str) -> None:
    presenter = ChatPresenter()
    presenter.add_user("go")
    presenter.feed(E(ev.RunStarted, 1))
    presenter.feed(E(ev.ToolUse, 2, id="c1", name="remember", input={}))
    presenter.feed(E(ev.ApprovalRequested, 3, id="c1", name="remember", input={}))
    presenter.feed(terminal)
    run = presenter.run("r1")
    assert run is not None and run.end is not None and run.end.outcome == outcome
    assert run.end.status_text.startswith(text)
    assert run.end.duration == 8.0  # no result duration: from run_started to the end
    call = presenter.call("c1")
    assert call is not None and call.approval is not None and call.approval.note == "Stopped before anyone decided."


def _turn_events(i: int) -> list[ev.Event]:
    run = f"r{i}"
    return [E(ev.RunStarted, 1, run=run), E(ev.Text, 2, run=run, text=f"answer {i}"),
            usage(3, run, "assistant", 10, 2), E(ev.RunFinished, 4, run=run)]


def test_a_stored_thread_shows_its_last_turns_and_loads_earlier_ones_on_top() -> None:
    source = FakeSource({f"t{i}": FakeView(FakeInfo(f"t{i}", 10, 2, 0.001), _turn_events(i), user_text=f"q {i}")
                         for i in range(25)})
    recorder = Recorder()
    presenter = ChatPresenter(recorder)
    presenter.load_thread(source, initial=10)
    assert [t.user.text for t in presenter.state.turns if t.user] == [f"q {i}" for i in range(15, 25)]
    assert presenter.hidden_turns == 15
    assert presenter.state.totals.input_tokens == 250  # the hidden turns count with their stored totals
    assert presenter.load_earlier(10) == 10
    assert [t.user.text for t in presenter.state.turns if t.user][:3] == ["q 5", "q 6", "q 7"]
    assert presenter.hidden_turns == 5 and presenter.state.totals.input_tokens == 250
    added = [turn for name, turn in recorder.calls if name == "turn"]
    assert [t.user.text for t in added[-10:]] == [f"q {i}" for i in range(5, 15)]  # inserted oldest first, on top
    assert presenter.load_earlier(40) == 5 and presenter.hidden_turns == 0 and presenter.load_earlier() == 0


def test_an_interrupted_turn_ends_its_run_and_lanes_where_it_stopped() -> None:
    presenter = ChatPresenter()
    events = [
        E(ev.RunStarted, 1, run="n1", robot="net"),
        E(ev.TaskStarted, 2, run="n1", robot="a_bot", task="a", message="go"),
        ev.RunStarted(run_id="a1", robot="a_bot", task="a", seq=1, ts=103.0),
        ev.Text(run_id="a1", robot="a_bot", task="a", seq=2, ts=104.0, text="half an ans"),
    ]
    presenter.load_turn(FakeView(FakeInfo("t1"), events, status="interrupted", user_text="go"))
    run = presenter.run("n1")
    assert run is not None and run.end is not None and run.end.outcome == "interrupted"
    assert run.end.status_text == "■ Stopped — interrupted: the app closed before the run finished"
    lane = presenter.lane("a")
    assert lane is not None and lane.status == "cancelled" and lane.finished == 104.0  # not "now": stable
    assert lane.summary == "half an ans"


def network_events() -> list[ev.Event]:
    """A network: two tasks at once (their text interleaves), a skipped one, then a reader."""
    def t(cls: type[ev.Event], seq: int, run: str, robot: str, task: str, **fields: Any) -> Any:
        return cls(run_id=run, robot=robot, task=task, seq=seq, ts=200.0 + seq, **fields)

    left = RobotResult(robot_name="left_bot", output=[], usage=Usage(13, 11, 0.001), duration=0.1)
    right = RobotResult(robot_name="right_bot", output=[], usage=Usage(12, 10, 0.001), duration=0.1)
    reader = RobotResult(robot_name="reader_bot", output=[], usage=Usage(8, 1, 0.001), duration=0.01)
    tasks = {name: TaskState(name=name, robot=f"{name}_bot", optional=False, depends_on=[], status="done",
                             result=result) for name, result in (("left", left), ("right", right), ("reader", reader))}
    network = NetworkResult(network="writers", status="done", tasks=tasks, order=["left", "right", "reader"],
                            params={}, duration=0.3)
    return [
        ev.RunStarted(run_id="n1", robot="writers", seq=1, ts=200.0, message="go"),
        t(ev.TaskStarted, 2, "n1", "left_bot", "left", message="go"),
        t(ev.TaskStarted, 3, "n1", "right_bot", "right", message="go"),
        t(ev.RunStarted, 1, "a", "left_bot", "left"),
        t(ev.RunStarted, 1, "b", "right_bot", "right"),
        t(ev.TextDelta, 2, "a", "left_bot", "left", text="thinking "),
        t(ev.TextDelta, 2, "b", "right_bot", "right", text="storing"),
        t(ev.TextDelta, 3, "a", "left_bot", "left", text="hard"),
        t(ev.ToolUse, 4, "b", "right_bot", "right", id="c1", name="remember", input={"key": "right"}),
        t(ev.Usage, 3, "b", "right_bot", "right", input_tokens=5, output_tokens=4, total_input_tokens=5,
          total_output_tokens=4),
        t(ev.ToolUse, 5, "a", "left_bot", "left", id="c1", name="remember", input={"key": "left"}),
        t(ev.Usage, 4, "a", "left_bot", "left", input_tokens=6, output_tokens=5, total_input_tokens=6,
          total_output_tokens=5),
        t(ev.ToolResult, 6, "a", "left_bot", "left", id="c1", name="remember", payload={"data": "ok"}),
        t(ev.ToolResult, 5, "b", "right_bot", "right", id="c1", name="remember", payload={"data": "ok"}),
        t(ev.Text, 7, "a", "left_bot", "left", text="stored"),
        t(ev.Usage, 8, "a", "left_bot", "left", input_tokens=7, output_tokens=6, total_input_tokens=13,
          total_output_tokens=11),
        t(ev.TaskFinished, 4, "n1", "left_bot", "left", status="done", result=left),
        t(ev.Text, 6, "b", "right_bot", "right", text="done too"),
        t(ev.Usage, 7, "b", "right_bot", "right", input_tokens=7, output_tokens=6, total_input_tokens=12,
          total_output_tokens=10),
        t(ev.TaskFinished, 5, "n1", "right_bot", "right", status="done", result=right),
        t(ev.TaskFinished, 6, "n1", "spare_bot", "spare", status="skipped", error="not activated"),
        t(ev.TaskStarted, 7, "n1", "reader_bot", "reader", message="both stored"),
        t(ev.RunStarted, 1, "c", "reader_bot", "reader"),
        t(ev.TextDelta, 2, "c", "reader_bot", "reader", text="**Read** both."),
        t(ev.Usage, 3, "c", "reader_bot", "reader", input_tokens=8, output_tokens=1, total_input_tokens=8,
          total_output_tokens=1),
        t(ev.Text, 4, "c", "reader_bot", "reader", text="**Read** both."),
        t(ev.TaskFinished, 8, "n1", "reader_bot", "reader", status="done", result=reader),
        ev.RunFinished(run_id="n1", robot="writers", seq=9, ts=200.3, result=network),
    ]


def test_a_network_run_makes_lanes_and_sums_its_tasks() -> None:
    presenter = ChatPresenter()
    turn = presenter.add_user("go")
    presenter.feed_all(network_events())
    kinds = [type(i).__name__ for i in turn.items]
    assert kinds == ["NetworkItem", "LaneItem", "LaneItem", "LaneItem", "LaneItem"]
    group = turn.items[0]
    assert isinstance(group, NetworkItem) and group.ended and group.summary == "4 tasks · 3 done · 1 skipped"
    lanes = {item.task: item for item in turn.items if isinstance(item, LaneItem)}
    assert lanes["left"].text == "thinking hard\n\nstored" and [type(i).__name__ for i in lanes["left"].items] == [
        "TextItem", "ToolCallItem", "TextItem"]
    assert [type(i).__name__ for i in lanes["right"].items] == ["TextItem", "ToolCallItem", "TextItem"]
    # the same call id in two tasks: two calls, each in its own lane
    left_call, right_call = lanes["left"].items[1], lanes["right"].items[1]
    assert isinstance(left_call, ToolCallItem) and isinstance(right_call, ToolCallItem)
    assert left_call.arguments == {"key": "left"} and right_call.arguments == {"key": "right"}
    assert left_call is presenter.call("c1", "a") and right_call is presenter.call("c1", "b")
    # folding: the earlier answers fold, the network's answer (the last task done) stays open
    assert lanes["left"].collapsed and lanes["right"].collapsed and not lanes["reader"].collapsed
    assert lanes["spare"].status == "skipped" and lanes["spare"].summary == "not activated"
    assert lanes["left"].usage == Usage(13, 11, None) and lanes["left"].duration == 2.0
    # the footer: the tasks' usage summed, the network's time
    run = presenter.run("n1")
    assert run is not None and run.end is not None and run.end.duration == 0.3
    assert run.totals == Usage(33, 22, None) == turn.totals
    assert not any(isinstance(i, HeaderItem) for i in turn.items)  # lanes name their robots


def test_a_network_turn_keeps_its_totals_whatever_result_the_store_gives_back() -> None:
    """Reopened, a network turn's footer showed its last task's tokens and time.
    The stored result read back as the last task's RobotResult (what the store used to give); the
    totals come from the usage events, the time from the network run's own events."""
    live = ChatPresenter()
    live.add_user("go")
    live.feed_all(network_events())
    events = network_events()
    network = events[-1]
    assert isinstance(network, ev.RunFinished) and isinstance(network.result, NetworkResult)
    last_task = network.result.last
    assert last_task is not None and last_task.usage == Usage(8, 1, 0.001)
    events[-1] = network.replace(result=last_task)
    replayed = ChatPresenter()
    replayed.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events), user_text="go"))
    for presenter in (live, replayed):
        run = presenter.run("n1")
        assert run is not None and run.totals == Usage(33, 22, None)
    replayed_run = replayed.run("n1")
    assert replayed_run is not None and replayed_run.end is not None and replayed_run.end.duration == pytest.approx(0.3)


def test_live_and_stored_turns_give_the_same_state() -> None:
    """The live feed (deltas one by one) and the stored turn (deltas coalesced) dump alike."""
    for events in (robot_events(), network_events()):
        live = ChatPresenter()
        turn = live.add_user("go")
        live.set_user(turn, turn_id="t1")
        live.feed_all(events)
        stored = ChatPresenter()
        stored.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events), user_text="go"))
        assert dump_state(live.state) == dump_state(stored.state)


def test_a_reset_drops_the_late_events_of_runs_still_going() -> None:
    presenter = ChatPresenter()
    presenter.add_user("first")
    presenter.feed(E(ev.RunStarted, 1, run="old"))
    presenter.reset()  # another thread opens while "old" still runs
    presenter.add_user("second")
    presenter.feed(E(ev.RunCancelled, 2, run="old"))
    presenter.feed(E(ev.RunStarted, 1, run="new"))
    assert presenter.run("old") is None and presenter.run("new") is not None


def test_events_shown_from_the_store_are_not_shown_twice() -> None:
    presenter = ChatPresenter()
    events = robot_events()
    presenter.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events[:6]), status="running", user_text="q"))
    for event in events:  # the run goes on: its consumer sees every event from the start
        presenter.feed(event)
    once = ChatPresenter()
    once.add_user("q")
    once.feed_all(events)
    assert dump_state(presenter.state).replace("turn=yes", "turn=no") == dump_state(once.state)


def test_a_decision_before_its_change_shows_once_the_change_does() -> None:
    presenter = ChatPresenter()
    presenter.add_user("edit")
    outcome = [{"path": "a.txt", "accepted": [], "rejected": [0]}]
    presenter.feed(E(ev.ChangeDecided, 5, change_set_id="cs", outcome=outcome))
    presenter.feed(E(ev.ChangeProposed, 2, change_set_id="cs", files=[{"path": "a.txt", "added": 1}]))
    item = presenter.change_item("cs")
    assert item is not None and item.status == "decided" and item.rejected == 1 and not item.can_undo
    # a new proposal of a settled set is a new card; the Changes dock's composed list fills a pending one
    presenter.feed(E(ev.ChangeProposed, 6, change_set_id="cs", files=[{"path": "b.txt"}]))
    presenter.set_change_files("cs", [{"path": "b.txt", "added": 3}, {"path": "c.txt"}])
    assert len(presenter.change_items("cs")) == 2
    latest = presenter.change_item("cs")
    assert latest is not None and [f["path"] for f in latest.files] == ["b.txt", "c.txt"]
    assert latest.files[0]["added"] == 3
    presenter.set_change_undone(item, True)
    assert item.undone


def test_a_lane_the_person_opened_stays_open() -> None:
    presenter = ChatPresenter()
    presenter.add_user("go")
    events = network_events()
    presenter.feed_all(events[:17])  # left is done, right still runs
    left = presenter.lane("left")
    assert left is not None and left.collapsed
    presenter.set_lane_collapsed(left, False, by_user=True)
    presenter.feed_all(events[17:])
    assert not left.collapsed and left.user_toggled


def test_the_presenter_imports_no_qt() -> None:
    code = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'qasync', 'shiboken6'):
            raise ImportError('blocked: ' + name)
        return None
sys.meta_path.insert(0, Block())
import ui.chat.model.presenter, tests.ui.chat_dump
print('ok')
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr


def test_mcp_progress_shows_on_the_card_and_a_stop_says_the_server_was_told() -> None:
    presenter = ChatPresenter()
    presenter.add_user("long job")
    presenter.feed(E(ev.RunStarted, 1))
    presenter.feed(E(ev.ToolUse, 2, id="c1", name="everything__slow", input={}, server="everything"))
    presenter.feed(E(ev.ToolProgress, 3, id="c1", name="everything__slow", progress=2.0, total=4.0,
                     message="half way"))
    call = presenter.call("c1")
    assert call is not None and call.progress is not None and call.progress.fraction == 0.5
    assert "progress='2 of 4 · half way'" in dump_state(presenter.state)
    presenter.feed(E(ev.RunCancelled, 4))
    assert call.progress.cancelled and "server was told to cancel" in call.progress.text


def speed_events() -> list[ev.Event]:
    """A run sent at 100.0: thinking from 100.5, a tool call, then an answer streamed from 103.0."""
    def at(cls: type[ev.Event], seq: int, ts: float, **fields: Any) -> Any:
        return cls(run_id="r1", robot="assistant", seq=seq, ts=ts, **fields)

    def used(seq: int, ts: float, out: int, total_out: int) -> ev.Usage:
        return ev.Usage(run_id="r1", robot="assistant", seq=seq, ts=ts, input_tokens=50, output_tokens=out,
                        total_input_tokens=50 * (seq // 5 + 1), total_output_tokens=total_out)

    return [
        at(ev.RunStarted, 1, 100.0, message="go"),
        at(ev.ReasoningDelta, 2, 100.5, text="Let me "),
        at(ev.ReasoningDelta, 3, 100.9, text="look."),
        used(4, 101.5, 20, 20),  # 20 tokens in 1.0 s
        at(ev.ToolUse, 5, 101.6, id="c1", name="recall", input={"key": "k"}),
        at(ev.ToolResult, 6, 102.0, id="c1", name="recall", payload={"data": None}),
        at(ev.TextDelta, 7, 103.0, text="The "),
        at(ev.TextDelta, 8, 103.5, text="answer."),
        used(9, 105.0, 60, 80),  # 60 tokens in 2.0 s
        at(ev.Text, 10, 105.1, text="The answer."),
        at(ev.RunFinished, 11, 105.2, result=None),
    ]


def test_the_footer_knows_the_time_to_first_token_and_the_speed_live_and_stored() -> None:
    """Time to first token: from the run's start to its first token (thinking counts); speed: the
    output tokens of the calls over the seconds they streamed (not the tool's time between them)."""
    live = ChatPresenter()
    turn = live.add_user("go")
    live.set_user(turn, turn_id="t1")
    live.feed_all(speed_events())
    stored = ChatPresenter()
    stored.load_turn(FakeView(FakeInfo("t1"), coalesce_text(speed_events()), user_text="go"))
    for presenter in (live, stored):
        run = presenter.run("r1")
        assert run is not None
        assert run.time_to_first_token == pytest.approx(0.5)
        assert run.tokens_per_second == pytest.approx(80 / 3.0)
        assert run.totals.input_tokens == 100 and run.totals.output_tokens == 80
    # a network's footer: its tasks' first token and speed, live and stored alike
    speeds = []
    for events in ([*network_events()], coalesce_text(network_events())):
        presenter = ChatPresenter()
        presenter.load_turn(FakeView(FakeInfo("t1"), list(events), user_text="go"))
        network = presenter.run("n1")
        assert network is not None and network.time_to_first_token == pytest.approx(2.0)
        speeds.append(network.tokens_per_second)
    assert speeds[0] is not None and speeds[0] == pytest.approx(speeds[1])
    # a run with no usage yet, or none streamed, claims no speed
    fresh = ChatPresenter()
    fresh.add_user("go")
    fresh.feed(E(ev.RunStarted, 1))
    run = fresh.run("r1")
    assert run is not None and run.tokens_per_second is None and run.time_to_first_token is None


def test_a_running_calls_time_starts_when_it_is_approved() -> None:
    """The card's ticking time (and so its duration) leaves out the wait for approval."""
    presenter = ChatPresenter()
    presenter.add_user("go")
    presenter.feed_all([E(ev.RunStarted, 1), E(ev.ToolUse, 2, id="c1", name="remember", input={}),
                        E(ev.ApprovalRequested, 3, id="c1", name="remember", input={})])
    call = presenter.call("c1")
    assert call is not None and call.started == 102.0 and call.status == "approval"
    presenter.feed(E(ev.ApprovalDecided, 30, id="c1", name="remember", decision="approve", input={}))
    assert call.status == "running" and call.started == 130.0
