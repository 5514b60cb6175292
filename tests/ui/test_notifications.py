"""Desktop notifications while the window is in the background: a long run ended, an approval is
needed; a setting turns them off; nothing when the window is in front."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.fakes.app_window import wait_until
from ui.window import notify
from workspace.providers.testing import ToolCall


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def test_a_long_run_and_an_approval_notify_when_in_the_background(desktop: Any, provider: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    w = desktop.window
    notifier = w.notifier
    monkeypatch.setattr(notify, "LONG_RUN", 0.0)
    monkeypatch.setattr(notifier, "in_background", lambda: True)
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Done.")
    w.runs.send("store k")
    await wait_until(lambda: w.chat.pending_approval() is not None, what="the approval")
    assert notifier.sent[-1][0] == "Approval needed" and "remember" in notifier.sent[-1][1]
    w.chat.pending_approval().approve()
    await _idle(desktop)
    assert notifier.sent[-1][0] == "assistant finished"
    assert "store k" in notifier.sent[-1][1]  # the thread's title


async def test_no_notification_in_front_or_when_turned_off(desktop: Any, provider: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    w = desktop.window
    notifier = w.notifier
    monkeypatch.setattr(notify, "LONG_RUN", 0.0)
    monkeypatch.setattr(notifier, "in_background", lambda: False)
    provider.enqueue("One.", "Two.")
    w.runs.send("first")
    await _idle(desktop)
    assert notifier.sent == []
    monkeypatch.setattr(notifier, "in_background", lambda: True)
    desktop.controller.config.data.setdefault("ui", {})["notifications"] = False
    w.runs.send("second")
    await _idle(desktop)
    assert notifier.sent == []
