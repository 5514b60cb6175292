"""Screenshots of RobotLab 0.2 in the window, from real runs with a scripted model (no key, no network):

- ``ask-user``: a robot's AskUser question in the chat, its choices as buttons, the default highlighted;
- ``memory-review``: a memory write a robot proposed (``review.memory: ask``) in the Changes dock's Memory
  group, its text edited, waiting for Accept or Reject;
- ``shared-memory-review``: keys a run changed in the robot's own memory, each proposed with its old value and the
  new one, after the run ended.

    xvfb-run -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_robotlab.py --platform xcb --out shots

Under Xvfb the message is typed into the message box and sent with Ctrl+Enter (xdotool), as a person would. Each
state runs in its own process; files are ``<state>.png``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.window_shots import folder_with, fresh_home, run_window, shots_main, show_filling_screen, until

STATES = ("ask-user", "memory-review", "shared-memory-review")

ASKER = ("---\nname: designer\ndescription: asks before it draws\ntools: [ask_user]\nmcp: none\n---\n"
         "You design logos. Ask before you choose.\n")
LEARNER = ("---\nname: build-helper\ndescription: learns how the project builds\nlearn: true\ntools: none\n"
           "mcp: none\n---\nYou help with the build and remember what you learn.\n")
KEEPER = ("---\nname: release-keeper\ndescription: keeps the release plan\ntools: [remember, recall]\nmcp: none\n"
          "---\nYou keep the release plan in your memory.\n")


async def xdo(*args: str) -> bool:
    """A person's input through xdotool on the X server (False: no X server or no xdotool: the caller acts)."""
    if os.environ.get("QT_QPA_PLATFORM") != "xcb" or shutil.which("xdotool") is None:
        return False
    done = await asyncio.to_thread(subprocess.run, ["xdotool", *args], capture_output=True, timeout=30)
    await asyncio.sleep(0.3)
    return done.returncode == 0


async def type_and_send(window: Any, text: str) -> None:
    """Type ``text`` in the message box and press Enter (xdotool); without X, send it through the window."""
    window.activateWindow()
    window.composer.focus()
    await asyncio.sleep(0.3)
    typed = await xdo("type", "--delay", "20", text) and await xdo("key", "ctrl+Return")
    if not typed or window.composer.edit.toPlainText().strip():
        window.composer.edit.clear()
        window.runs.send(text)


def shoot(state: str, out: Path) -> int:
    home = fresh_home()
    robots = home / "config" / "robots"
    robots.mkdir(parents=True, exist_ok=True)
    (robots / "designer.md").write_text(ASKER, encoding="utf-8")
    (robots / "build-helper.md").write_text(LEARNER, encoding="utf-8")
    (robots / "release-keeper.md").write_text(KEEPER, encoding="utf-8")
    folder = folder_with("shop-site", {"README.md": "# Shop site\n\nBuild with `make site`.\n"},
                         prefix="robotlab-0.2-")

    def build() -> Any:
        from ui.app import Application
        from workspace.config import load_config
        from workspace.providers.testing import ScriptedProvider, ToolCall

        if state == "ask-user":
            provider = ScriptedProvider([
                ["Before I draw it, one question.",
                 ToolCall("ask_user", {"question": "Which colour should the shop's logo use?",
                                       "choices": ["Forest green", "Ocean blue", "Sunset orange"],
                                       "default": "Ocean blue"}, id="q1")],
                "Ocean blue it is.",
            ])
            config = load_config(folder)
        elif state == "shared-memory-review":
            provider = ScriptedProvider([
                [ToolCall("remember", {"key": "release-date", "value": "2026-12-04"}, id="m1"),
                 ToolCall("remember", {"key": "release-owner", "value": "Ana"}, id="m2")],
                "The plan is noted: Ana ships on December 4th.",
            ])
            config = load_config(folder, overrides={"review": {"memory": "ask"}})
        else:
            provider = ScriptedProvider([
                ["The build failed with make 3.81; it worked with 4.3. I will remember that.",
                 ToolCall("record_knowledge", {"content": "The site builds with GNU make 4.3 or later (make 3.81 "
                                                          "fails on grouped targets)",
                                               "reasoning": "make site failed with 3.81 and passed with 4.3",
                                               "category": "fact", "domain": "build"}, id="k1")],
                "Noted.",
            ])
            config = load_config(folder, overrides={"review": {"memory": "ask"}})
        root = Application(folder=folder, theme_name="light", provider=provider, db_path=home / "shots.db",
                           config=config)
        show_filling_screen(root.window)
        return root

    async def grab(root: Any, app: Any) -> None:
        w = root.window
        w.robots.refresh()
        name = {"ask-user": "designer", "shared-memory-review": "release-keeper"}.get(state, "build-helper")
        w.robot_picker.setCurrentIndex(w.robot_model.row_of(name))
        await asyncio.sleep(0.3)
        if state == "ask-user":
            from ui.chat.view.ask_user_card import AskUserCard

            await type_and_send(w, "Draw a logo for the shop")

            def asking() -> Any:
                return next((c for c in w.chat.request_cards() if isinstance(c, AskUserCard) and c.asking), None)

            await until(lambda: asking() is not None, timeout=30, what="the question card")
            w.chat.ensureWidgetVisible(asking(), 0, 40)
        else:
            from PySide6.QtCore import Qt

            await type_and_send(w, "Why did the build fail?" if state == "memory-review"
                                else "We ship on December 4th; Ana owns the release")
            pane = w.docks.changes_pane
            await until(lambda: pane is not None and bool(pane.memory_writes.rows), timeout=30,
                        what="the proposed memory write")
            w.docks.focus_dock("changes")
            w.resizeDocks([w.docks["changes"]], [520], Qt.Orientation.Horizontal)
            row = pane.memory_writes.rows[0]
            row.reason.setFocus()
        await asyncio.sleep(0.8)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        app.primaryScreen().grabWindow(0).save(str(out))
        print(f"wrote {out}")
        root.controller.stop()
        await asyncio.sleep(0.3)

    return run_window(build, grab)


def main() -> int:
    return shots_main(__file__, __doc__, STATES, shoot)


if __name__ == "__main__":
    sys.exit(main())
