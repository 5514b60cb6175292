"""What each kind of chat widget costs the window's thread: made, first shown and first laid out.

For each kind a thread's turns are made of (an answer segment ``AutoHeightText`` with a short Markdown answer,
the model's thinking, a notice line, a failed run's footer, a tool card, the robot's header, a run's footer, the
user's message; tool cards with a result, with big JSON arguments, with a written file's and with a 50 KB result),
``SAMPLES`` widgets are made one at a time in a shown column with the window's theme applied (as the chat makes them): the time to construct (and
fill) it, then to show it and lay the column out (``QWidget.show`` and the posted layout requests), then to
paint it the first time (``QWidget.grab``); each deleted before the next is made. Printed per kind: the medians of the wall time and of the window
thread's CPU time (``time.thread_time``), with the load average. Then what a written file's card costs the turn
window's steps: made and shown whole in one, or (cards that leave long arguments to a step of their own) the card
in one and its arguments' text in the next; and what asking 30 cards' result toggles their size hints costs.

``--shots DIR`` instead writes ``DIR/chat-light.png`` and ``DIR/chat-dark.png``: a chat showing a thread
with a tool call (as the thread-scale bench builds them), grabbed, to compare the look of two versions pixel
for pixel.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scratch import scratch_dir

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SAMPLES = 60
#: What a failed run's footer is given (before the theme's rules: its colour, a style sheet of its own).
FOOTER_TONE = "error"
ANSWER = ("**file_1.py** defines `f`, which does nothing:\n\n```python\ndef f():\n    pass\n```\n\n"
          "It is called from *main* only.")


def _kinds() -> dict[str, Callable[[Any], Any]]:
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.messages import NoticeLine, RobotHeader, RunFooter, ThinkingBlock, UserMessage
    from ui.widgets.common import AutoHeightText

    def answer(parent: Any) -> Any:
        view = AutoHeightText("", parent)
        view.set_markdown(ANSWER)
        return view

    def thinking(parent: Any) -> Any:
        block = ThinkingBlock(parent)
        block.body.setText("First the file, then its callers.")
        return block

    def failed_footer(parent: Any) -> Any:
        footer = RunFooter(turn_id="t1", parent=parent)
        footer.set_status("Failed: the model's server closed the connection.", FOOTER_TONE)
        return footer

    return {
        "answer segment": answer,
        "thinking": thinking,
        "notice line": lambda parent: NoticeLine("The answer was cut off at the token limit.", level="warning",
                                                 parent=parent),
        "failed footer": failed_footer,
        "tool card": lambda parent: ToolCard(call_id="c1", tool="read_file", robot="assistant", server=None,
                                             arguments={"path": "file_1.py"}, parent=parent),
        "card+result": lambda parent: _tool_card(parent, {"path": "file_1.py"}, {"data": {"content": CODE * 5}}),
        "robot header": lambda parent: RobotHeader("assistant", parent),
        "run footer": lambda parent: RunFooter(turn_id="t1", parent=parent),
        "user message": lambda parent: UserMessage("Question 1: what does file_1.py do?", turn_id="t1",
                                                   parent=parent),
        # tool cards as real threads have them (the one above is the paging bench's): big arguments, shown as JSON
        # (their first lines) or as text (a file written: its first 6,000 characters), and a result at the
        # size a model is given at most (collapsed: its preview)
        "card JSON args": lambda parent: _tool_card(parent, JSON_ARGS, {"data": "ok"}),
        "card file args": lambda parent: _tool_card(parent, FILE_ARGS, {"data": "written"}),
        "card 50KB out": lambda parent: _tool_card(parent, {"q": "rows"}, {"data": BIG_RESULT}),
    }


CODE = "def f():\n    pass\n"
JSON_ARGS = {"rows": [{"id": i, "name": f"row {i}", "tags": ["a", "b"]} for i in range(200)]}
BIG_RESULT = [{"id": i, "value": "a value of the row " * 2} for i in range(1200)]  # about 50,000 characters
FILE_ARGS = {"path": "app.py", "content": CODE * 400}


def _tool_card(parent: Any, arguments: Any, result: Any, *, later: bool = False) -> Any:
    """A finished call's card, as the chat makes it: made, then its call applied (``later``: as the turn window
    makes it, long arguments' text left to its next step)."""
    from ui.chat.model.state import TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard

    card = ToolCard(call_id="c1", tool="write_file", robot="assistant", server=None, arguments=arguments,
                    parent=parent, **({"later": True} if later else {}))
    card.apply(ToolCallItem(parent=TurnState(), call_id="c1", tool="write_file", robot="assistant",
                            arguments=arguments, status="ok", result=result, duration=0.1))
    return card


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.thread_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return (time.perf_counter() - start[0]) * 1000, (time.thread_time() - start[1]) * 1000


