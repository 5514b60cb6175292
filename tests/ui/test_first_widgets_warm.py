"""After start-up, at idle, the window pays what the first thread opened would pay once in the process: the modules
opening a thread imports (in the Markdown libraries' worker) and a hidden sample of each common kind of a turn's
widgets (a user message, a footer, a robot header, an answer with code, a tool card and its texts), a kind per step,
each hidden in its step. Measured in a fresh process, where those one-time costs are still to pay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_CODE = """
import asyncio, json, os, sys, threading
from ui.app import Application, get_app, new_event_loop
from workspace import events as ev
from workspace.persistence import Store
from workspace.result import RobotResult

db = sys.argv[1]
store = Store(db)
thread = store.create_thread(robot="assistant", title="t")
turn = store.add_turn(thread.id, user_text="What does a.py do?", parent_turn_id=None)
def e(cls, seq, **fields):
    return cls(run_id="r", robot="assistant", seq=seq, **fields)
store.append_events(thread.id, turn.id, [
    e(ev.RunStarted, 1, message="What does a.py do?", model="m"),
    e(ev.Text, 2, text="Let me read `a.py`."),
    e(ev.ToolUse, 3, id="c", name="read_file", input={"path": "a.py"}),
    e(ev.ToolResult, 4, id="c", name="read_file", payload={"data": {"content": "def f():\\n    pass\\n"}}, duration=0.01),
    e(ev.Text, 5, text="It defines `f`:\\n\\n```python\\ndef f():\\n    pass\\n```"),
    e(ev.RunFinished, 6, result=RobotResult(robot_name="assistant", output=[]))])
store.finish_turn(turn.id, "finished")
reopen = sys.argv[2] == "reopen"
if reopen:  # the thread left open last time: start-up reopens it
    store.set_meta("last_thread", thread.id)
store.close()

app = get_app()
loop = new_event_loop(app)
window_thread = threading.get_ident()
imported = []
watching = False
LIBRARIES = ("markdown_it", "mdit_py_plugins", "pygments", "ui.transcript", "ui.compare", "ui.inspector.contents",
             "workspace.ask_user", "workspace.readable", "workspace.session.verify")
def hook(event, args):
    if reopen and event == "import" and threading.get_ident() == window_thread and args[0] not in sys.modules and (
            args[0].startswith(LIBRARIES)):
        imported.append(args[0])
    if watching and event == "import" and threading.get_ident() == window_thread and args[0] not in sys.modules:
        imported.append(args[0])
sys.addaudithook(hook)

KINDS = ("UserMessage", "RunFooter", "RobotHeader", "MarkdownStream", "ToolCard")
shown = []  # (the kind, how many warm-up steps had run) of each widget of those kinds shown before the thread opens

from PySide6.QtCore import QEvent, QObject
class Probe(QObject):
    def eventFilter(self, obj, event):
        if not watching and event.type() == QEvent.Type.Show and type(obj).__name__ in KINDS:
            shown.append((type(obj).__name__, len(root.warm_times)))
        return False
probe = Probe()
app.installEventFilter(probe)
root = None

async def main():
    global root
    from ui import markdown
    root = Application(db_path=db, theme_name="light", defer=True)
    root.window.resize(1200, 800)
    root.window.show()
    root.finish_startup(staged=True)
    while not root.warmed:
        await asyncio.sleep(0.01)
    if reopen:
        chat = root.window.chat
        while chat.turn_window.busy or not chat._widgets or not root.whole:
            await asyncio.sleep(0.01)
        print(json.dumps({"shown": [kind for kind, _ in shown], "imported": imported}))
        sys.stdout.flush()
        os._exit(0)
    column = root.window.chat.column
    await asyncio.sleep(0.2)  # (the samples' deleteLater)
    left = [type(w).__name__ for w in column.findChildren(object) if type(w).__name__ in KINDS]
    estimated = sorted(k.partition("/")[0] for k in root.window.chat.turn_window._costs)
    caches = (markdown._lexer, markdown._parser, markdown._formatter)
    misses = [c.cache_info().misses for c in caches]
    global watching
    watching = True
    root.window.threads.open(thread.id)
    chat = root.window.chat
    while chat.turn_window.busy or not chat._widgets:
        await asyncio.sleep(0.01)
    watching = False
    kinds = sorted({type(w).__name__ for w in chat._widgets.values()})
    print(json.dumps({"steps": [[t.name, t.cpu_ms] for t in root.warm_times], "left": left, "kinds": kinds, "shown": shown, "estimated": estimated,
                      "imported": imported, "built": [c.cache_info().misses - m for c, m in zip(caches, misses)]}))
    sys.stdout.flush()
    os._exit(0)

with loop:
    loop.run_until_complete(main())
"""


def _run(tmp_path: Path, mode: str) -> dict[str, Any]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ROBOTLAB_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _CODE, str(tmp_path / "w.db"), mode], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)  # (only a hang's limit: start-up takes seconds)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_thread_reopened_at_start_up_finds_the_libraries_loaded_and_the_samples_made(tmp_path: Path) -> None:
    # Start-up's worker loads the Markdown libraries and the modules opening a thread needs when a thread will be
    # reopened, and start-up makes the samples in steps before it: the reopened thread's first widgets (made in
    # start-up's steps, before the libraries' usual loading after it) cost what the next ones do.
    found = _run(tmp_path, "reopen")
    assert found["imported"] == [], f"imported on the window's thread at start-up: {found['imported']}"
    # each kind twice: the sample, first, then the turn's own (the card's sample shown again for each of its texts)
    assert found["shown"][:7] == ["UserMessage", "RunFooter", "RobotHeader", "MarkdownStream", "ToolCard", "ToolCard",
                                  "ToolCard"], found["shown"]
    assert [found["shown"].count(kind) for kind in ("UserMessage", "RobotHeader", "ToolCard")] == [2, 2, 4], found["shown"]


def test_the_first_thread_opened_after_the_warm_up_imports_and_builds_nothing_once(tmp_path: Path) -> None:
    found = _run(tmp_path, "click")
    # The warm-up: a sample of each kind shown (its style applied, its size asked), one kind per step (the user
    # message, then its footer; the tool card, then its arguments' text, then its result's section, as the turn
    # window makes them), none of them left in the column.
    assert len(found["steps"]) == 7, found["steps"]
    assert sorted(map(tuple, found["shown"])) == [("MarkdownStream", 3), ("RobotHeader", 2), ("RunFooter", 1),
                                                  ("ToolCard", 4), ("ToolCard", 5), ("ToolCard", 6),
                                                  ("UserMessage", 0)], found["shown"]
    assert found["left"] == [], found["left"]
    # What each sample cost is the turn window's estimate for its kind before it makes one (a kind it had no figure
    # for counted as free: a step made every widget of a turn of new kinds, over its budget).
    assert found["estimated"] == ["HeaderItem", "RunFooter", "TextItem", "ToolArgs", "ToolCallItem", "ToolResult",
                                  "user"], found["estimated"]
    # The thread's first widgets of each kind were made...
    assert {"UserMessage", "RunFooter", "RobotHeader", "MarkdownStream", "ToolCard"} <= set(found["kinds"])
    # ...and the window's thread imported no module and built no lexer, parser or formatter for them.
    assert found["imported"] == [], f"imported on the window's thread when the first thread opened: {found['imported']}"
    assert found["built"] == [0, 0, 0], found["built"]
