"""Verify in the window: a proposal is verified when its run ends (the review's strip shows ✗ with the output,
the chat a line), Apply of a failing accepted set asks first and "Cancel" writes nothing, and "Verify again"
runs on exactly the accepted hunks. A scripted model, a real temp folder and the real sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import close_app, wait_until
from ui.chat.model.state import NoticeItem
from workspace import events as ev
from workspace.isolation import SandboxUnavailable, sandbox_for_platform
from workspace.providers.testing import ToolCall

try:
    sandbox_for_platform()
except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
    pytest.skip(f"no sandbox on this machine: {exc}", allow_module_level=True)

pytestmark = pytest.mark.timeout(240)
TEXT = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
#: Prints the file as the sandbox shows it, and fails while "NINE" is in it.
VERIFY = "cat a.txt; ! grep -q NINE a.txt"
#: How long a verify in the sandbox may take before a test says it hung (the machine is loaded).
SANDBOX_S = 60.0


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text(TEXT, encoding="utf-8")
    return root


@pytest.fixture
async def app(provider: Any, db_path: Path, folder: Path) -> AsyncIterator[Any]:
    from ui.app import Application
    from workspace.config import load_config

    config = load_config(folder, overrides={"review": {"mode": "review", "verify": VERIFY}})  # the user's own
    root = Application(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config)
    root.controller.set_robot("file-helper")
    root.window.resize(1300, 850)
    root.window.show()
    try:
        yield root
    finally:
        await close_app(root)


async def _propose(app: Any, provider: Any) -> Any:
    provider.enqueue([ToolCall("edit_file", {"path": "a.txt", "search": "two", "replace": "TWO"}, id="e1")],
                     [ToolCall("edit_file", {"path": "a.txt", "search": "nine", "replace": "NINE"}, id="e2")],
                     "I capitalised two and nine.")
    app.window.runs.send("capitalise two and nine")
    await wait_until(lambda: app.controller.idle, what="the run to end")
    return app.window.docks.changes_pane


def _verify_lines(app: Any) -> list[NoticeItem]:
    presenter = app.window.chat.presenter
    return [item for turn in presenter.state.turns for item in turn.items
            if isinstance(item, NoticeItem) and "verify" in item.text]


async def test_a_proposal_is_verified_when_its_run_ends_and_the_strip_shows_the_failure(app: Any, provider: Any,
                                                                                       folder: Path) -> None:
    pane = await _propose(app, provider)
    strip = pane.verify_strip
    await wait_until(lambda: strip.result is not None, SANDBOX_S, what="the verify after the run")
    assert strip.isVisible()
    assert strip.verdict.text() == "✗ Verify failed"  # the mark and the words, not a colour alone
    assert strip.details.text().startswith("exit code 1 · ") and strip.details.text().endswith("on the proposed changes")
    assert strip.command.text() == VERIFY
    assert "TWO" in strip.output_text and "NINE" in strip.output_text  # the file as the proposal makes it
    assert strip.output.isVisible()  # a failure shows its output
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT  # the disk never saw it
    [line] = _verify_lines(app)
    assert line.text.startswith("✗ verify failed on the proposed changes") and line.level == "error"
    assert "NINE" in (line.details or "")
    session = app.controller.session
    stored = [e for t in session.transcript() for e in t.events if isinstance(e, ev.VerifyFinished)]
    assert [(e.subset, e.passed) for e in stored] == [("proposed", False)]
    review = pane.open_review()  # the full-size review shows the same result, and verifies again from there
    assert review.verify_strip.verdict.text() == "✗ Verify failed" and "NINE" in review.verify_strip.output_text
    review.verify_strip.again_button.click()
    await wait_until(lambda: strip.running and review.verify_strip.running, 5, what="the verify from the review")
    await wait_until(lambda: not review.verify_strip.running, SANDBOX_S, what="the verify to end")
    assert review.verify_strip.verdict.text() == "✗ Verify failed"
    review.close()


async def test_apply_of_a_failing_accepted_set_asks_and_cancel_writes_nothing(app: Any, provider: Any,
                                                                              folder: Path) -> None:
    pane = await _propose(app, provider)
    await wait_until(lambda: pane.verify_strip.result is not None, SANDBOX_S, what="the verify after the run")
    app.controller.session.changes.accept_all()
    pane.sync(history=False)
    pane.apply_button.click()
    await wait_until(lambda: pane.verify_question is not None, SANDBOX_S, what="Apply to ask")
    question = pane.verify_question
    assert VERIFY in question.text() and "exited with code 1" in question.text()
    assert pane.verify_strip.verdict.text() == "✗ Verify failed"
    assert pane.verify_strip.details.text().endswith("on the accepted hunks")
    question.button_cancel.click()
    await pane.commands.wait_idle()
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT
    assert app.controller.session.changes.pending_files  # still waiting for review
    assert "Nothing was written" in pane.message.text()

    pane.apply_button.click()  # asked again; this time the person applies anyway
    await wait_until(lambda: pane.verify_question is not None, SANDBOX_S, what="Apply to ask again")
    pane.verify_question.button_apply.click()
    await wait_until(lambda: "NINE" in (folder / "a.txt").read_text(encoding="utf-8"), SANDBOX_S,
                     what="the apply anyway")
    await pane.commands.wait_idle()
    assert not app.controller.session.changes.pending_files


async def test_verify_again_runs_on_the_accepted_hunks_only(app: Any, provider: Any, folder: Path) -> None:
    pane = await _propose(app, provider)
    strip = pane.verify_strip
    await wait_until(lambda: strip.result is not None, SANDBOX_S, what="the verify after the run")
    changes = app.controller.session.changes
    first, _second = changes.hunks()
    pane.model.accept(first.id)  # "two" → "TWO" accepted, "nine" → "NINE" undecided
    strip.again_button.click()
    await wait_until(lambda: strip.running, 5, what="the verify to start")
    assert strip.verdict.text() == "◷ Verifying…" and not strip.again_button.isEnabled()
    await wait_until(lambda: not strip.running and strip.result is not None and strip.result.subset == "accepted",
                     SANDBOX_S, what="the verify on the accepted hunks")
    assert strip.verdict.text() == "✓ Verify passed" and strip.details.text().endswith("on the accepted hunks")
    assert "TWO" in strip.output_text and "nine" in strip.output_text and "NINE" not in strip.output_text
    assert (folder / "a.txt").read_text(encoding="utf-8") == TEXT
    assert [line.text.split(" (")[0] for line in _verify_lines(app)] == [
        "✗ verify failed on the proposed changes", "✓ verify passed on the accepted hunks"]
    await asyncio.sleep(0)
