"""Render the window with a network run (offline demo) and the Network dock to a PNG.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_network.py docs/network.png \
        [--network parallel-analysis|support-triage] [--theme dark] [--select TASK] [--running]

The run uses the offline demo provider (no language model, no key): the shipped network runs
for real, its tasks stream into their lanes, and the Network dock shows each task's state.
``--running`` takes the picture while the tasks still run (their nodes turn).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MESSAGES = {
    "parallel-analysis": "The new Acme dashboard is fast and easy, but the export to Excel is broken.",
    "support-triage": "I was charged twice for my subscription this month",
}


async def _wait_until(predicate: object, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        if loop.time() > end:
            raise TimeoutError("the network run did not reach the expected state")
        await asyncio.sleep(0.02)


async def _script(root: object, network: str, select: str | None, running: bool) -> None:
    window = root.window  # type: ignore[attr-defined]
    controller = root.controller  # type: ignore[attr-defined]
    row = window.robot_model.row_of(network, "network")
    window.robot_picker.setCurrentIndex(row)
    await asyncio.sleep(0.1)
    window.runs.send(MESSAGES[network])
    if running:
        await _wait_until(lambda: sum(t.status == "running" for t in window.network_model.tasks.values()) >= 2)
        await asyncio.sleep(0.45)
    else:
        await _wait_until(lambda: controller.idle)
        await asyncio.sleep(0.3)
    dock = window.docks["network"]
    dock.show()
    dock.raise_()
    window.resizeDocks([dock], [500], __import__("PySide6.QtCore", fromlist=["Qt"]).Qt.Orientation.Horizontal)
    if select:
        window.docks.network_pane.select(select)
    await asyncio.sleep(0.3)
    window.chat.scroll_to_bottom()
    await asyncio.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("output", nargs="?", default=str(ROOT / "docs" / "network.png"))
    parser.add_argument("--network", default="parallel-analysis", choices=sorted(MESSAGES))
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--select", help="the task to open in the dock")
    parser.add_argument("--running", action="store_true", help="take the picture mid-run")
    parser.add_argument("--size", default="1440x960")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="robotlab-home-"))
    os.environ["ROBOTLAB_HOME"] = str(home)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"

    from ui.app import Application, get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    root = Application(theme_name=args.theme, db_path=home / "shot.db")
    width, height = (int(v) for v in args.size.split("x"))
    root.window.resize(width, height)
    root.window.show()
    try:
        with loop:
            loop.run_until_complete(_script(root, args.network, args.select, args.running))
            out = Path(args.output)
            out.parent.mkdir(parents=True, exist_ok=True)
            app.processEvents()
            root.window.grab().save(str(out))
            print(f"wrote {out}")
            loop.run_until_complete(root.aclose())
    finally:
        if not loop.is_closed():
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
