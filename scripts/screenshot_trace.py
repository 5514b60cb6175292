"""Screenshots of the trace and of a replay, from a real thread with a scripted model (no key, no network):

- ``trace-rerun``: the Trace dock's tree of a run that read a file, and "Run again" on that call after the
  file changed: the recorded result beside the new one, with their diff;
- ``replay-divergence``: "Replay with…" on a two-turn thread whose replay calls a tool the record does not
  hold at turn 2: the turns, the diverging one marked, both answers side by side, the summary line.

    xvfb-run -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_trace.py --platform xcb --out shots

The dialogs are windows of their own: the shot is the whole screen. Each state runs in its own process;
files are ``<state>.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.window_shots import ROOT, folder_with, fresh_home, run_window, until

STATES = ("trace-rerun", "replay-divergence")


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

        if state == "trace-rerun":
            provider = ScriptedProvider([
                ["Let me read the plan.", ToolCall("read_file", {"path": "plan.md"}, id="c1")],
                "Two items: the raised bed is still to build; the seeds are bought.",
            ])
        else:
            provider = ScriptedProvider(["Hello! I can help with the garden notes.",
                                         "Water the basil every morning, says notes.txt."])
        root = Application(folder=folder, theme_name="light", provider=provider, db_path=home / "trace.db")
        root.controller.set_robot("file-helper")
        window = root.window
        area = window.screen().availableGeometry()
        window.resize(area.size())
        window.move(area.topLeft())
        window.show()
        return root

    async def grab(root: Any, app: Any) -> None:
        from workspace.providers.testing import ToolCall

        w = root.window
        c = root.controller
        if state == "trace-rerun":
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
            dialog = pane.run_again(call)
            dialog.move(w.geometry().left() + 8, w.geometry().top() + 90)
            dialog.resize(700, 580)
            task = dialog.start()
            await task
        else:
            for text in ("hi", "how do I water the basil?"):
                w.runs.send(text)
                await until(lambda: c.idle, timeout=60, what="the run to end")
            provider.enqueue("Hello! I can help with the garden notes.",
                             ["Let me look.", ToolCall("search_files", {"query": "basil"}, id="n1")],
                             "The notes say: water it every morning.")
            w.commands.by_name["replay_with"].trigger()
            from ui.replay.dialog import ReplayDialog

            dialog = next(d for d in w.findChildren(ReplayDialog) if d.isVisible())
            dialog.move(w.geometry().left() + 120, w.geometry().top() + 50)
            dialog.resize(980, 640)
            task = dialog.start()
            await task
        await asyncio.sleep(0.5)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        app.primaryScreen().grabWindow(0).save(str(out))
        print(f"wrote {out}")
        dialog.close()

    return run_window(build, grab)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", choices=STATES, action="append", help="the state (repeat; default: both)")
    parser.add_argument("--platform", default="xcb", help="xcb (under Xvfb, the default) or offscreen")
    parser.add_argument("--out", default=str(ROOT / "docs" / "screens"))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # this process shoots one state into this file
    args = parser.parse_args()
    if args.one:
        return shoot(args.state[0], Path(args.one))
    failed = 0
    for state in args.state or STATES:
        out = Path(args.out) / f"{state}.png"
        env = dict(os.environ, QT_QPA_PLATFORM=args.platform)
        done = subprocess.run([sys.executable, __file__, "--state", state, "--one", str(out)], env=env, cwd=ROOT,
                              timeout=180)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
