"""Opens the window on the screen the platform gives (tests choose it with ``offscreen:configfile=``),
prints where its parts are as JSON, changes what it is told to, and closes it (which saves the layout).

    QT_QPA_PLATFORM=offscreen:configfile=screen.json python -m tests.ui.window_probe [--resize WxH] ...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


def _rect(r: Any) -> list[int]:
    return [r.x(), r.y(), r.width(), r.height()]


async def _probe(args: argparse.Namespace) -> dict[str, Any]:
    from PySide6.QtCore import QPoint, QRect

    from ui.app import Application
    from workspace.providers.testing import ScriptedProvider

    root = Application(provider=ScriptedProvider(), db_path=args.db, theme_name="light")
    window = root.window
    window.show()
    for _ in range(20):
        await asyncio.sleep(0.02)
    composer = window.composer
    top_left = composer.mapToGlobal(QPoint(0, 0))
    screen = window.screen()
    out = {
        "screen": _rect(screen.availableGeometry()),
        "frame": _rect(window.frameGeometry()),
        "size": [window.width(), window.height()],
        "composer": _rect(QRect(top_left, composer.size())),
        "splitter": window.splitter.sizes(),
        "docks": {key: dock.isVisibleTo(window) for key, dock in window.docks.items()},
        "raised": window.docks.raised(),
        "tool_tab": window.docks.tool_pane.tabs.currentIndex() if window.docks.tool_pane else None,
        "restored": window.memory.restored,
    }
    if args.resize:
        width, height = (int(v) for v in args.resize.split("x"))
        window.resize(width, height)
    if args.splitter:
        window.splitter.setSizes([args.splitter, window.width() - args.splitter])
    if args.hide:
        window.docks[args.hide].hide()
    if args.raise_dock:
        window.docks[args.raise_dock].raise_()
    if args.tool_tab is not None and window.docks.tool_pane is not None:
        window.docks.tool_pane.tabs.setCurrentIndex(args.tool_tab)
    await asyncio.sleep(0.05)
    out["before_close"] = {key: dock.isVisible() for key, dock in window.docks.items()}
    out["tabified"] = [d.objectName() for d in window.tabifiedDockWidgets(window.docks["tools"])]
    if args.shot:
        window.grab().save(args.shot)
    window.close()
    await root.aclose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default=":memory:")
    parser.add_argument("--resize")
    parser.add_argument("--splitter", type=int)
    parser.add_argument("--hide")
    parser.add_argument("--raise-dock")
    parser.add_argument("--tool-tab", type=int)
    parser.add_argument("--shot")
    args = parser.parse_args()
    from ui.app import get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    with loop:
        out = loop.run_until_complete(_probe(args))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
