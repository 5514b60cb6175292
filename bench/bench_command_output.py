"""A command's 10 MB output streamed into its tool card: the longest stall of the event loop per chunk.

The chunks go the way a live run's do: ``ChatPresenter.feed`` of ``tool_output`` events (ANSI colour codes
in every line), the presenter's ``ToolCalls`` reducer, the chat view's ``tool_output`` into the card's
output view, then one turn of Qt's event loop (layout, paint). Chunk sizes of 8 KB and 64 KB (a fast
command's output in the 50 ms the tool coalesces over). Offscreen; one run each.

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


def stream(chunk_kb: int) -> dict[str, Any]:
    from PySide6.QtWidgets import QApplication

    from ui.chat.view.chat import ChatView
    from workspace import events as ev

    app = QApplication.instance() or QApplication([])
    chat = ChatView()
    chat.resize(800, 700)
    chat.show()
    presenter = chat.presenter
    presenter.add_user("run the tests")
    seq = 0

    def feed(cls: Any, **fields: Any) -> None:
        nonlocal seq
        seq += 1
        presenter.feed(cls(run_id="r1", robot="file-helper", seq=seq, ts=time.time(), **fields))

    feed(ev.RunStarted, message="run the tests")
    feed(ev.ToolUse, id="c1", name="run_command", input={"command": "pytest"})
    app.processEvents()
    chunk = LINE * (chunk_kb * 1024 // len(LINE))
    stalls: list[float] = []
    sent = 0
    while sent < TOTAL:
        start = time.perf_counter()
        feed(ev.ToolOutput, id="c1", name="run_command", text=chunk)
        app.processEvents()
        stalls.append(time.perf_counter() - start)
        sent += len(chunk)
    stalls.sort()
    chat.close()
    return {"chunk_kb": chunk_kb, "chunks": len(stalls), "median_ms": round(statistics.median(stalls) * 1000, 1),
            "p95_ms": round(stalls[int(len(stalls) * 0.95)] * 1000, 1), "worst_ms": round(stalls[-1] * 1000, 1)}


def main() -> None:
    results = [stream(kb) for kb in (8, 64)]
    for r in results:
        print(f"{r['chunk_kb']:>3} KB chunks x {r['chunks']}: median {r['median_ms']} ms, p95 {r['p95_ms']} ms, "
              f"worst {r['worst_ms']} ms")
    out = ROOT / "bench" / "results" / "command_output.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
