"""Screenshots of the trace and of a replay, from a real thread with a scripted model (no key, no network):

- ``trace-rerun``: the Trace dock's tree of a run that read a file, and "Run again" on that call after the
  file changed: the recorded result beside the new one, with their diff;
- ``trace-request``: the same run's tree with its second model call's request selected: the detail shows the
  request as sent (the system prompt, the message, the tool call and its result, the tools offered), secrets
  masked;
- ``replay-divergence``: "Replay with…" on a two-turn thread whose replay calls a tool the record does not
  hold at turn 2: the turns, the diverging one marked, both answers side by side, the summary line.

    xvfb-run -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_trace.py --platform xcb --out shots

Under Xvfb the steps are a person's input (xdotool): a double-click on the tool call, a click on Run; Ctrl+K,
"Replay with", Enter, a click on Replay. The dialogs are windows of their own: the shot is the whole screen. Each state runs in its own process;
files are ``<state>.png``.
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

STATES = ("trace-rerun", "trace-request", "replay-divergence")


async def xdo(*args: str) -> bool:
    """A person's input through xdotool on the X server (False: no X server or no xdotool: the caller acts)."""
    if os.environ.get("QT_QPA_PLATFORM") != "xcb" or shutil.which("xdotool") is None:
        return False
    done = await asyncio.to_thread(subprocess.run, ["xdotool", *args], capture_output=True, timeout=30)
    await asyncio.sleep(0.3)
    return done.returncode == 0


async def click(widget: Any, at: Any, *, double: bool = False) -> bool:
    """A real click (or double-click) on ``widget`` at its point ``at``."""
    where = widget.mapToGlobal(at)
    repeat = ["--repeat", "2", "--delay", "90"] if double else []
    return await xdo("mousemove", "--sync", str(where.x()), str(where.y())) and await xdo("click", *repeat, "1")


