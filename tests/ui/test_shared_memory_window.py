"""A robot's writes to its own memory (it outlives the run: the thread's next message sees it) wait in the Changes
dock's Memory group with ``review.memory: ask``, key by key, old value → new value: accepted (as edited) they are
kept and the robot's next run reads them, rejected they are not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import memory_review_app, wait_until
from workspace.messages import ToolResultMessage
from workspace.providers.testing import ToolCall

KEEPER = "---\nname: keeper\ndescription: keeps notes\ntools: [remember, recall]\nmcp: none\n---\nYou keep notes.\n"


@pytest.fixture
async def app(robotlab_home: Path, provider: Any, db_path: Path, tmp_path: Path) -> AsyncIterator[Any]:
    async with memory_review_app(home=robotlab_home, provider=provider, db_path=db_path, tmp_path=tmp_path,
                                 robot="keeper", robot_file=KEEPER) as root:
        yield root


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


def _told(provider: Any) -> list[Any]:
    return [m.content for m in provider.history[-1].messages if isinstance(m, ToolResultMessage)]


async def test_memory_writes_are_reviewed_per_key_in_the_changes_dock(app: Any, provider: Any) -> None:
    provider.enqueue([ToolCall("remember", {"key": "plan", "value": "ship friday"}, id="a"),
                      ToolCall("remember", {"key": "owner", "value": "ana"}, id="b")], "Noted.")
    app.window.runs.send("note the plan")
    await _idle(app)
    await wait_until(lambda: app.window.docks.changes_pane is not None, what="the Changes dock")
    box = app.window.docks.changes_pane.memory_writes
    await wait_until(lambda: len(box.rows) == 2, what="two proposed memory writes")
    assert box.title.text() == "Memory · 2 proposed"
    summary = app.window.docks.changes_pane.summary  # the dock's line above does not say "no changes"
    assert summary.text() == "No file changes proposed in this thread yet: the memory writes below wait for you."
    plan, owner = box.rows
    assert plan.heading.text() == "keeper proposes to set memory 'plan' (now unset):"
    assert plan.text.text() == "ship friday" and owner.text.text() == "ana"
    plan.text.setText("ship monday")
    plan.accept_button.click()
    owner.reason.setText("ask ana first")
    owner.reject_button.click()
    await wait_until(lambda: not box.rows, what="both decided")
    assert not box.isVisibleTo(app.window.docks.changes_pane)
    assert summary.text() == "No changes proposed in this thread yet."

    provider.enqueue([ToolCall("recall", {"key": "plan"}, id="c"), ToolCall("recall", {"key": "owner"}, id="d")],
                     "ok")
    app.window.runs.send("what is the plan?")
    await _idle(app)
    assert _told(provider)[-2:] == [{"data": {"key": "plan", "found": True, "value": "ship monday"}},
                                    {"data": {"key": "owner", "found": False, "value": None}}]
    assert "Not kept memory 'owner'" in (provider.history[-1].system or "")
