"""The chat's presenter alone: 10,000 events of ordinary robot turns fed through ``ChatPresenter``.

Each turn is a user message, then a run: thinking deltas and the whole thinking, 30 text deltas and
the whole text, a call asked for approval, approved, with progress and a result, a call that proposes a
change, a run status, the usage, 10 more text deltas, the end and the change decided. No window: the
listener is the silent one, so the figure is the presenter's own cost (the reducers, the shared
column), the part of a live run the chat's widgets wait on. Median of 21 runs after one warm-up.

Run: ``.venv/bin/python bench/bench_presenter.py``. Prints the figures and writes
bench/results/presenter.json.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EVENTS = 10_000
RUNS = 21


def make_events() -> list[Any]:
    """The events (and ``("user", text)`` for each message), at least ``EVENTS`` of them."""
    from workspace import events as ev
    from workspace.result import RobotResult, Usage

    out: list[Any] = []
    seq = 0

    def e(cls: Any, run: str, **fields: Any) -> Any:
        nonlocal seq
        seq += 1
        return cls(run_id=run, robot="assistant", seq=seq, ts=100.0 + seq, **fields)

    turn = 0
    while sum(1 for x in out if not isinstance(x, tuple)) < EVENTS:
        turn += 1
        r = f"r{turn}"
        files = [{"path": f"f{turn}.txt", "action": "modify", "hunks": 1, "added": 1, "removed": 0}]
        out.append(("user", f"question {turn}"))
        out.append(e(ev.RunStarted, r, message="go"))
        out += [e(ev.ReasoningDelta, r, text="hmm ") for _ in range(5)] + [e(ev.Reasoning, r, text="hmm " * 5)]
        words = [f"w{i} " for i in range(30)]
        out += [e(ev.TextDelta, r, text=w) for w in words] + [e(ev.Text, r, text="".join(words))]
        out += [e(ev.ToolUse, r, id="c1", name="remember", input={"k": 1}),
                e(ev.ApprovalRequested, r, id="c1", name="remember", input={"k": 1}),
                e(ev.ApprovalDecided, r, id="c1", name="remember", decision="approve", scope="once"),
                e(ev.ToolProgress, r, id="c1", progress=1, total=2),
                e(ev.ToolResult, r, id="c1", name="remember", payload={"data": 1}, duration=0.1),
                e(ev.ToolUse, r, id="c2", name="write_file", input={"path": "x"}),
                e(ev.ChangeProposed, r, change_set_id=f"cs{turn}", files=files, tool_id="c2"),
                e(ev.ToolResult, r, id="c2", name="write_file", payload={"data": "ok"}),
                e(ev.RunStatus, r, state="waiting"),
                e(ev.Usage, r, input_tokens=10, output_tokens=5, total_input_tokens=10, total_output_tokens=5)]
        out += [e(ev.TextDelta, r, text=f"v{i} ") for i in range(10)]
        out += [e(ev.RunFinished, r, result=RobotResult(robot_name="assistant", output=[], usage=Usage(10, 5, 0.0))),
                e(ev.ChangeDecided, r, change_set_id=f"cs{turn}",
                  outcome=[{"path": f"f{turn}.txt", "status": "applied"}])]
    return out


def feed_once(events: list[Any]) -> float:
    from ui.chat.model.presenter import ChatPresenter

    gc.collect()
    presenter = ChatPresenter()
    start = time.perf_counter()
    for event in events:
        if isinstance(event, tuple):
            presenter.add_user(event[1])
        else:
            presenter.feed(event)
    elapsed = time.perf_counter() - start
    assert len(presenter.all_change_items()) == sum(1 for x in events if isinstance(x, tuple))
    return elapsed


def main() -> None:
    events = make_events()
    count = sum(1 for x in events if not isinstance(x, tuple))
    feed_once(events)  # warm-up: lazy imports, caches
    median = statistics.median(feed_once(events) for _ in range(RUNS))
    figures = {"events": count, "median_ms": median * 1000, "events_per_s": count / median,
               "us_per_event": median / count * 1e6}
    print(f"presenter, {count} events (median of {RUNS}): {figures['median_ms']:.1f} ms, "
          f"{figures['events_per_s']:,.0f} events/s, {figures['us_per_event']:.2f} µs/event")
    out = ROOT / "bench" / "results" / "presenter.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