def shoot(state: str, out: Path) -> int:
    home = fresh_home()
    provider: Any = None
    folder = folder_with("garden-notes", {
        "plan.md": "# Plan\n\n- [ ] build the raised bed\n- [x] buy seeds\n",
        "notes.txt": "Plant tomatoes in May.\nWater the basil every morning.\n",
    }, prefix="robotlab-trace-")

    def build() -> Any:
        nonlocal provider
        from ui.app import Application
        from workspace.providers.testing import ScriptedProvider, ToolCall

        if state in ("trace-rerun", "trace-request"):
            provider = ScriptedProvider([
                ["Let me read the plan.", ToolCall("read_file", {"path": "plan.md"}, id="c1")],
                "Two items: the raised bed is still to build; the seeds are bought.",
            ])
        else:
            provider = ScriptedProvider(["Hello! I can help with the garden notes.",
                                         "Water the basil every morning, says notes.txt."])
        root = Application(folder=folder, theme_name="light", provider=provider, db_path=home / "trace.db")
        root.controller.set_robot("file-helper")
        show_filling_screen(root.window)
        return root

    async def grab(root: Any, app: Any) -> None:
        from workspace.providers.testing import ToolCall

        w = root.window
        c = root.controller
        dialog: Any = None
        if state == "trace-request":
            w.runs.send("what is left in the plan?")
            await until(lambda: c.idle, timeout=60, what="the run to end")
            w.docks.focus_dock("trace")
            from PySide6.QtCore import Qt

            w.resizeDocks([w.docks["trace"]], [640], Qt.Orientation.Horizontal)
            pane = w.docks.trace_pane
            await until(lambda: len(pane.find_nodes("model_call")) == 2, what="the tree")
            pane.flush_tree()
            pane.tree.expandAll()
            request = pane.find_nodes("model_call")[1].children[0]
            pane.detail.parentWidget().setSizes([230, 470])
            pane.tree.scrollTo(pane._view_index(request))
            app.processEvents()
            await click(pane.tree.viewport(), pane.tree.visualRect(pane._view_index(request)).center())
            if pane.node_at(pane.tree.currentIndex()) is not request:
                print("the click did not select the request: selected through the pane")
                pane.select_node(request)
        elif state == "trace-rerun":
            w.runs.send("what is left in the plan?")
            await until(lambda: c.idle, timeout=60, what="the run to end")
            (folder / "plan.md").write_text("# Plan\n\n- [x] build the raised bed\n- [x] buy seeds\n- [ ] sow\n",
                                            encoding="utf-8")
            w.docks.focus_dock("trace")
            from PySide6.QtCore import Qt

            w.resizeDocks([w.docks["trace"]], [560], Qt.Orientation.Horizontal)
            pane = w.docks.trace_pane
            await until(lambda: pane.find_nodes("tool_call"), what="the tree")
            pane.flush_tree()
            pane.tree.expandAll()
            call = pane.find_nodes("tool_call")[0]
            pane.select_node(call)
            app.processEvents()
            # A double-click on the call, as a person would (xdotool), opens "Run again".
            index = pane.tree.currentIndex()
            if await click(pane.tree.viewport(), pane.tree.visualRect(index).center(), double=True):
                try:
                    await until(lambda: pane.rerun_dialog is not None, timeout=5, what="the Run again dialog")
                except Exception:
                    print("the double-click did not open the dialog: opened through the pane")
            if pane.rerun_dialog is None:
                pane.run_again(call)
            dialog = pane.rerun_dialog
            dialog.move(w.geometry().left() + 8, w.geometry().top() + 90)
            dialog.resize(700, 580)
            await asyncio.sleep(0.3)
            if not await click(dialog.run_button, dialog.run_button.rect().center()):
                dialog.start()
            try:
                await until(lambda: dialog.rerun_result is not None, timeout=10, what="the call to run again")
            except Exception:
                print("the click did not run it: started through the dialog")
                dialog.start()
                await until(lambda: dialog.rerun_result is not None, timeout=30, what="the call to run again")
        else:
            for text in ("hi", "how do I water the basil?"):
                w.runs.send(text)
                await until(lambda: c.idle, timeout=60, what="the run to end")
            provider.enqueue("Hello! I can help with the garden notes.",
                             ["Let me look.", ToolCall("search_files", {"query": "basil"}, id="n1")],
                             "The notes say: water it every morning.")
            from ui.replay.dialog import ReplayDialog

            def shown() -> Any:
                return next((d for d in w.findChildren(ReplayDialog) if d.isVisible()), None)

            # Thread › Replay with…, through the command palette, typed (xdotool).
            w.activateWindow()
            typed = (await xdo("key", "ctrl+k") and await xdo("type", "--delay", "20", "Replay with")
                     and await xdo("key", "Return"))
            try:
                await until(lambda: shown() is not None, timeout=5 if typed else 0.1, what="the Replay dialog")
            except Exception:
                print("the typed command did not open the dialog: opened through its action")
                w.commands.by_name["replay_with"].trigger()
            await until(lambda: shown() is not None, what="the Replay dialog")
            dialog = shown()
            dialog.move(w.geometry().left() + 120, w.geometry().top() + 50)
            dialog.resize(980, 640)
            await asyncio.sleep(0.3)
            if not await click(dialog.start_button, dialog.start_button.rect().center()):
                dialog.start()
            try:
                await until(lambda: dialog.replay_result is not None, timeout=10, what="the replay")
            except Exception:
                print("the click did not start it: started through the dialog")
                dialog.start()
                await until(lambda: dialog.replay_result is not None, timeout=30, what="the replay")
        await asyncio.sleep(0.5)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        app.primaryScreen().grabWindow(0).save(str(out))
        print(f"wrote {out}")
        if dialog is not None:
            dialog.close()

    return run_window(build, grab)


def main() -> int:
    return shots_main(__file__, __doc__, STATES, shoot)


if __name__ == "__main__":
    sys.exit(main())
