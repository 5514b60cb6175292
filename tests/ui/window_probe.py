"""Opens the window on the screen the platform gives (tests choose it with ``offscreen:configfile=``),
prints where its parts are as JSON, changes what it is told to, and closes it (which saves the layout).
With ``--dialogs`` it opens each of the window's dialogs instead and prints where each one and its
visible buttons are.

    QT_QPA_PLATFORM=offscreen:configfile=screen.json python -m tests.ui.window_probe [--resize WxH] ...
    QT_QPA_PLATFORM=offscreen:configfile=screen.json python -m tests.ui.window_probe --dialogs [--shots DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


def _rect(r: Any) -> list[int]:
    return [r.x(), r.y(), r.width(), r.height()]


async def _settle(n: int = 10) -> None:
    for _ in range(n):
        await asyncio.sleep(0.02)


def _garden(notes: str = "Plant tomatoes in May.\n") -> Any:
    """A folder the robots work in, with one file."""
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp()) / "garden"
    folder.mkdir()
    (folder / "notes.txt").write_text(notes, encoding="utf-8")
    return folder


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
    vertical = bar.shape() in (QTabBar.Shape.RoundedEast, QTabBar.Shape.RoundedWest)
    return {"names": [bar.tabText(i) for i in range(bar.count())],
            "widths": [bar.tabRect(i).width() for i in range(bar.count())],
            "text_widths": [bar.fontMetrics().horizontalAdvance(bar.tabText(i)) for i in range(bar.count())],
            "width": bar.width(),
            "arrows": any(b.isVisible() for b in bar.findChildren(QToolButton)),
            # Down the side: each tab's length along the bar (its name reads along it), and the bar's.
            "vertical": vertical,
            "lengths": [bar.tabRect(i).height() if vertical else bar.tabRect(i).width() for i in range(bar.count())],
            "length": bar.height() if vertical else bar.width()}


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
        await _until(lambda: not root.controller.running)  # the approval state's run waits on in its thread
    elif state == "network":
        w.robot_picker.setCurrentIndex(w.robot_model.row_of("support-triage", "network"))
        w.runs.send("I was charged twice")
        await _until(lambda: not root.controller.running)
        w.docks["network"].raise_()
    await _settle(15)


async def _probe(args: argparse.Namespace) -> dict[str, Any]:
    from PySide6.QtCore import QPoint, QRect

    from ui.app import Application
    from workspace.providers.demo import DemoProvider
    from workspace.providers.testing import ScriptedProvider

    folder = None
    provider: Any = ScriptedProvider()
    if args.state:
        folder = _garden()
        provider = DemoProvider(delay=0.001)
    root = Application(provider=provider, db_path=args.db, theme_name="light", folder=folder)
    window = root.window
    if args.fill:
        # As big as the screen, as the app would size it: once shown, its frame is fitted to the screen too.
        window.resize(window.screen().availableGeometry().size())
        window.memory.sized = window.size()
    window.show()
    await _settle(20)
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
    if args.move:
        x, y = (int(v) for v in args.move.split(","))
        window.move(x, y)
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


def _describe(dialog: Any) -> dict[str, Any]:
    """The dialog's frame, its minimum size, and each visible button's place on the screen."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea

    buttons = []
    for button in dialog.findChildren(QAbstractButton):
        if not button.isVisibleTo(dialog) or not button.text():
            continue
        # Only the buttons of the page shown: a hidden tab's buttons are not on the screen.
        if not button.isVisible():
            continue
        top_left = button.mapToGlobal(QPoint(0, 0))
        # A button in a scrolling page is reached by scrolling: only the others must be on the screen.
        scrolled = False
        parent = button.parentWidget()
        while parent is not None and parent is not dialog:
            if isinstance(parent, QAbstractScrollArea):
                scrolled = True
                break
            parent = parent.parentWidget()
        buttons.append({"text": button.text(), "rect": _rect(QRect(top_left, button.size())), "scrolled": scrolled})
    hint = dialog.minimumSizeHint()
    return {"frame": _rect(dialog.frameGeometry()), "minimum": [max(hint.width(), dialog.minimumWidth()),
                                                               max(hint.height(), dialog.minimumHeight())],
            "buttons": buttons}


async def _probe_dialogs(args: argparse.Namespace) -> dict[str, Any]:
    from pathlib import Path

    from ui.app import Application
    from workspace.providers.demo import DemoProvider

    folder = _garden("Plant tomatoes in May.\nWater them.\n")
    root = Application(provider=DemoProvider(delay=0.001), db_path=":memory:", theme_name="light", folder=folder)
    window = root.window
    window.show()
    await _settle(20)
    await _until(lambda: window.docks.changes_pane is not None)
    out: dict[str, Any] = {"screen": _rect(window.screen().availableGeometry()), "dialogs": {}}

    async def record(name: str, dialog: Any) -> None:
        await _settle()
        out["dialogs"][name] = _describe(dialog)
        if args.shots:
            dialog.grab().save(str(Path(args.shots) / f"{name}.png"))
        dialog.close()
        await _settle(3)

    window.threads.new()
    await _reach(root, "review")
    review = window.docks.changes_pane.open_review()
    await _settle()
    from PySide6.QtCore import QPoint, QRect

    viewport = review.view.viewport()  # the hunks' Accept / Reject / Edit are painted at its right edge
    diff_view = _rect(QRect(viewport.mapToGlobal(QPoint(0, 0)), viewport.size()))
    await record("review", review)
    out["dialogs"]["review"]["diff_view"] = diff_view
    window.settings_flow.open_settings()
    await record("settings", window.settings_flow.dialog)
    window.settings_flow.open_mcp_servers()
    await record("mcp_settings", window.settings_flow.dialog)
    await record("robot_editor", window.robots.open_editor())
    window.commands.show_shortcuts()
    await record("shortcuts", window.commands._shortcuts)
    window.settings_flow.open_about()
    await record("about", window.settings_flow.about_dialog)
    window.close()
    await root.aclose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default=":memory:")
    parser.add_argument("--resize")
    parser.add_argument("--move", help="X,Y: where the window's frame goes before it closes")
    parser.add_argument("--splitter", type=int)
    parser.add_argument("--hide")
    parser.add_argument("--raise-dock")
    parser.add_argument("--tool-tab", type=int)
    parser.add_argument("--shot")
    parser.add_argument("--state", choices=("review", "approval", "error", "network"), action="append")
    parser.add_argument("--fill", action="store_true", help="the window fills the screen")
    parser.add_argument("--dialogs", action="store_true", help="open each dialog instead and say where it is")
    parser.add_argument("--shots", help="with --dialogs: a folder for a PNG of each dialog")
    args = parser.parse_args()
    from ui.app import get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    with loop:
        out = loop.run_until_complete(_probe_dialogs(args) if args.dialogs else _probe(args))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
