"""The chat presenter's reducers each on their own: a :class:`Column` (the shared context) and the one
reducer under test, fed its events directly, with no :class:`ChatPresenter` around them."""

from __future__ import annotations

from typing import Any

from ui.chat.model.calls import ToolCalls
from ui.chat.model.changes import ChangeCards
from ui.chat.model.column import APPROVAL, WAITING, Column
from ui.chat.model.lanes import NetworkLanes
from ui.chat.model.runs import RunLifecycle
from ui.chat.model.state import Item, ReasoningItem, RunState, TextItem, TurnState
from ui.chat.model.text import Texts
from ui.chat.model.tool_calls import ToolCallItem
from workspace import events as ev
from workspace.result import Usage


class Told:
    """A ChatListener that writes down what it is told, by name."""

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
        self.calls.append(("added", type(item).__name__))

    def item_changed(self, item: Item) -> None:
        self.calls.append(("changed", type(item).__name__))

    def text_appended(self, item: TextItem, delta: str) -> None:
        self.calls.append(("text", delta))

    def tool_output(self, item: ToolCallItem, text: str) -> None:
        self.calls.append(("output", text))

    def run_changed(self, run: RunState) -> None:
        self.calls.append(("run", run.activity))

    def hidden_changed(self) -> None:
        self.calls.append(("hidden", None))


def E(cls: type[ev.Event], seq: int, run: str = "r1", robot: str = "assistant", **fields: Any) -> Any:
    return cls(run_id=run, robot=robot, seq=seq, ts=100.0 + seq, **fields)


def test_texts_alone_stream_an_answer_below_its_folded_thinking() -> None:
    told = Told()
    column = Column(told)
    texts = Texts()
    texts.reasoning_delta(column, E(ev.ReasoningDelta, 1, text="Let me "))
    texts.reasoning_delta(column, E(ev.ReasoningDelta, 2, text="think."))
    texts.text_delta(column, E(ev.TextDelta, 3, text="The answer "))
    texts.text_delta(column, E(ev.TextDelta, 4, text="is 4."))
    texts.text(column, E(ev.Text, 5, text="The answer is 4."))
    run = column.runs["r1"]
    turn = column.state.turns[0]  # a run with no message of its own makes its turn
    assert [type(i).__name__ for i in turn.items] == ["HeaderItem", "ReasoningItem", "TextItem"]
    thinking, answer = turn.items[1], turn.items[2]
    assert isinstance(thinking, ReasoningItem) and thinking.text == "Let me think."
    assert thinking.done and thinking.collapsed  # folded when the answer began
    assert isinstance(answer, TextItem) and answer.text == "The answer is 4."
    assert run.text is None and run.reasoning is None and run.first_token == 101.0
    assert [d for name, d in told.calls if name == "text"] == ["The answer ", "is 4."]
    # a thinking block the person opened stays open
    texts.set_reasoning_collapsed(column, thinking, False)
    assert not thinking.collapsed and thinking.user_toggled and told.calls[-1] == ("changed", "ReasoningItem")


def test_tool_calls_alone_ask_decide_and_wait_for_the_model_again() -> None:
    told = Told()
    column = Column(told)
    calls = ToolCalls(Texts())
    calls.tool_use(column, E(ev.ToolUse, 1, id="c1", name="rm", input={"path": "a"}))
    calls.approval_requested(column, E(ev.ApprovalRequested, 2, id="c1", name="rm", input={"path": "a"}))
    run = column.runs["r1"]
    card = calls.call(column, "c1", "r1")
    assert card is not None and card.status == "approval" and run.activity == APPROVAL
    calls.approval_decided(column, E(ev.ApprovalDecided, 3, id="c1", name="rm", decision="deny", reason="no"))
    assert card.status == "denied" and card.approval is not None and card.approval.note == "Denied: no."
    assert run.activity is None
    calls.tool_finished(column, E(ev.ToolError, 4, id="c1", name="rm", error="Denied by the user: no"))
    assert card.status == "denied" and run.activity == WAITING  # no call runs: the model's next turn
    assert calls.calls(column) == [card] and calls.call(column, "c1", "other") is None


def test_change_cards_alone_hold_a_decision_until_its_card_shows() -> None:
    told = Told()
    column = Column(told)
    cards = ChangeCards()
    decided = E(ev.ChangeDecided, 1, change_set_id="cs1",
                outcome=[{"path": "a.txt", "accepted": [0], "rejected": [], "status": "applied"}], checkpoint_id="k")
    cards.change_decided(column, decided)  # its turn is not shown yet
    assert cards.change_item("cs1") is None and told.calls == []
    files = [{"path": "a.txt", "action": "modify", "hunks": 1, "added": 1, "removed": 0}]
    cards.change_proposed(column, E(ev.ChangeProposed, 2, change_set_id="cs1", files=files))
    item = cards.change_item("cs1")
    assert item is not None and item.status == "decided" and item.checkpoint_id == "k" and item.accepted == 1
    assert cards.all_change_items() == [item] and item in column.state.turns[0].items
    assert ChangeCards().change_item("cs1") is None  # a new column's cards start empty


def test_network_lanes_alone_put_a_task_run_in_its_lane_and_sum_up_the_end() -> None:
    column = Column(Told())
    lanes = NetworkLanes()
    lanes.task(column, E(ev.TaskStarted, 1, run="n1", robot="planner", task="plan", message="plan it"))
    lanes.task(column, E(ev.TaskStarted, 2, run="n1", robot="writer", task="write", message="write it"))
    group = column.groups["n1"]
    assert group.order == ["plan", "write"] and lanes.lane(column, "write") is group.lanes["write"]
    worker = column.run("w1", "writer", "write")  # the task's robot: its work goes into its lane
    assert worker.lane is group.lanes["write"] and column.container(worker) is group.lanes["write"]
    assert column.top(worker) is column.runs["n1"]
    lanes.task(column, E(ev.TaskFinished, 3, run="n1", robot="planner", task="plan", status="done"))
    lanes.finish_group(column, group, "stopped", 104.0)
    assert group.ended and group.lanes["write"].status == "cancelled" and group.lanes["write"].reason == "stopped"
    assert group.summary == "2 tasks · 1 done · 1 stopped"  # a cancelled lane reads "stopped"


def test_run_lifecycle_alone_counts_usage_and_ends_with_a_footer() -> None:
    told = Told()
    column = Column(told)
    texts = Texts()
    runs = RunLifecycle(texts, NetworkLanes())
    runs.run_started(column, E(ev.RunStarted, 1, message="hi"))
    run = column.runs["r1"]
    assert run.activity == WAITING and run.started == 101.0
    runs.status(column, E(ev.RunStatus, 2, state="retrying", detail="429"))
    assert run.activity == "Retrying — 429"
    texts.reasoning_delta(column, E(ev.ReasoningDelta, 3, text="hmm"))
    runs.usage(column, ev.Usage(run_id="r1", robot="assistant", seq=4, ts=104.0, input_tokens=7, output_tokens=3,
                                total_input_tokens=7, total_output_tokens=3, cost=0.0, total_cost=0.0))
    assert run.usage == Usage(7, 3, 0.0) and run.footer and run.streamed_tokens == 3
    runs.end(column, E(ev.RunCancelled, 5, reason="timed out"), "cancelled", message="timed out", result=None)
    assert run.end is not None and run.end.outcome == "cancelled" and run.end.duration == 4.0
    assert run.activity is None and run.reasoning is None  # the end ended its thinking too
    assert told.calls[-1] == ("run", None)
