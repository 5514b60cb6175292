"""Runs in the background, in a real X server with real input: a run keeps streaming while another thread
asks for approval, a third thread is open; the sidebar shows both runs' states; Ctrl+J opens the waiting
approval's thread and focuses its card, y answers it; both runs finish. Screenshot: ``background-runs``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.xvfb.xsession import AppUnderTest, XServer, sizes, wait_for
from workspace import events as ev

pytestmark = [pytest.mark.xvfb, pytest.mark.timeout(300)]
SIZES = pytest.mark.parametrize("xserver", sizes(), indirect=True, ids=[f"{w}x{h}" for w, h in sizes()])


@SIZES
def test_two_runs_go_on_in_the_background(xserver: XServer, tmp_path: Path, folder: Path, shots: Path) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    # The demo's file search asks first: an approval left waiting in a thread that is not open.
    (home / "config" / "approval.yaml").write_text("rules:\n  - {tool: search_files, action: ask}\n", encoding="utf-8")
    app = AppUnderTest(xserver, home, folder=folder, shots=shots).start()
    try:
        time.sleep(1.5)  # the window's second stage (docks, the thread list) after its first paint
        app.pace.write_text("0.25", encoding="utf-8")  # slow: the first run streams for a long while
        app.key("ctrl+l")
        slow = "read notes.txt and README.md"
        app.type(slow)
        app.key("ctrl+Return")
        slow_turn = app.wait_turn(slow, "running", timeout=60)

        app.key("ctrl+n", pause=0.6)  # a new thread: the first run goes on
        app.key("ctrl+l")
        asking = "search for basil"
        app.type(asking)
        app.key("ctrl+Return")
        asking_turn = app.wait_turn(asking, "running", timeout=60)
        wait_for(lambda: app.events(asking_turn, ev.ApprovalRequested.kind), 60, "the approval question")

        app.key("ctrl+n", pause=0.6)  # a third thread open: both runs are in the background
        app.key("ctrl+l")
        app.type("What is left to plant?")
        time.sleep(1.2)
        assert app.turn(slow) == (slow_turn, "running"), "the first run stopped when another thread opened"
        assert app.turn(asking) == (asking_turn, "running"), "the approval was not left waiting"
        app.shot("background-runs")

        app.key("ctrl+j", pause=0.8)  # opens the asking thread, the card has the keyboard
        app.key("y")
        app.wait_turn(asking, "finished", timeout=60)
        assert app.events(asking_turn, ev.ApprovalDecided.kind) == 1
        app.pace.write_text("0.004", encoding="utf-8")
        app.wait_turn(slow, "finished", timeout=120)
        assert app.events(slow_turn, ev.RunCancelled.kind) == 0
    except BaseException:
        print(app.output())
        raise
    finally:
        app.stop()
