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


async def _until(predicate: Any, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError("the window did not reach the state")
        await asyncio.sleep(0.02)


def _dock_tabs(window: Any) -> dict[str, Any] | None:
    """The inspector's tab bar: its tabs' names and widths, its width, whether its scroll arrows show."""
    from PySide6.QtWidgets import QTabBar, QToolButton

    bar = next((b for b in window.findChildren(QTabBar) if b.parentWidget() is window and b.isVisible()
                and b.count() == len(window.docks)), None)
    if bar is None:
        return None
    return {"names": [bar.tabText(i) for i in range(bar.count())],
            "widths": [bar.tabRect(i).width() for i in range(bar.count())],
            "text_widths": [bar.fontMetrics().horizontalAdvance(bar.tabText(i)) for i in range(bar.count())],
            "width": bar.width(),
            "arrows": any(b.isVisible() for b in bar.findChildren(QToolButton))}


async def _reach(root: Any, state: str) -> None:
    """Bring the window to ``state`` the way a person would (the offline demo answers)."""
    w = root.window
    if state == "review":
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("file-helper", "robot"))
        w.runs.send('append "Harvest the beans in August." to notes.txt')
        await _until(lambda: root.controller.idle and root.controller.session is not None)
        w.docks.review_changes(root.controller.session.changes.id)
    elif state == "approval":
        root.controller.workspace.approval.policy.set_rule("ask", tool="read_file")
        w.runs.send("read notes.txt")
        await _until(lambda: w.chat.pending_approval() is not None)
    elif state == "error":
        from workspace.providers.testing import Fail, ScriptedProvider

        provider = ScriptedProvider()
        provider.enqueue(["Trying", Fail("Could not reach http://localhost:11434: start Ollama (ollama serve) "
                                         "and try again, or pick another model in Settings.")])
        root.controller.workspace.provider = provider
        w.runs.send("hello")
        await _until(lambda: root.controller.idle)
    elif state == "network":
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("support-triage", "network"))
        w.runs.send("I was charged twice")
        await _until(lambda: root.controller.idle)
        w.docks["network"].raise_()
    for _ in range(15):
        await asyncio.sleep(0.02)


async def _probe(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile
    from pathlib import Path

    from PySide6.QtCore import QPoint, QRect

    from ui.app import Application
    from workspace.providers.demo import DemoProvider
    from workspace.providers.testing import ScriptedProvider

    folder = None
    provider: Any = ScriptedProvider()
    if args.state:
        folder = Path(tempfile.mkdtemp()) / "garden"
        folder.mkdir()
        (folder / "notes.txt").write_text("Plant tomatoes in May.\n", encoding="utf-8")
        provider = DemoProvider(delay=0.001)
    root = Application(provider=provider, db_path=args.db, theme_name="light", folder=folder)
    window = root.window
    if args.fill:
        # As big as the screen, as the app would size it: once shown, its frame is fitted to the screen too.
        window.resize(window.screen().availableGeometry().size())
        window.memory.sized = window.size()
    window.show()
    for _ in range(20):
        await asyncio.sleep(0.02)
    checks: dict[str, Any] = {}
    if args.state:
        from tests.ui.a11y import clipped_texts, unnamed_controls

        await _until(lambda: window.docks.changes_pane is not None)
        for state in args.state:
            window.threads.new()
            await _reach(root, state)
            checks[state] = {"clipped": clipped_texts(window), "unnamed": unnamed_controls(window)}
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
    out["states"] = checks
    out["tab_bar"] = _dock_tabs(window)
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
    parser.add_argument("--state", choices=("review", "approval", "error", "network"), action="append")
    parser.add_argument("--fill", action="store_true", help="the window fills the screen")
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
