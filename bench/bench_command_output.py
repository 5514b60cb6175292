"""A command's 10 MB output streamed to the window: the longest stall of Qt's event loop.

The chunks go the way a live run's do: ``ChatPresenter.feed`` of ``tool_output`` events (ANSI colour codes
in every line), the presenter's ``ToolCalls`` reducer, the chat view's ``tool_output`` into the card's
output view; and the Tool calls inspector's model, with the call selected in its pane (the Output tab).
Then the call's ``tool_result`` (the card folds, the inspector shows the output's last part).

Qt's own event loop runs the whole time (layout, paint, the card's once-a-frame update): a feeder timer hands
it one chunk per turn, as fast as it takes them (a command far faster than the tool's 50 ms coalescing),
and a ticker timer every millisecond records how late it fires. The longest stall is the longest
time the loop did not turn: the worst gap between two ticks, less the tick. Chunk sizes of 8 KB and 64 KB.
Target: one frame at 60 Hz (16 ms). Offscreen; one run each.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_command_output.py``. Prints the figures and
writes bench/results/command_output.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOTAL = 10 * 1024 * 1024
LINE = "tests/test_garden.py::test_watering \x1b[32mPASSED\x1b[0m " + "y" * 40 + "\n"
#: One frame at 60 Hz, in milliseconds.
TARGET_MS = 16.0
TICK_MS = 1


def stream(chunk_kb: int) -> dict[str, Any]:
    from PySide6.QtCore import QEventLoop, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from ui.chat.view.chat import ChatView
    from ui.inspector.panes import ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel
    from workspace import events as ev

    app = QApplication.instance() or QApplication([])
    chat = ChatView()
    chat.resize(800, 700)
    chat.show()
    model = ToolCallsModel()
    pane = ToolCallsPane(model)
    pane.resize(500, 600)
    pane.show()
    pane.tabs.setCurrentWidget(getattr(pane, "output_tab", pane.output_view))  # (before the Output tab paged)
    presenter = chat.presenter
    presenter.add_user("run the tests")
    seq = 0

    def feed(cls: Any, **fields: Any) -> None:
        nonlocal seq
        seq += 1
        event = cls(run_id="r1", robot="file-helper", seq=seq, ts=time.time(), **fields)
        presenter.feed(event)
        model.add_event(event)

    feed(ev.RunStarted, message="run the tests")
    feed(ev.ToolUse, id="c1", name="run_command", input={"command": "pytest"})
    pane.select_call("c1")
    app.processEvents()
    chunk = LINE * (chunk_kb * 1024 // len(LINE))
    loop = QEventLoop()
    gaps: list[float] = []
    cpu_gaps: list[float] = []
    feeds: list[float] = []
    sent = 0
    last = time.perf_counter()
    last_cpu = time.thread_time()

    def tick() -> None:
        nonlocal last, last_cpu
        now, cpu = time.perf_counter(), time.thread_time()
        gaps.append(now - last - TICK_MS / 1000)
        cpu_gaps.append(cpu - last_cpu)
        last, last_cpu = now, cpu

    def feed_one() -> None:
        nonlocal sent
        start = time.perf_counter()
        if sent < TOTAL:
            feed(ev.ToolOutput, id="c1", name="run_command", text=chunk)
            sent += len(chunk)
        else:
            feeder.stop()
            feed(ev.ToolResult, id="c1", name="run_command", payload={"data": {"exit_code": 0}}, duration=3.0)
            QTimer.singleShot(200, loop.quit)  # the last frames: the card's update, the fold, the inspector's part
        feeds.append(time.perf_counter() - start)

    ticker = QTimer()
    ticker.setTimerType(Qt.TimerType.PreciseTimer)
    ticker.setInterval(TICK_MS)
    ticker.timeout.connect(tick)
    feeder = QTimer()
    feeder.setInterval(0)
    feeder.timeout.connect(feed_one)
    started = time.perf_counter()
    last, last_cpu = started, time.thread_time()
    ticker.start()
    feeder.start()
    loop.exec()
    ticker.stop()
    elapsed = time.perf_counter() - started
    card = next(c for c in chat.tool_cards() if c.call_id == "c1")
    plain_line = LINE.replace("\x1b[32m", "").replace("\x1b[0m", "")
    assert card.output is not None and card.output.text.endswith(plain_line * 20)  # the end, in order
    whole = model.find("c1")
    assert whole is not None and len(whole.output) == sent  # the inspector keeps all of it
    shown_lines = card.output.view.document().blockCount()
    chat.close()
    pane.close()
    gaps.sort()
    feeds.sort()
    return {"chunk_kb": chunk_kb, "chunks": len(feeds) - 1, "seconds": round(elapsed, 2),
            "longest_stall_ms": round(max(gaps) * 1000, 1), "p99_stall_ms": round(gaps[int(len(gaps) * 0.99)] * 1000, 1),
            "longest_stall_cpu_ms": round(max(cpu_gaps) * 1000, 1),
            "median_feed_ms": round(statistics.median(feeds) * 1000, 2), "card_lines": shown_lines,
            "inspector_chars": len(pane.output_view.toPlainText())}


def main() -> None:
    results = [stream(kb) for kb in (8, 64)]
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"target: the longest stall under one frame ({TARGET_MS:g} ms); load average {load} "
          f"(on a loaded machine the wall-clock stall includes the time the system ran other processes; "
          f"the loop's own CPU in that stall does not)")
    for r in results:
        met = "met" if r["longest_stall_ms"] <= TARGET_MS else "NOT met"
        cpu_met = "met" if r["longest_stall_cpu_ms"] <= TARGET_MS else "NOT met"
        print(f"{r['chunk_kb']:>3} KB chunks x {r['chunks']} in {r['seconds']} s: longest stall {r['longest_stall_ms']} ms "
              f"({met}), its own CPU at most {r['longest_stall_cpu_ms']} ms ({cpu_met}); p99 {r['p99_stall_ms']} ms, "
              f"median per chunk {r['median_feed_ms']} ms; the card holds {r['card_lines']} lines, the inspector "
              f"shows {r['inspector_chars']:,} characters")
    out = ROOT / "bench" / "results" / "command_output.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"target_ms": TARGET_MS, "load": load, "runs": results}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
