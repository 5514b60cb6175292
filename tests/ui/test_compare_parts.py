"""The comparison's parts on their own: a column's figures from its candidate's events (Qt-free, on a
clock the test moves), and the columns' synced scrolling with its "Unlink scrolling" toggle."""

from __future__ import annotations

from typing import Any

from workspace import events as ev


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_column_counts_its_own_candidates_events() -> None:
    from ui.compare.stats import ComparisonStats

    clock = Clock()
    stats = ComparisonStats(["model-a", "model-b"], clock=clock)
    stats.message_sent()
    clock.now += 0.5
    assert stats.feed(ev.RunStarted(run_id="a", robot="coder", model="openai/model-a", candidate=0)) == 0
    assert stats.feed(ev.TextDelta(run_id="a", robot="coder", text="x" * 40, candidate=0)) == 0
    clock.now += 2.0
    stats.feed(ev.ToolUse(run_id="a", robot="coder", id="t1", name="write_file", candidate=0))
    stats.feed(ev.Usage(run_id="a", robot="coder", total_input_tokens=100, total_output_tokens=50,
                        total_cost=0.002, candidate=0))
    stats.feed(ev.VerifyFinished(run_id="a", robot="coder", passed=False, candidate=0))
    stats.feed(ev.RunFinished(run_id="a", robot="coder", candidate=0))
    assert stats.feed(ev.TextDelta(run_id="x", robot="coder", text="not a candidate's")) is None
    a, b = stats.columns
    assert (a.model, a.ttft, a.tool_calls, a.verify, a.status) == ("openai/model-a", 0.5, 1, False, "finished")
    assert a.tokens_per_s == 25.0  # 50 output tokens over the 2 s from the first token to the last event
    assert a.line() == "150 tok · TTFT 0.5 s · 25 tok/s · $0.0020 · 1 tool · verify ✗"
    assert (b.status, b.ttft, b.line()) == ("waiting", None, "0 tok · 0 tools")
    # The next message: the time to first token counts again; the tokens add to the comparison's so far.
    stats.message_sent([0])
    clock.now += 1.0
    stats.feed(ev.TextDelta(run_id="a2", robot="coder", text="y", candidate=0))
    stats.feed(ev.Usage(run_id="a2", robot="coder", total_input_tokens=10, total_output_tokens=5, candidate=0))
    assert (a.ttft, a.input_tokens, a.output_tokens, a.status) == (1.0, 110, 55, "streaming")
    # Kept with the thread and read back (a reopened comparison): the same line; a run cut short is not streaming.
    import json

    again = ComparisonStats(["model-a", "model-b"])
    again.restore(0, json.loads(json.dumps(a.to_dict())))
    again.restore(1, {**b.to_dict(), "verify": True, "unknown key": 1})
    assert again.columns[0].line() == a.line() and again.columns[0].status == "cancelled"
    assert again.columns[1].line().endswith("0 tools · verify ✓")


def test_scrolling_one_column_scrolls_the_others_until_unlinked(qapp_instance: Any) -> None:
    from PySide6.QtWidgets import QLabel, QScrollArea

    from ui.compare.view import CompareView

    bodies = []
    for lines in (200, 100):
        area = QScrollArea()
        area.setWidget(QLabel("\n".join(f"line {n}" for n in range(lines))))
        bodies.append(area)
    view = CompareView(["a", "b"], bodies)
    view.resize(900, 500)
    view.show()
    first, second = (b.verticalScrollBar() for b in bodies)
    assert first.maximum() > 0 and second.maximum() > 0
    first.setValue(first.maximum() // 2)  # half way down the first: half way down the second
    assert abs(second.value() - second.maximum() // 2) <= 1
    second.setValue(second.maximum())
    assert first.value() == first.maximum()
    view.unlink.setChecked(True)
    first.setValue(0)
    assert second.value() == second.maximum()  # unlinked: each on its own
    view.close()
