"""What opening a big tool result costs the window's thread: the card's click, and the inspector's selection.

For each result (plain text, a JSON listing, a dict holding a Python file's source; 5, 50 and 200 KB), a finished
call's card is made in a shown column (as the chat makes it), then its result toggle is clicked
(``set_result_expanded``) and the event loop turned (``processEvents``) until nothing is left to show: printed
are the medians of the click's step (the click and the loop's turn after it: the posted layout and paint), the
longest turn, the time until all is shown (wall and the window thread's CPU time, ``time.thread_time``) and how
many turns it took, with the load average. Then the same for the results selected in the Tool calls inspector
(a shown ``ToolCallsPane``, its Result tab): the selection is the click. Cards are held by a scroll area, as in
the chat.

Run ``python bench/bench_ui_open_result.py`` (``--rounds N``, default 3); to compare two versions, run it
alternately in each one's checkout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (5, 50, 200)
#: Turns of the loop at most until a result is all shown (bounds a hang).
MOST_TURNS = 5000


def results(kb: int) -> dict[str, Any]:
    """A result of about ``kb`` KB of each kind."""
    n = kb * 1000
    source = (ROOT / "ui" / "chat" / "view" / "cards.py").read_text(encoding="utf-8")
    return {
        "text": ("a line of a long file, with some words in it\n" * (n // 46 + 1))[:n],
        "JSON": {"data": [{"id": i, "value": "a value of the row " * 2} for i in range(n // 52)]},
        "Python": {"data": {"path": "cards.py", "content": (source * (n // len(source) + 1))[:n]}},
    }


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.thread_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return (time.perf_counter() - start[0]) * 1000, (time.thread_time() - start[1]) * 1000


def open_card(app: Any, layout: Any, result: Any) -> dict[str, float]:
    """A card of ``result`` made and shown, then its result opened: the click's step, the longest turn, all."""
    from ui.chat.model.state import TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard

    card = ToolCard(call_id="c1", tool="read_file", robot="assistant", server=None, arguments={"path": "a"})
    card.apply(ToolCallItem(parent=TurnState(), call_id="c1", tool="read_file", robot="assistant",
                            arguments={"path": "a"}, status="ok", result=result, duration=0.1))
    layout.addWidget(card)
    app.processEvents()
    start = _clock()
    card.set_result_expanded(True)
    app.processEvents()
    click_wall, click_cpu = _since(start)
    longest_wall, longest_cpu, turns = click_wall, click_cpu, 1
    while getattr(card, "result_pending", False) and turns < MOST_TURNS:  # (the old card: all at once)
        turn = _clock()
        app.processEvents()
        wall, cpu = _since(turn)
        longest_wall, longest_cpu, turns = max(longest_wall, wall), max(longest_cpu, cpu), turns + 1
    all_wall, all_cpu = _since(start)
    card.setParent(None)
    card.deleteLater()
    app.processEvents()
    return {"click": click_wall, "click CPU": click_cpu, "longest": longest_wall, "longest CPU": longest_cpu,
            "all": all_wall, "all CPU": all_cpu, "turns": turns}


def select_in_inspector(app: Any, result: Any) -> dict[str, float]:
    """The result's call selected in a shown Tool calls inspector (a call before it selected first)."""
    from PySide6.QtWidgets import QApplication

    from tests.fakes.result_panes import tool_calls_pane

    pane = tool_calls_pane([("c0", {"data": "small"}), ("c1", result)])
    pane.select_call("c0")
    pane.tabs.setCurrentIndex(1)  # the Result tab
    QApplication.processEvents()
    start = _clock()
    pane.select_call("c1")
    app.processEvents()
    click_wall, click_cpu = _since(start)
    longest_wall, longest_cpu, turns = click_wall, click_cpu, 1
    while getattr(pane, "result_pending", False) and turns < MOST_TURNS:
        turn = _clock()
        app.processEvents()
        wall, cpu = _since(turn)
        longest_wall, longest_cpu, turns = max(longest_wall, wall), max(longest_cpu, cpu), turns + 1
    all_wall, all_cpu = _since(start)
    pane.close()
    pane.deleteLater()
    app.processEvents()
    return {"click": click_wall, "click CPU": click_cpu, "longest": longest_wall, "longest CPU": longest_cpu,
            "all": all_wall, "all CPU": all_cpu, "turns": turns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

    from ui import theme
    from ui.app import get_app

    app = get_app()
    theme.apply_theme(app, "light")
    scroll = QScrollArea()  # as the chat holds its cards
    scroll.setWidgetResizable(True)
    column = QWidget()
    layout = QVBoxLayout(column)
    scroll.setWidget(column)
    scroll.resize(800, 600)
    scroll.show()
    app.processEvents()
    open_card(app, layout, results(5)["JSON"])  # warm the caches (fonts, lexers, the style's rules)
    print(f"{ROOT.name}: opening a result, medians of {args.rounds} rounds, ms (load {os.getloadavg()[0]:.2f})")
    for where, measure in (("card", lambda result: open_card(app, layout, result)),
                           ("inspector", lambda result: select_in_inspector(app, result))):
        for kb in SIZES:
            for kind, result in results(kb).items():
                rows = [measure(result) for _ in range(args.rounds)]
                med = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
                print(f"{where:9} {kind:6} {kb:3} KB: click {med['click']:6.1f} ({med['click CPU']:6.1f} CPU)  longest "
                      f"turn {med['longest']:6.1f} ({med['longest CPU']:6.1f} CPU)  all {med['all']:6.1f} "
                      f"({med['all CPU']:6.1f} CPU) in {med['turns']:.0f} turns  load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