def costs(samples: int = SAMPLES) -> dict[str, dict[str, float]]:
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

    from ui import theme
    from ui.app import get_app

    app = get_app()
    theme.apply_theme(app, "light")
    column = QWidget()
    layout = QVBoxLayout(column)
    column.resize(800, 600)
    column.show()
    app.processEvents()
    result: dict[str, dict[str, float]] = {}
    for name, make in _kinds().items():
        make_ms: list[float] = []
        show_ms: list[float] = []
        paint_ms: list[float] = []
        make_cpu: list[float] = []
        show_cpu: list[float] = []
        paint_cpu: list[float] = []
        for i in range(samples + 3):  # the first few warm the caches (fonts, icons, the style's rules)
            start = _clock()
            widget = make(column)
            made = _since(start)
            start = _clock()
            layout.addWidget(widget)
            widget.show()
            QApplication.sendPostedEvents()
            layout.activate()
            shown = _since(start)
            start = _clock()
            widget.grab()
            painted = _since(start)
            if i >= 3:
                make_ms.append(made[0])
                make_cpu.append(made[1])
                show_ms.append(shown[0])
                show_cpu.append(shown[1])
                paint_ms.append(painted[0])
                paint_cpu.append(painted[1])
            layout.removeWidget(widget)
            widget.hide()
            widget.deleteLater()
            QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # (gone: the next one paints alone)
            layout.activate()
            column.resize(800, 600)  # (a tall card grew the column: the next widget would be laid out that tall)
        total = [a + b + c for a, b, c in zip(make_ms, show_ms, paint_ms, strict=True)]
        total_cpu = [a + b + c for a, b, c in zip(make_cpu, show_cpu, paint_cpu, strict=True)]
        result[name] = {
            "make_ms": statistics.median(make_ms), "make_cpu_ms": statistics.median(make_cpu),
            "show_ms": statistics.median(show_ms), "show_cpu_ms": statistics.median(show_cpu),
            "paint_ms": statistics.median(paint_ms), "paint_cpu_ms": statistics.median(paint_cpu),
            "total_ms": statistics.median(total), "total_cpu_ms": statistics.median(total_cpu),
        }
    column.close()
    return result


def file_card_steps(samples: int = SAMPLES) -> dict[str, float] | None:
    """The card of a written file as the turn window makes it: made and shown whole in one step (the medians of
    its wall and CPU ms), or (a version whose cards leave long arguments to a step of their own) the card in one
    step, its arguments' text in the next. None: this version makes the card whole."""
    import inspect

    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

    from ui.chat.view.cards import ToolCard

    if "later" not in inspect.signature(ToolCard).parameters:
        return None
    column = QWidget()
    layout = QVBoxLayout(column)
    column.resize(800, 600)
    column.show()
    QApplication.processEvents()
    rows: list[tuple[float, ...]] = []
    for i in range(samples + 3):
        start = _clock()
        card = _tool_card(column, FILE_ARGS, {"data": "written"}, later=True)
        layout.addWidget(card)
        card.show()
        QApplication.sendPostedEvents()
        layout.activate()
        first = _since(start)
        start = _clock()
        card.finish()
        QApplication.sendPostedEvents()
        layout.activate()
        second = _since(start)
        if i >= 3:
            rows.append((*first, *second))
        layout.removeWidget(card)
        card.hide()
        card.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        layout.activate()
        column.resize(800, 600)
    column.close()
    names = ("card_ms", "card_cpu_ms", "args_ms", "args_cpu_ms")
    return {name: statistics.median(row[k] for row in rows) for k, name in enumerate(names)}


