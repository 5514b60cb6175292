"""Verify in the review, in a real X server with real input: the user's verify command (their own config: no
folder trust needed) runs in the sandbox when the offline demo's robot proposes an edit, and the Changes dock
shows the result — ✗ with the output when it fails, ✓ when it passes. Screenshots: ``review-verify-failed``
and ``review-verify-passed`` (docs/screens has them at 1280×720)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.xvfb.xsession import AppUnderTest, XServer, sizes, wait_for
from workspace import events as ev

pytestmark = [pytest.mark.xvfb, pytest.mark.timeout(300)]
SIZES = pytest.mark.parametrize("xserver", sizes(), indirect=True, ids=[f"{w}x{h}" for w, h in sizes()])

#: Fails while a plant's name is capitalised, printing what it checked.
FAILING = ("echo 'checking plant names in notes.txt'; grep -n . notes.txt; "
           "if grep -q BASIL notes.txt; then echo 'notes.txt:2: BASIL: plant names are lower-case'; "
           "echo '1 problem found'; exit 1; fi")
PASSING = "echo 'checking plant names in notes.txt'; grep -n . notes.txt; echo 'no problems found'"
EDIT = 'replace "basil" with "BASIL" in notes.txt'


def _home(tmp_path: Path, name: str, verify: str) -> Path:
    home = tmp_path / name
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(f"review:\n  verify: {json.dumps(verify)}\n", encoding="utf-8")
    return home


def _propose_and_review(app: AppUnderTest) -> str:
    time.sleep(1.5)  # the window's second stage (docks, the thread list) after its first paint
    app.focus()
    app.key("ctrl+shift+p", pause=0.6)  # the robot picker, by keyboard: the file helper edits files
    app.type("file-helper")
    app.key("Return", pause=0.6)
    app.key("ctrl+l")
    app.type(EDIT)
    app.key("ctrl+Return")
    turn = app.wait_turn(EDIT, ("finished", "failed"), timeout=60)
    assert app.events(turn, ev.ChangeProposed.kind) >= 1
    wait_for(lambda: app.events(turn, ev.VerifyFinished.kind), 90, "the verify after the proposal")
    app.key("ctrl+shift+d", pause=1.2)  # the Changes dock, with the verify strip
    return turn


@SIZES
@pytest.mark.parametrize(("verify", "name", "passed"), [(FAILING, "review-verify-failed", 0),
                                                        (PASSING, "review-verify-passed", 1)],
                         ids=["failed", "passed"])
def test_the_review_shows_the_verify_result(xserver: XServer, tmp_path: Path, folder: Path, shots: Path,
                                            verify: str, name: str, passed: int) -> None:
    app = AppUnderTest(xserver, _home(tmp_path, name, verify), folder=folder, shots=shots).start()
    try:
        turn = _propose_and_review(app)
        rows = app.query("SELECT data FROM events WHERE turn_id = ? AND kind = ?", turn, ev.VerifyFinished.kind)
        event = json.loads(rows[0][0])
        assert event["subset"] == "proposed" and int(event["passed"]) == passed, event
        assert "checking plant names" in event["output"]
        assert (folder / "notes.txt").read_text(encoding="utf-8") == (
            "Plant tomatoes in May.\nWater the basil every morning.\n")  # verified in the sandbox, never written
        app.shot(name)
    except BaseException:
        print(app.output())
        raise
    finally:
        app.stop()
