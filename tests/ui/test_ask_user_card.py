"""A question to the person in the chat: a robot's AskUser question and a person's task in a network.

The whole app on a scripted model: the robot's ``ask_user`` call shows a card with the choices as
buttons (the default one the default button), the answer goes back to the model and the run goes on;
a question without choices has a text field; Skip tells the robot nobody answered; a stop cancels a
question. A network with a person waits for the person's card (its time limit counting down) and
its next task gets the answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel

from tests.fakes.app_window import wait_until
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.tool_calls import AskUserItem
from ui.chat.view.ask_user_card import AskUserCard, countdown_text
from workspace import events as ev
from workspace.messages import Message
from workspace.providers.testing import AgentInfo, FunctionProvider, ToolCall

ASKER = "---\nname: asker\ndescription: asks before it acts\ntools: [ask_user]\nmcp: none\n---\nYou ask first.\n"

APPROVALS = """\
name: approvals
description: a draft, a person approves it, a robot reports
mcp: none
robots:
  drafter: {system_prompt: "You are DRAFTER.", tools: none}
  approver: {person: true, timeout: 600, choices: [approve, reject], default: approve}
  reporter: {system_prompt: "You are REPORTER.", tools: none}
tasks:
  draft: {robot: drafter}
  approve: {robot: approver, depends_on: [draft]}
  report: {robot: reporter, depends_on: [approve]}
