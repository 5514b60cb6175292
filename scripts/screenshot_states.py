"""Screenshots of the window's main states, from real runs of the offline demo (no model, no key).

    .venv/bin/python scripts/screenshot_states.py --out shots                 # every state, 1280x720 and 1920x1080
    .venv/bin/python scripts/screenshot_states.py --state approval --size 1280x720 --scale 1.5 --out shots

States (each one reached the way a person would, through the window's own commands):

- ``empty``: a new thread of the assistant, a folder open;
- ``streaming``: the demo answering (text arriving, a tool card running);
- ``approval``: the demo's tool call waits for approval (the keyboard is in the card: Ctrl+J);
- ``review``: file-helper asked to change a file proposed an edit: the card, the Changes dock, the badge;
- ``error``: a real run against a local model server that is not running (the error card, its fix, Retry);
- ``network``: the support-triage network of robots, its lanes and the Network dock;
- ``settings``: the Settings dialog (its own PNG);
- ``search``: search results across threads (title, robot, date, the match);
- ``long``: a thread with a 50,000-character message, reopened at its end;
- ``composer``: a long message typed in the message box (it wraps at the box's whole width; the model picker,
  the attach button and Send on the row under it);
- ``denied``: the demo's tool call denied with a reason (the card says "Denied" once, with the reason);
- ``palette``: the command palette (Ctrl+K) listing robots and threads for what is typed;
- ``nomatch``: the command palette saying that nothing matches.

Each state runs in its own process (the screen size and ``QT_SCALE_FACTOR`` are set before Qt starts):
the screen is an offscreen one of the given size (``offscreen:configfile=``), and the window fills it.
Files are named ``<state>-<W>x<H>[@<scale>x].png``. Under a real X server (Xvfb), ``--platform xcb``
uses it instead (the screen size is the server's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.window_shots import ROOT, folder_with, fresh_home, run_window, show_filling_screen, until

STATES = ("empty", "streaming", "approval", "review", "error", "network", "settings", "search", "long", "composer",
          "denied", "palette", "nomatch")
SIZES = ("1280x720", "1920x1080")


async def _idle(root: Any) -> None:
    # The open thread's run: a state left before (an approval waiting) goes on in its own thread.
    await until(lambda: not root.controller.running, what="the run to end")
    await asyncio.sleep(0.3)


def _folder() -> Path:
    return folder_with("garden-notes", {
        "notes.txt": "Plant tomatoes in May.\nWater the basil every morning.\n",
        "README.md": "# Garden notes\n\nWhat grows where, and when to water it.\n",
        "plan.md": "- [ ] build the raised bed\n- [x] buy seeds\n",
    }, prefix="robotlab-states-")


# -- the states ---------------------------------------------------------------------------------------------
async def empty(root: Any) -> None:
    await asyncio.sleep(0.3)


async def streaming(root: Any) -> None:
    from ui.chat.view.stream import MarkdownStream

    w = root.window
    root.controller.workspace.provider.delay = 0.06
    w.runs.send("read notes.txt and README.md")
    await until(lambda: len([x for x in w.chat.items() if isinstance(x, MarkdownStream)]) >= 2
                 and sum(len(x.text) for x in w.chat.items() if isinstance(x, MarkdownStream)) > 160,
                 what="text to stream")


async def approval(root: Any) -> None:
    w = root.window
    root.controller.workspace.approval.policy.set_rule("ask", tool="read_file")
    w.runs.send("read notes.txt")
    await until(lambda: w.chat.pending_approval() is not None, what="the approval")
    await asyncio.sleep(0.2)
    w.runs.focus_approval()


async def review(root: Any) -> None:
    w = root.window
    _pick(root, "file-helper")
    w.runs.send('append "Harvest the beans in August." to notes.txt')
    await _idle(root)
    session = root.controller.session
    w.docks.review_changes(session.changes.id)
    await asyncio.sleep(0.3)


async def error(root: Any) -> None:
    w = root.window
    w.runs.send("hello")
    await _idle(root)


async def network(root: Any) -> None:
    w = root.window
    row = w.robot_model.row_of("support-triage", "network")
    w.robot_picker.setCurrentIndex(row)
    w.runs.send("I was charged twice for my subscription this month")
    await _idle(root)
    dock = w.docks["network"]
    dock.show()
    dock.raise_()
    await asyncio.sleep(0.3)


async def settings(root: Any) -> None:
    root.window.settings_flow.open_settings()
    await asyncio.sleep(0.3)


async def search(root: Any) -> None:
    w = root.window
    for message in ("read notes.txt", "search for basil", "remember that basil likes sun"):
        w.threads.new()
        w.runs.send(message)
        await _idle(root)
    w.threads.new()
    w.sidebar.search.setText("basil")
    await until(lambda: w.thread_model.searching and w.thread_model.rowCount() >= 2, what="search results")
    await asyncio.sleep(0.3)


async def long(root: Any) -> None:
    w = root.window
    words = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    text = "".join((words * 3)[: 80 + (i * 37) % 240] + ("\n\n" if i % 4 == 0 else "\n") for i in range(260))[:50_000]
    w.runs.send(text)
    await _idle(root)
    thread = root.controller.thread_id
    w.threads.new()
    await asyncio.sleep(0.1)
    w.threads.open(thread)
    await asyncio.sleep(0.5)


async def composer(root: Any) -> None:
    w = root.window
    w.composer.set_text("Read notes.txt and plan.md, then write a short watering schedule for the basil and the "
                        "tomatoes: which days, how much water, and what to check in the morning before it gets hot.")
    w.composer.focus()
    await asyncio.sleep(0.3)


async def denied(root: Any) -> None:
    w = root.window
    root.controller.workspace.approval.policy.set_rule("ask", tool="read_file")
    w.runs.send("read notes.txt")
    await until(lambda: w.chat.pending_approval() is not None, what="the approval")
    panel = w.chat.pending_approval()
    panel.reason.setText("not the notes, only the plan")
    panel.deny()
    await _idle(root)


async def _threads(root: Any) -> None:
    w = root.window
    for message in ("read notes.txt", "search for basil", "remember that basil likes sun"):
        w.threads.new()
        w.runs.send(message)
        await _idle(root)
    w.threads.new()


async def palette(root: Any) -> None:
    await _threads(root)
    w = root.window
    w.commands.open_palette()
    w.command_palette.input.setText("bas")
    await asyncio.sleep(0.3)


async def nomatch(root: Any) -> None:
    w = root.window
    w.commands.open_palette()
    w.command_palette.input.setText("qxz")
    await asyncio.sleep(0.3)


def _pick(root: Any, robot: str) -> None:
    w = root.window
    w.robot_picker.setCurrentIndex(w.robot_model.row_of(robot, "robot"))


# -- one state in this process --------------------------------------------------------------------------------
def shoot(state: str, out: Path, theme: str) -> int:
    home = fresh_home()

    def build() -> Any:
        from ui.app import Application
        from workspace.config import load_config
        from workspace.providers.demo import DemoProvider

        folder = _folder()
        provider: Any = DemoProvider(delay=0.004)
        overrides: dict[str, Any] = {}
        if state == "error":
            # A real run against a local server that is not there: the error is the provider's own.
            provider = None
            overrides = {"llm": {"model": "ollama_chat/llama3.1", "api_base": "http://127.0.0.1:9", "timeout": 5}}
        config = load_config(folder, overrides=overrides) if overrides else None
        root = Application(folder=folder, theme_name=theme, provider=provider, db_path=home / "states.db",
                           config=config)
        show_filling_screen(root.window)
        return root

    async def grab(root: Any, app: Any) -> None:
        await globals()[state](root)
        app.processEvents()
        out.parent.mkdir(parents=True, exist_ok=True)
        target = root.window.settings_flow.dialog if state == "settings" else root.window
        assert target is not None
        target.grab().save(str(out))
        print(f"wrote {out}")

    return run_window(build, grab)


def _screen_file(size: str) -> str:
    width, height = (int(v) for v in size.split("x"))
    path = Path(tempfile.gettempdir()) / f"robotlab-screen-{size}.json"
    path.write_text(json.dumps({"screens": [{"name": "shot", "x": 0, "y": 0, "width": width, "height": height,
                                             "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", choices=STATES, action="append", help="the state (repeat; default: every one)")
    parser.add_argument("--size", action="append", help="the screen, WxH (repeat; default: 1280x720 and 1920x1080)")
    parser.add_argument("--scale", type=float, action="append", help="QT_SCALE_FACTOR (repeat; default: 1)")
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--platform", default="offscreen", help="offscreen (default) or xcb (a real X server)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "states"))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # this process shoots one state into this file
    args = parser.parse_args()
    if args.one:
        return shoot(args.state[0], Path(args.one), args.theme)
    failed = 0
    for size in args.size or SIZES:
        for scale in args.scale or [1.0]:
            for state in args.state or STATES:
                suffix = "" if scale == 1 else f"@{scale:g}x"
                out = Path(args.out) / f"{state}-{size}{suffix}{'-dark' if args.theme == 'dark' else ''}.png"
                env = dict(os.environ, QT_SCALE_FACTOR=f"{scale:g}")
                env["QT_QPA_PLATFORM"] = (f"offscreen:configfile={_screen_file(size)}" if args.platform == "offscreen"
                                          else args.platform)
                done = subprocess.run([sys.executable, __file__, "--state", state, "--theme", args.theme,
                                       "--one", str(out)], env=env, cwd=ROOT, timeout=180)
                failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
