"""Reviewed memory writes in the window, and the Memory dock's Learnt section.

The whole app on a scripted model, ``review.memory: ask`` and a robot that learns
(``learn: true``: the ``record_knowledge`` tool): what it proposes waits in the Changes dock's
Memory group; accepted (as edited) it lands in the knowledge store and the robot is told, rejected
with a reason it does not, and the robot is told why. The Memory dock lists what was learnt, by
which robot, and Forget removes a learning from the store and from the robot's later runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import memory_review_app, wait_until
from workspace.knowledge import KnowledgeStore
from workspace.providers.testing import ToolCall

LEARNER = "---\nname: learner\ndescription: learns as it goes\nlearn: true\ntools: none\nmcp: none\n---\nYou learn.\n"


@pytest.fixture
async def app(robotlab_home: Path, provider: Any, db_path: Path, tmp_path: Path) -> AsyncIterator[Any]:
    async with memory_review_app(home=robotlab_home, provider=provider, db_path=db_path, tmp_path=tmp_path,
                                 robot="learner", robot_file=LEARNER) as root:
        yield root


def _learnt(root: Any) -> dict[str, list[str]]:
    store = KnowledgeStore()
    try:
        return store.learnt(folder=root.controller.workspace.folder)
    finally:
        store.close()


def _told(provider: Any) -> list[Any]:
    return [m.content for m in provider.history[-1].messages if m.role == "tool_result"]


async def _rows(root: Any, count: int = 1) -> Any:
    await wait_until(lambda: root.window.docks.changes_pane is not None, what="the Changes dock")
    box = root.window.docks.changes_pane.memory_writes
    await wait_until(lambda: len(box.rows) == count, what=f"{count} proposed memory write(s)")
    return box


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def test_an_accepted_write_is_stored_as_edited_and_the_robot_is_told(app: Any, provider: Any) -> None:
    provider.enqueue([ToolCall("record_knowledge", {"content": "The build needs make 4", "reasoning": "it failed with make 3",
                                                   "category": "fact"},
                               id="k1")], "Noted.")
    app.window.runs.send("remember the build tool")
    box = await _rows(app)
    assert box.isVisibleTo(app.window.docks.changes_pane) and box.title.text() == "Memory · 1 proposed"
    row = box.rows[0]
    assert row.text.text() == "The build needs make 4" and "learner proposes" in row.heading.text()
    assert not app.controller.idle  # record_knowledge waits for the review
    assert _learnt(app) == {}  # proposed, not stored
    row.text.setText("The build needs GNU make 4.3")
    row.accept_button.click()
    await _idle(app)
    assert not box.rows and not box.isVisibleTo(app.window.docks.changes_pane)
    assert _learnt(app) == {"learner": ["The build needs GNU make 4.3 (general)"]}
    assert _told(provider) == [{"data": "Recorded: The build needs GNU make 4.3"}]
    # the Memory dock lists it: what, by whom, when
    pane = app.window.docks.memory_pane
    assert pane is not None and pane.learnt is not None
    await wait_until(lambda: pane.learnt.rows() and pane.learnt.rows()[0][:2] == (
        "The build needs GNU make 4.3 (general)", "learner"), what="the Learnt list")
    assert pane.learnt.rows()[0][2][:2] == "20"  # a date


async def test_a_rejected_write_is_not_stored_and_the_robot_is_told_why(app: Any, provider: Any) -> None:
    provider.enqueue([ToolCall("record_knowledge", {"content": "The user hates tests", "reasoning": "a guess",
                                                   "category": "preference"}, id="k1")], "Understood.")
    app.window.runs.send("remember something")
    box = await _rows(app)
    row = box.rows[0]
    row.reason.setText("not true: tests are welcome")
    row.reject_button.click()
    await _idle(app)
    assert _learnt(app) == {}
    told = _told(provider)
    assert len(told) == 1 and "Not recorded" in str(told[0]) and "not true: tests are welcome" in str(told[0])


async def test_forget_removes_a_learning_from_the_store_and_later_runs(app: Any, provider: Any) -> None:
    provider.enqueue([ToolCall("record_knowledge", {"content": "Deploys happen on Tuesdays", "reasoning": "said so",
                                                   "category": "fact"}, id="k1")], "Noted.")
    app.window.runs.send("remember the deploy day")
    box = await _rows(app)
    box.rows[0].accept_button.click()
    await _idle(app)
    assert _learnt(app) == {"learner": ["Deploys happen on Tuesdays (general)"]}
    robot = app.controller.session.robot
    assert "LEARNINGS FROM PREVIOUS RUNS" in robot.learnings_prompt() and robot.learnings  # later runs get it
    pane = app.window.docks.memory_pane
    assert pane is not None and pane.learnt is not None
    section = pane.learnt
    section.refresh()
    assert [r[0] for r in section.rows()] == ["Deploys happen on Tuesdays (general)"]
    assert not section.forget_button.isEnabled()
    section.tree.setCurrentItem(section.tree.topLevelItem(0))
    assert section.forget_button.isEnabled()
    section.forget_button.click()
    assert _learnt(app) == {}
    assert section.rows() == [] and section.empty.isVisibleTo(section)
    assert robot.learnings == []
    # the robot's next run no longer gets it in its system prompt
    provider.enqueue("Hello again.")
    app.window.runs.send("hi")
    await _idle(app)
    assert "Deploys happen on Tuesdays" not in (provider.history[-1].system or "")
