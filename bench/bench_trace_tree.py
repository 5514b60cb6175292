"""The Trace dock's tree on a 2,000-event run: time to open, longest stall.

A synthetic run of 2,000 events like a long agent run's: 100 model calls, each streaming text deltas, a
text, a tool call with its result and the usage; every tenth call a robot used as a tool (a nested run of
its own model call and tool call). Measures (offscreen, the pane at 420×700):

- ``build``: the Qt-free tree from the events (``ui.inspector.trace_tree.build_tree``). Median of 5.
- ``open``: from giving the stored events to the dock's model (``TraceModel.set_events``: the Events table
  is filled, the tree's build begun: above 300 events it is built in slices of at most 8 ms between
  the loop's other work) until the pane has painted. Target < 100 ms.
  Median of 5. ``tree shown``: until the built tree is in the view.
- ``stall``: the longest the event loop is held while the tree is built (a slice: the tree's, then its Qt items'),
  and while the trace
  is used: expanding every node and
  scrolling through it page by page (each step a synchronous repaint; the worst page and the median), searching (the search field filters
  the tree and the Events table; ``tree_search`` is the tree's part alone, and the next key typed), and the run arriving live, 2,000 events in batches of 20, each batch added to the tree
  (the pane adds batches together every 250 ms; here each batch is added at once: the worst case).
  Target: no stall over a frame at 60 Hz (16.7 ms) while scrolling; the search and a live batch are
  reported against the same frame.

Writes ``bench/results/trace_tree.json``. Run: ``.venv/bin/python bench/bench_trace_tree.py``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUNS = 5
EVENTS = 2000
TARGET_OPEN_MS = 100
TARGET_FRAME_MS = 16.7


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def make_events(count: int = EVENTS) -> list[Any]:
    """A run of ``count`` events: model calls streaming, calling tools, and every tenth a nested robot."""
    from workspace import events as ev

    out: list[Any] = []
    ts = 1_700_000_000.0
    seqs: dict[str, int] = {}

    def add(event_type: Any, run: str, robot: str, parent: str | None = None, tool: str | None = None,
            **fields: Any) -> None:
        nonlocal ts
        ts += 0.01
        seqs[run] = seqs.get(run, 0) + 1
        out.append(event_type(run_id=run, robot=robot, seq=seqs[run], ts=ts, parent_run_id=parent,
                              parent_tool_id=tool, **fields))

    add(ev.RunStarted, "r", "boss", message="Work through the list", model="openai/fake")
    step = 0
    while len(out) < count - 8:
        step += 1
        for word in ("Looking ", "at ", "item ", f"{step} ", "now. "):
            add(ev.TextDelta, "r", "boss", text=word)
        add(ev.Usage, "r", "boss", input_tokens=100 + step, output_tokens=10, model="openai/fake")
        add(ev.Text, "r", "boss", text=f"Looking at item {step} now.")
        call = f"c{step}"
        nested = step % 10 == 0
        name = "helper" if nested else "lookup"
        add(ev.ToolUse, "r", "boss", id=call, name=name, input={"query": f"item {step}", "depth": 2})
        if nested:
            inner = f"n{step}"
            add(ev.RunStarted, inner, "helper", "r", call, message=f"item {step}", model="openai/fake")
            add(ev.TextDelta, inner, "helper", "r", call, text="Checking.")
            add(ev.Usage, inner, "helper", "r", call, input_tokens=40, output_tokens=5, model="openai/fake")
            add(ev.ToolUse, inner, "helper", "r", call, id=f"i{step}", name="lookup", input={"query": "x"})
            add(ev.ToolResult, inner, "helper", "r", call, id=f"i{step}", name="lookup", payload={"data": "x"})
            add(ev.Text, inner, "helper", "r", call, text="Done.")
            add(ev.RunFinished, inner, "helper", "r", call)
        add(ev.ToolResult, "r", "boss", id=call, name=name,
            payload={"data": {"item": step, "rows": [{"id": i, "name": f"row {i}"} for i in range(5)]}},
            duration=0.004)
    add(ev.Usage, "r", "boss", input_tokens=900, output_tokens=40, model="openai/fake")
    add(ev.Text, "r", "boss", text="All done.")
    add(ev.RunFinished, "r", "boss")
    return out


def pump(app: Any) -> None:
    app.processEvents()


def main() -> dict[str, Any]:
    from ui.app import get_app
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane
    from ui.inspector.trace_tree import build_tree

    app = get_app()
    events = make_events()
    builds = []
    for _ in range(RUNS):
        started = time.perf_counter()
        tree = build_tree(events)
        builds.append(time.perf_counter() - started)
    nodes = sum(1 for _ in tree.walk())

    opens, readies, waits = [], [], []
    for _ in range(RUNS + 1):
        model = TraceModel()
        pane = TracePane(model)
        pane.resize(420, 700)
        pane.show()
        pump(app)
        started = time.perf_counter()
        model.set_events(events)
        pane.repaint()
        pump(app)
        opens.append(time.perf_counter() - started)
        worst = 0.0
        while pane.building:  # the tree is built in slices: the loop turns between them
            turn = time.perf_counter()
            time.sleep(0.001)
            pump(app)
            worst = max(worst, time.perf_counter() - turn)
        pane.tree.repaint()
        readies.append(time.perf_counter() - started)
        waits.append(worst)
        pane.close()
        pane.deleteLater()
        pump(app)
    cold, warm = opens[0], opens[1:]
    stalls: dict[str, float] = {"while_building": max(waits)}

    model = TraceModel()
    pane = TracePane(model)
    pane.resize(420, 700)
    pane.show()
    model.set_events(events)
    while pane.building:
        time.sleep(0.001)
        pump(app)
    started = time.perf_counter()
    pane.tree.expandAll()
    pane.tree.repaint()
    stalls["expand_all"] = time.perf_counter() - started
    bar = pane.tree.verticalScrollBar()
    pages: list[float] = []
    value = 0
    while value <= bar.maximum():
        started = time.perf_counter()
        bar.setValue(value)
        pane.tree.viewport().repaint()
        pump(app)
        pages.append(time.perf_counter() - started)
        value += max(1, bar.pageStep())
    stalls["scroll_page"] = max(pages)
    stalls["scroll_page_median"] = statistics.median(pages)  # a loaded machine's worst page is noise as much
    for name, text in (("search", "item 57"), ("search_next_key", "item 571")):
        started = time.perf_counter()
        pane.filter.setText(text)  # the tree and the Events table both filter
        pane.tree.repaint()
        pump(app)
        stalls[name] = time.perf_counter() - started
    pane.filter.clear()
    pump(app)
    for name, text in (("tree_search", "item 57"), ("tree_next_key", "item 571")):
        started = time.perf_counter()
        pane.tree_proxy.set_text(text)  # the tree's part alone
        pane.tree.setModel(pane.tree_proxy)
        pane.tree.expandAll()
        pane.tree.repaint()
        pump(app)
        stalls[name] = time.perf_counter() - started
    pane.filter.clear()
    pump(app)

    live_model = TraceModel()
    live = TracePane(live_model)
    live.resize(420, 700)
    live.show()
    pump(app)
    worst_batch = 0.0
    for i in range(0, len(events), 20):
        started = time.perf_counter()
        live_model.append_events(events[i:i + 20])
        live.flush_tree()
        live.repaint()
        pump(app)
        worst_batch = max(worst_batch, time.perf_counter() - started)
    stalls["live_batch"] = worst_batch

    result = {
        "events": len(events), "nodes": nodes,
        "build_ms": ms(statistics.median(builds)),
        "open_cold_ms": ms(cold), "open_ms": ms(statistics.median(warm)), "target_open_ms": TARGET_OPEN_MS,
        "tree_shown_ms": ms(statistics.median(readies[1:])),
        "stalls_ms": {k: ms(v) for k, v in stalls.items()}, "target_frame_ms": TARGET_FRAME_MS,
        "python": platform.python_version(),
    }
    print(f"trace tree of a {len(events):,}-event run ({nodes:,} nodes)")
    print(f"  build (Qt-free)      {result['build_ms']:8.2f} ms")
    print(f"  open                 {result['open_ms']:8.2f} ms (cold {result['open_cold_ms']:.2f} ms)"
          f"   target < {TARGET_OPEN_MS} ms: {'ok' if result['open_ms'] < TARGET_OPEN_MS else 'MISSED'}")
    print(f"  tree shown           {result['tree_shown_ms']:8.2f} ms (built in slices meanwhile)")
    for name, value_ms in result["stalls_ms"].items():
        verdict = "ok" if value_ms <= TARGET_FRAME_MS else "over a frame"
        print(f"  stall: {name:<13} {value_ms:8.2f} ms   target ≤ {TARGET_FRAME_MS} ms: {verdict}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "trace_tree.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
