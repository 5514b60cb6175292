"""The window in a real X server, used with real input (xdotool's XTEST key and mouse events), at common screen
sizes: it fits the screen, a typed message reaches the thread, Esc stops a run, approvals and reviews work by
keyboard, the robot editor saves a robot by keystrokes. A screenshot of every state is saved on the way
(empty, streaming, approval, robot-editor, review, settings, network, error)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.xvfb.xsession import AppUnderTest, XServer, sizes, wait_for
from workspace import events as ev

pytestmark = [pytest.mark.xvfb, pytest.mark.timeout(300)]
SIZES = pytest.mark.parametrize("xserver", sizes(), indirect=True, ids=[f"{w}x{h}" for w, h in sizes()])


def _home(tmp_path: Path, name: str, config: str = "") -> Path:
    home = tmp_path / name
    (home / "config").mkdir(parents=True)
    # The demo's file search asks first: the approval card to answer by keyboard.
    (home / "config" / "approval.yaml").write_text("rules:\n  - {tool: search_files, action: ask}\n", encoding="utf-8")
    if config:
        (home / "config" / "config.yaml").write_text(config, encoding="utf-8")
    return home


@SIZES
def test_the_window_by_keyboard_and_mouse(xserver: XServer, tmp_path: Path, folder: Path, shots: Path) -> None:
    app = AppUnderTest(xserver, _home(tmp_path, "home"), folder=folder, shots=shots).start()
    try:
        _flow(app, xserver)
    except BaseException:
        print(app.output())
        raise
    finally:
        app.stop()


def _flow(app: AppUnderTest, xserver: XServer) -> None:
    time.sleep(1.5)  # the window's second stage (docks, the thread list) after its first paint
    geometry = app.geometry()
    assert geometry["X"] >= 0 and geometry["Y"] >= 0
    assert geometry["X"] + geometry["WIDTH"] <= xserver.width, geometry
    assert geometry["Y"] + geometry["HEIGHT"] <= xserver.height, geometry  # the composer at its bottom is on screen
    app.shot("empty")

    # Streaming, then Esc. The message box is clicked with the mouse (it is at the window's bottom).
    app.pace.write_text("0.12", encoding="utf-8")
    # Left of the middle, on the text's line: the row under it has the attach button and the model picker (whose
    # menu a click would open) at its left end, Send at its right.
    app.click(geometry["X"] + geometry["WIDTH"] // 2 - 150, geometry["Y"] + geometry["HEIGHT"] - 120)
    message = "read notes.txt and README.md"
    app.type(message)
    app.key("ctrl+Return")
    turn = app.wait_turn(message, "running", timeout=60)  # the typed message is the thread's turn
    wait_for(lambda: app.title().startswith(message), 10, "the thread's title in the window's")
    time.sleep(2.0)
    app.shot("streaming")
    app.key("Escape")
    app.wait_turn(message, "cancelled", timeout=60)
    assert app.events(turn, ev.RunCancelled.kind) == 1
    app.pace.write_text("0.004", encoding="utf-8")

    # Approval: Ctrl+J goes to the card, y approves.
    app.key("ctrl+l")
    question = "search for basil"
    app.type(question)
    app.key("ctrl+Return")
    turn = app.wait_turn(question, "running", timeout=60)
    wait_for(lambda: app.events(turn, ev.ApprovalRequested.kind), 20, "the approval question")
    time.sleep(0.8)
    app.shot("approval")
    app.key("ctrl+j")
    app.key("y")
    app.wait_turn(question, "finished", timeout=60)
    assert app.events(turn, ev.ApprovalDecided.kind) == 1

    # The robot editor: a copy of file-helper saved by keystrokes only.
    app.key("ctrl+alt+r", pause=1.0)
    editor = app.window_named("^Robots")
    app.xdotool("windowfocus", "--sync", editor)
    geometry_editor = app.geometry(editor)
    assert geometry_editor["X"] + geometry_editor["WIDTH"] <= xserver.width
    assert geometry_editor["Y"] + geometry_editor["HEIGHT"] <= xserver.height
    app.key("Down")  # file-helper, shipped: read-only
    app.key("ctrl+d")  # Duplicate: the copy's name field has the keyboard, its text selected
    app.type("garden-helper")
    app.key("Tab")
    app.key("ctrl+a")
    app.type("Edits the garden notes")
    time.sleep(0.6)
    app.shot("robot-editor")
    app.key("ctrl+s", pause=1.0)
    saved = app.home / "config" / "robots" / "garden-helper.md"
    wait_for(saved.is_file, 10, "the saved robot file")
    text = saved.read_text(encoding="utf-8")
    assert "name: garden-helper" in text and "description: Edits the garden notes" in text
    assert "edit_file" in text  # file-helper's tools came along
    app.key("Escape", pause=0.8)  # closes the editor (saved: nothing to ask)
    assert not app.windows_named("^Robots"), "Esc did not close the robot editor"
    app.focus()

    # Review: the saved robot is the one new threads talk to; its edit waits for review.
    app.key("ctrl+l")
    change = 'append "Harvest the beans in August." to notes.txt'
    app.type(change)
    app.key("ctrl+Return")
    turn = app.wait_turn(change, ("finished", "failed"), timeout=40)
    assert app.query("SELECT robot FROM threads t JOIN turns u ON u.thread_id = t.id WHERE u.id = ?",
                     turn) == [("garden-helper",)]
    assert app.events(turn, ev.ChangeProposed.kind) >= 1
    app.key("ctrl+shift+d", pause=0.8)
    app.shot("review")

    # Settings, then Esc.
    app.key("ctrl+comma", pause=1.0)
    app.shot("settings")
    app.key("Escape", pause=0.6)
    app.focus()

    # A network of robots, picked from the picker by keyboard.
    app.key("ctrl+shift+p", pause=0.6)
    app.type("support")
    app.key("Return", pause=0.6)
    app.key("ctrl+l")
    triage = "I was charged twice for my subscription this month"
    app.type(triage)
    app.key("ctrl+Return")
    app.wait_turn(triage, ("finished", "failed"), timeout=60)
    app.key("ctrl+shift+n", pause=1.0)
    app.shot("network")


@SIZES
def test_a_failed_run_shows_its_error(xserver: XServer, tmp_path: Path, shots: Path) -> None:
    config = "llm:\n  model: ollama_chat/llama3.1\n  api_base: http://127.0.0.1:9\n  timeout: 5\n"
    app = AppUnderTest(xserver, _home(tmp_path, "home-error", config), shots=shots).start()
    try:
        time.sleep(1.0)
        app.focus()
        app.key("ctrl+l")
        app.type("hello")
        app.key("ctrl+Return")
        turn = app.wait_turn("hello", "failed", timeout=60)
        assert app.events(turn, ev.RunFailed.kind) == 1
        time.sleep(0.8)
        app.shot("error")
    except BaseException:
        print(app.output())
        raise
    finally:
        app.stop()
