"""A screenshot of two runs going in the background, on a real X server (Xvfb) driven by a person's input
(xdotool), at 1920x1080: the sidebar marks one thread answering now and one waiting for your approval while a
third thread is open.

    .venv/bin/python scripts/screenshot_background.py [--out docs/screens]

The app runs as the ``robotlab`` command starts it (tests/xvfb/app_main.py) with its own home and the offline
demo model, slowed down so the first answer streams for a long while; every step is a key or typed text:
a message, Ctrl+N, a message whose file search asks for approval, Ctrl+N, a third message typed (not sent).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.xvfb.xsession import AppUnderTest, XServer, missing_tools, wait_for  # noqa: E402
from workspace import events as ev  # noqa: E402


def run(width: int, height: int, out: Path) -> Path:
    home = Path(tempfile.mkdtemp(prefix="robotlab-background-shot-"))
    folder = home / "garden-notes"
    folder.mkdir()
    (folder / "notes.txt").write_text("Plant tomatoes in May.\nWater the basil every morning.\n", encoding="utf-8")
    (folder / "README.md").write_text("# Garden notes\n\nWhat grows where, and when to water it.\n", encoding="utf-8")
    (home / "config").mkdir()
    # The demo's file search asks first: an approval left waiting in a thread that is not open.
    (home / "config" / "approval.yaml").write_text("rules:\n  - {tool: search_files, action: ask}\n", encoding="utf-8")
    x = XServer(width, height).start()
    app = AppUnderTest(x, home, folder=folder, shots=home / "shots")
    try:
        app.start()
        app.xdotool("windowmove", "--sync", app.window, "0", "0")
        app.xdotool("windowsize", "--sync", app.window, str(width), str(height))
        time.sleep(1.5)  # the window's second stage (docks, the thread list) after its first paint
        app.pace.write_text("0.3", encoding="utf-8")  # slow: the first run streams for a long while
        app.key("ctrl+l")
        slow = "read notes.txt and README.md"
        app.type(slow)
        app.key("ctrl+Return")
        app.wait_turn(slow, "running", timeout=60)
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
        time.sleep(1.5)
        target = out / f"background-runs-{width}.png"
        shutil.copy(app.shot("background-runs"), target)
        return target
    finally:
        app.stop()
        x.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screens"))
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        print(missing, file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"wrote {run(1920, 1080, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
