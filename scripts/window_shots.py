"""What the screenshot scripts share: a fresh data folder, a folder for the robots, the window started on a
qasync loop and shown filling the screen, and waiting for a state (``screenshot_states.py``,
``screenshot_fit.py``).

One shot is one process: :func:`fresh_home` first (before Qt or the app is imported), then
:func:`run_window` with a function that builds the app and one that reaches the state and grabs it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


async def until(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "the state") -> None:
    """Wait on the running loop until ``predicate()`` holds (at most ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def fresh_home() -> Path:
    """A new, empty ``ROBOTLAB_HOME`` (and no keyring), so a shot never reads or writes the user's data."""
    home = Path(tempfile.mkdtemp(prefix="robotlab-home-"))
    os.environ["ROBOTLAB_HOME"] = str(home)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    return home


def folder_with(name: str, files: dict[str, str], *, prefix: str) -> Path:
    """A folder ``name`` (in a new temporary folder) holding ``files`` (name -> text)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix)) / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


def show_filling_screen(window: Any) -> None:
    """Show ``window`` filling its screen's available area (a shot shows the window as a person's full screen)."""
    area = window.screen().availableGeometry()
    window.resize(area.size())
    window.move(area.topLeft())
    window.show()


def run_window(build: Callable[[], Any], shoot: Callable[[Any, Any], Awaitable[None]]) -> int:
    """Start Qt and its loop, ``build()`` the app (an ``ui.app.Application``; show its window there), wait for
    the window's docks, then ``await shoot(root, app)`` and close the app, all in one coroutine (tasks the shot
    starts run on the loop)."""
    from ui.app import get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    root = build()

    async def run() -> None:
        await until(lambda: root.window.docks.changes_pane is not None, what="the docks")
        await shoot(root, app)
        await root.aclose()

    try:
        with loop:
            loop.run_until_complete(run())
    finally:
        if not loop.is_closed():
            loop.close()
    return 0


def shots_main(script: str, doc: str | None, states: tuple[str, ...], shoot: Callable[[str, Path], int], *,
               prefix: str = "") -> int:
    """The command line of a screenshot script: each state (``--state``, repeatable; default: all) shot in a
    process of its own (``--one FILE``, which calls ``shoot(state, FILE)``) into ``--out``/``prefix+state``.png."""
    import argparse
    import subprocess
    import sys

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", choices=states, action="append", help="the state (repeat; default: all)")
    parser.add_argument("--platform", default="xcb", help="xcb (under Xvfb, the default) or offscreen")
    parser.add_argument("--out", default=str(ROOT / "docs" / "screens"))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # this process shoots one state into this file
    args = parser.parse_args()
    if args.one:
        return shoot(args.state[0], Path(args.one))
    failed = 0
    for state in args.state or states:
        out = Path(args.out) / f"{prefix}{state}.png"
        env = dict(os.environ, QT_QPA_PLATFORM=args.platform)
        done = subprocess.run([sys.executable, script, "--state", state, "--one", str(out)], env=env, cwd=ROOT,
                              timeout=180)
        failed += done.returncode != 0
    return 1 if failed else 0