"""


@pytest.fixture
def asker(robotlab_home: Path) -> Path:
    path = robotlab_home / "config" / "robots" / "asker.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ASKER, encoding="utf-8")
    return path


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def _card(root: Any) -> AskUserCard:
    def asking() -> AskUserCard | None:
        return next((c for c in root.window.chat.request_cards() if isinstance(c, AskUserCard) and c.asking), None)

    await wait_until(lambda: asking() is not None, what="the question card to ask")
    card = asking()
    assert card is not None
    return card


def _tool_results(provider: Any) -> list[Any]:
    """What the model was told of its ask_user calls, in order (the last call's messages hold them all)."""
    return [m.content for m in provider.history[-1].messages if m.role == "tool_result"]


def _test_app_robot(root: Any) -> None:
    root.window.robots.refresh()
    row = root.window.robot_model.row_of("asker")
    assert row >= 0, "the asker robot is not in the picker"
    root.window.robot_picker.setCurrentIndex(row)


# -- the presenter ---------------------------------------------------------------------------------------
def test_a_question_call_is_a_question_item_with_its_answer() -> None:
    presenter = ChatPresenter()
    presenter.feed(ev.RunStarted(run_id="r1", robot="asker", seq=1, model="m"))
    presenter.feed(ev.ToolUse(run_id="r1", robot="asker", seq=2, id="q1", name="ask_user",
                              input={"question": "Which colour?", "choices": ["red", "blue"], "default": "blue"}))
    item = presenter.call("q1", "r1")
    assert isinstance(item, AskUserItem)
    assert (item.question, item.choices, item.default, item.person) == ("Which colour?", ["red", "blue"], "blue", False)
    assert item.answer is None and item.outcome == ""
    presenter.feed(ev.ToolResult(run_id="r1", robot="asker", seq=3, id="q1", name="ask_user",
                                 payload={"data": "red"}))
    assert item.answer == "red" and item.outcome == "Answered: red"


def test_the_countdown_reads_as_time_left() -> None:
    assert countdown_text(605) == "10:05 left"
    assert countdown_text(59.2) == "1:00 left"
    assert countdown_text(12.5) == "13 s left"
    assert countdown_text(-3) == "0 s left"


# -- the window ------------------------------------------------------------------------------------------
async def test_the_card_answers_and_the_run_goes_on_with_the_answer(asker: Path, provider: Any, db_path: Path) -> None:
    from tests.fakes.app_window import running_app

    provider.enqueue([ToolCall("ask_user", {"question": "Which colour for the logo?", "choices": ["red", "green", "blue"],
                                            "default": "green"}, id="q1")],
                     "Blue it is.")
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        _test_app_robot(root)
        root.window.runs.send("make a logo")
        card = await _card(root)
        assert [b.text() for b in card.choice_buttons] == ["red", "green", "blue"]
        default = [b.text() for b in card.choice_buttons if b.isDefault()]
        assert default == ["green"] and card.answer_field is None
        assert "Which colour for the logo?" in card.texts()
        assert not root.controller.idle  # the run waits for the person
        card.choice_buttons[2].click()
        await _idle(root)
        assert _tool_results(provider) == [{"data": "blue"}]
        assert "Answered: blue" in " ".join(card.texts())
        assert provider.remaining == 0  # the model was asked again, with the answer, and gave its reply


async def test_a_question_without_choices_takes_typed_text_and_skip_tells_the_robot(
        asker: Path, provider: Any, db_path: Path) -> None:
    from tests.fakes.app_window import running_app

    provider.enqueue([ToolCall("ask_user", {"question": "Your name?", "default": "Ada"}, id="q1")],
                     [ToolCall("ask_user", {"question": "Your town?"}, id="q2")],
                     "Thanks.")
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        _test_app_robot(root)
        root.window.runs.send("introduce me")
        card = await _card(root)
        assert card.answer_field is not None and not card.choice_buttons
        assert "Ada" in card.answer_field.placeholderText()
        card.answer_field.returnPressed.emit()  # nothing typed: the default, as in the terminal
        second = await _card(root)
        assert second is not card and second.skip_button is not None
        second.skip_button.click()
        await _idle(root)
        told = _tool_results(provider)
        assert told[0] == {"data": "Ada"}
        assert "did not answer" in str(told[-1]["error"]) and "skipped" in str(told[-1]["error"])
        assert "Not answered" in " ".join(second.texts())


async def test_a_stop_cancels_the_question(asker: Path, provider: Any, db_path: Path) -> None:
    from tests.fakes.app_window import running_app

    provider.enqueue([ToolCall("ask_user", {"question": "Go on?", "choices": ["yes", "no"]}, id="q1")], "Unused.")
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        _test_app_robot(root)
        root.window.runs.send("start")
        card = await _card(root)
        root.controller.stop()
        await _idle(root)
        assert card.done and not card.asking
        assert provider.remaining == 1  # the model was not asked again: the run ended at the question


# -- a person's task in a network ------------------------------------------------------------------------
def _network_reply(messages: list[Message], info: AgentInfo) -> Any:
    system = info.system or ""
    text = str(messages[-1].content)
    if "DRAFTER" in system:
        return "Draft: ship on Friday."
    return f"Report: the approver said {text!r}"


async def test_a_persons_task_card_answers_the_network(robotlab_home: Path, db_path: Path) -> None:
    from tests.fakes.app_window import running_app

    path = robotlab_home / "config" / "networks" / "approvals.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(APPROVALS, encoding="utf-8")
    provider = FunctionProvider(_network_reply)
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        root.window.robots.refresh()
        row = root.window.robot_model.row_of("approvals", "network")
        assert row >= 0
        root.window.robot_picker.setCurrentIndex(row)
        root.window.runs.send("plan the release")
        card = await _card(root)
        assert card.question_item.person and "(a person)" in card.title.text()
        question = card.findChild(QLabel, "QuestionText")
        assert question is not None and "Draft: ship on Friday." in question.text()
        assert root.window.chat.lane("approve") is not None and not root.window.chat.lane("approve").collapsed
        assert card.countdown is not None and card.countdown.text().endswith("left")
        assert [b.text() for b in card.choice_buttons] == ["approve", "reject"]
        assert [b.text() for b in card.choice_buttons if b.isDefault()] == ["approve"]
        card.choice_buttons[1].click()
        await _idle(root)
        network_run = root.controller.session.network_run
        assert network_run is not None
        states = network_run.tasks
        assert states["approve"].status == "done" and states["report"].status == "done"
        assert states["approve"].result is not None and states["approve"].result.last_text_content == "reject"
        assert states["report"].result is not None and "reject" in str(states["report"].result.last_text_content)
        assert "Answered: reject" in " ".join(card.texts())