def toggle_hints(cards: int = 30, rounds: int = 50) -> float:
    """CPU ms to ask the result toggles of ``cards`` shown cards their size hints once each (a layout of the column
    asks them so, each step that lays it out), median of ``rounds``."""
    from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

    column = QWidget()
    layout = QVBoxLayout(column)
    column.resize(800, 600)
    made = [_tool_card(column, {"path": f"file_{i}.py"}, {"data": {"content": CODE * 5}}) for i in range(cards)]
    for card in made:
        layout.addWidget(card)
    column.show()
    QApplication.processEvents()
    times: list[float] = []
    for _ in range(rounds):
        start = time.thread_time()
        for card in made:
            card._result_toggle.sizeHint()
            card._result_toggle.minimumSizeHint()
        times.append((time.thread_time() - start) * 1000)
    column.close()
    return statistics.median(times)


def shots(folder: Path) -> None:
    from bench_ui_thread_scale import build_thread
    from PySide6.QtWidgets import QApplication

    from ui import theme
    from ui.app import get_app
    from ui.chat.view.chat import ChatView
    from ui.transcript import LazyTranscript
    from workspace.persistence import Store

    folder.mkdir(parents=True, exist_ok=True)
    home = scratch_dir("robotlab-shots-")
    thread_id = build_thread(home / "t.db", 3)
    app = get_app()
    for name in theme.THEMES:
        theme.apply_theme(app, name)
        store = Store(home / "t.db")
        chat = ChatView()
        chat.resize(900, 1400)
        chat.show()
        chat.show_thread(LazyTranscript(store, thread_id))
        for _ in range(60):
            app.processEvents()
            QApplication.sendPostedEvents()
            time.sleep(0.01)
        chat.grab().save(str(folder / f"chat-{name}.png"))
        chat.close()
        chat.deleteLater()
        app.processEvents()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--shots", type=Path, help="write screenshots of a chat in both themes here instead")
    args = parser.parse_args()
    if args.shots:
        shots(args.shots)
        return
    result = costs(args.samples)
    load = os.getloadavg()
    print(f"widget costs, median of {args.samples} (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    print(f"{'kind':<16} {'make':>13} {'show+layout':>13} {'first paint':>13} {'total':>13}   (wall / CPU ms)")
    for name, f in result.items():
        print(f"{name:<16} {f['make_ms']:6.2f}/{f['make_cpu_ms']:5.2f} {f['show_ms']:6.2f}/{f['show_cpu_ms']:5.2f} "
              f"{f['paint_ms']:6.2f}/{f['paint_cpu_ms']:5.2f} {f['total_ms']:6.2f}/{f['total_cpu_ms']:5.2f}")
    whole = result["card file args"]
    split = file_card_steps(args.samples)
    load = os.getloadavg()
    print(f"a written file's card as the turn window makes it (wall / CPU ms, load {load[0]:.2f}): ", end="")
    if split is None:
        print(f"one step, {whole['make_ms'] + whole['show_ms']:.2f}/{whole['make_cpu_ms'] + whole['show_cpu_ms']:.2f}")
    else:
        print(f"the card {split['card_ms']:.2f}/{split['card_cpu_ms']:.2f}, then its arguments "
              f"{split['args_ms']:.2f}/{split['args_cpu_ms']:.2f}")
    hints = toggle_hints()
    print(f"30 cards' result toggles asked their size hints: {hints:.2f} ms CPU (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
