"""What the start-up tests share: the app after a staged start-up, and a pane factory that makes no pane."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.fakes.app_window import close_app, wait_until


@contextlib.asynccontextmanager
async def started(db_path: Path, *, inspector: bool = False) -> AsyncIterator[Any]:
    """The app after a staged start-up (``ui.app.Application``), closed at the end; with ``inspector``, the
    inspector open, as Ctrl+I opens it on a screen too narrow for it beside the chat, where it starts closed (on
    the Tool calls tab, making no other pane)."""
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.show()
        root.finish_startup(staged=True)
        await wait_until(lambda: root.whole, timeout=120, what="the start-up")
        if inspector and root.window.docks.raised() is None:
            root.window.docks.toggle_inspector()
        yield root
    finally:
        await close_app(root)


def no_pane(_context: Any) -> None:
    """A pane factory that has no pane for this window (as MCP's without its SDK)."""
    return None

