"""Screenshots of the window's fit and finish: the whole screen, so a dialog that did not fit would show cut.

    Xvfb :57 -screen 0 1024x640x24 &
    DISPLAY=:57 .venv/bin/python scripts/screenshot_fit.py --platform xcb --out docs/xvfb

Shots (``fit-<shot>-<W>x<H>.png``; one process per shot):

- ``review``: the full-size review window over the main window (three hunks in two files);
- ``apply-question``: Apply with two hunks undecided asks "reject them and apply / go back";
- ``card-counts``: one hunk accepted, one rejected, one undecided: the chat's card, the Changes dock and the
  status bar count the same;
- ``undo-note``: applied, undone, then the next message: its review note (expanded) says undone;
- ``settings``, ``mcp-settings``, ``about``: the dialogs.
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

SHOTS = ("review", "apply-question", "card-counts", "undo-note", "settings", "mcp-settings", "about")
NOTES = "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\niota\nkappa\nlambda\nmu\n"
CODE = "def area(w, h):\n    return w * h\n\n\ndef main():\n    print(area(2, 3))\n"


async def _pause(seconds: float = 0.4) -> None:
    await asyncio.sleep(seconds)


def _provider() -> Any:
    from workspace.providers.testing import ScriptedProvider, ToolCall

    provider = ScriptedProvider()
    provider.enqueue(
        [ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1"),
         ToolCall("edit_file", {"path": "notes.txt", "search": "kappa", "replace": "KAPPA"}, id="e2"),
         ToolCall("edit_file", {"path": "app.py", "search": "    return w * h\n",
                                "replace": "    \"\"\"Area of a rectangle.\"\"\"\n    return w * h\n"}, id="e3")],
        "I proposed three edits in two files: two words in notes.txt and a docstring for area().",
    )
    provider.enqueue("Understood: the files are as they were, I will not assume my edits are there.")
    return provider


async def _proposed(root: Any) -> Any:
    w = root.window
    w.robot_picker.setCurrentIndex(w.robot_model.row_of("file-helper", "robot"))
    w.runs.send("capitalise beta and kappa in the notes and document area()")
    await until(lambda: root.controller.idle and root.controller.session is not None, what="the run")
    await _pause()
    pane = w.docks.changes_pane
    w.docks.review_changes(root.controller.session.changes.id)
    await until(lambda: not pane.commands.busy, what="the history")
    return pane


async def shot(name: str, root: Any) -> Any:
    """Reach the shot's state; return the widget whose screen is grabbed."""
    w = root.window
    if name in ("settings", "mcp-settings"):
        (w.settings_flow.open_mcp_servers if name == "mcp-settings" else w.settings_flow.open_settings)()
        return w.settings_flow.dialog
    if name == "about":
        w.settings_flow.open_about()
        return w.settings_flow.about_dialog
    pane = await _proposed(root)
    changes = root.controller.session.changes
    beta, kappa, doc = (h.id for h in changes.hunks())
    if name == "review":
        review = pane.open_review(hunk_id=kappa)
        return review
    if name == "apply-question":
        pane.model.accept(beta)
        review = pane.open_review(hunk_id=kappa)
        await _pause(0.2)
        review.apply()
        return review.apply_question
    if name == "card-counts":
        pane.model.accept(beta)
        pane.model.reject(kappa, reason="kappa stays lower-case")
        pane.view.select_hunk(doc)
        return w
    if name == "undo-note":
        pane.model.accept(beta, doc)
        pane.model.reject(kappa, reason="kappa stays lower-case")
        pane.apply()
        await until(lambda: pane.undo_button.isEnabled(), what="the apply")
        pane.undo_button.click()
        await until(lambda: pane.redo_button.isEnabled(), what="the undo")
        w.runs.send("I undid it after all. What now?")
        await until(lambda: root.controller.idle, what="the answer")
        await _pause()
        block = w.chat.user_messages()[-1].note_block
        if block is not None:
            block.set_expanded(True)
        return w
    raise ValueError(name)


def one(name: str, out: Path) -> int:
    home = fresh_home()

    def build() -> Any:
        from ui.app import Application

        folder = folder_with("garden", {"notes.txt": NOTES, "app.py": CODE}, prefix="robotlab-fit-")
        root = Application(folder=folder, theme_name="light", provider=_provider(), db_path=home / "fit.db")
        root.window.show()
        return root

    async def shoot(root: Any, app: Any) -> None:
        from PySide6.QtGui import QGuiApplication

        window = root.window
        target = await shot(name, root)
        await _pause(0.8)
        if target is not None and target is not window:
            target.raise_()
            target.activateWindow()
        await _pause(0.3)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        QGuiApplication.primaryScreen().grabWindow(0).save(str(out))
        print(f"wrote {out}")

    return run_window(build, shoot)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shot", choices=SHOTS, action="append", help="the shot (repeat; default: every one)")
    parser.add_argument("--platform", default="xcb", help="xcb (a real X server: Xvfb) or offscreen")
    parser.add_argument("--out", default=str(ROOT / "docs" / "xvfb"))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args.shot[0], Path(args.one))
    env = dict(os.environ, QT_QPA_PLATFORM=args.platform)
    failed = 0
    for name in args.shot or SHOTS:
        probe = subprocess.run([sys.executable, "-c", "from PySide6.QtWidgets import QApplication as A; a = A([]); "
                                "s = a.primaryScreen().geometry(); print(f'{s.width()}x{s.height()}')"],
                               env=env, capture_output=True, text=True, timeout=60)
        size = probe.stdout.strip() or "unknown"
        out = Path(args.out) / f"fit-{name}-{size}.png"
        done = subprocess.run([sys.executable, __file__, "--shot", name, "--one", str(out)], env=env, cwd=ROOT,
                              timeout=180)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
