"""What making a tool card costs follows what it shows, not the size of the call: a long result's one-line
preview (and its tooltip) reads only the start of it, the result's text is made only when expanded, and the
arguments are read once to learn how they are shown."""

from __future__ import annotations

from typing import Any

import pytest

ENTRIES = 10_000


class _Counted:
    """A value JSON has no form for (written with ``str``): counts how often it is written."""

    written = 0

    def __str__(self) -> str:
        _Counted.written += 1
        return "an entry of the result"


def _card(arguments: Any, result: Any) -> Any:
    from ui.chat.model.state import TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard

    card = ToolCard(call_id="c1", tool="search", robot="assistant", server=None, arguments=arguments)
    card.apply(ToolCallItem(parent=TurnState(), call_id="c1", tool="search", robot="assistant", arguments=arguments,
                            status="ok", result=result, duration=0.1))
    return card


def test_a_long_results_preview_reads_only_its_start(qapp_instance: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.chat.view import cards

    made: list[Any] = []
    real_value_pieces = cards.value_pieces
    monkeypatch.setattr(cards, "value_pieces", lambda value, **kw: made.append(value) or real_value_pieces(value, **kw))
    _Counted.written = 0
    card = _card({"q": "x"}, {"data": [_Counted() for _ in range(ENTRIES)]})
    toggle = card._result_toggle
    # What a person sees: the start of the result on one line, cut with "…", and more of it in the tooltip.
    assert toggle.text().startswith('Result  ·  ["an entry of the result", "an entry of the result"')
    assert toggle.text().endswith("…") and len(toggle.text()) == len("Result  ·  ") + cards.PREVIEW_CHARS
    assert "an entry of the result" in toggle.toolTip()
    # ... for which the preview and the tooltip wrote as many entries as they show, not all 10,000 (twice)
    assert 0 < _Counted.written <= cards.PREVIEW_CHARS + cards.TOOLTIP_CHARS + 2
    assert made == [] and card._result_view is None  # the result's text: only once expanded
    card.set_result_expanded(True)
    assert len(made) == 1 and card._result_view is not None and card._result_view.isVisibleTo(card)
    card.deleteLater()


@pytest.mark.parametrize(("arguments", "read"), [
    ({"rows": [{"id": i, "name": f"row {i}"} for i in range(200)]}, 0),  # JSON: no blocks made to learn so
    ({"path": "a.py", "content": "def f():\n    pass\n" * 50}, 1),  # text: the blocks it is shown with
])
def test_arguments_are_read_once_to_be_shown(qapp_instance: Any, monkeypatch: pytest.MonkeyPatch, arguments: Any,
                                             read: int) -> None:
    import workspace.readable

    calls: list[Any] = []
    real = workspace.readable.readable_parts
    monkeypatch.setattr(workspace.readable, "readable_parts", lambda value: calls.append(value) or real(value))
    card = _card(arguments, {"data": "ok"})
    assert len(calls) == read
    shown = card._args.toPlainText()
    assert ('"name": "row 0"' in shown) if read == 0 else ("def f():" in shown)
    card.deleteLater()


#: What each turn's write_file writes: its arguments' text is long (6,000 characters shown).
FILE = "def f():\n    pass\n" * 400


def _file_thread(store: Any, turns: int) -> str:
    """A thread of ``turns`` turns, each writing a file (long arguments) and reading one (short ones)."""
    from workspace import events as ev
    from workspace.result import RobotResult

    thread = store.create_thread(robot="assistant", title="files")
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"write file_{i}.py", parent_turn_id=parent)
        events: list[ev.Event] = [
            ev.RunStarted(message=f"write file_{i}.py", model="fake"),
            ev.ToolUse(id=f"w{i}", name="write_file", input={"path": f"file_{i}.py", "content": FILE}),
            ev.ToolResult(id=f"w{i}", name="write_file", payload={"data": "written"}, duration=0.01),
            ev.ToolUse(id=f"r{i}", name="read_file", input={"path": f"file_{i}.py"}),
            ev.ToolResult(id=f"r{i}", name="read_file", payload={"data": "def f(): pass"}, duration=0.01),
            ev.RunFinished(result=RobotResult(robot_name="assistant", output=[])),
        ]
        store.append_events(thread.id, turn.id, [e.replace(run_id=f"run{i}", robot="assistant", seq=seq)
                                                 for seq, e in enumerate(events, 1)])
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    store.set_current(thread.id, parent)
    return thread.id


def test_a_cards_texts_are_laid_out_in_steps_of_their_own(
        qapp_instance: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card made by the turn window (a thread opened, paged) laid its arguments' text out with the rest of it: a
    written file's 6,000 characters were 8-10 ms of the window's CPU on top of the card's 3-4, in one step; and a
    card with short arguments and a result, its texts made with it, was a frame and more of the window's thread in
    one step when a thread opened. The card comes in one step, its arguments' text and its result's section each in
    a later one (one step each here: a widget a step)."""
    import time

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from ui.chat.view import virtual
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.chat import ChatView
    from ui.transcript import LazyTranscript
    from workspace.persistence import Store

    store = Store(tmp_path / "files.db")
    thread_id = _file_thread(store, 3)
    monkeypatch.setattr(virtual, "STEP_BUDGET", 0.0)  # (a widget a frame: each step makes one)
    chat = ChatView()
    chat.resize(700, 2000)
    chat.show()
    window = chat.turn_window
    step, seen = window._step, []

    def watched() -> None:  # what each step left: every card, whether its arguments and its result show yet
        step()
        seen.append({c.call_id: (bool(c._args.toPlainText()), c._result_toggle is not None)
                     for c in chat.findChildren(ToolCard)})
        # a result's section made in a later step is styled and shown in it, as the card was (its preview elided at
        # the styled width, not left cut at the unstyled one)
        assert all(t.isVisible() and t.testAttribute(Qt.WidgetAttribute.WA_WState_Polished)
                   for c in chat.findChildren(ToolCard) if (t := c._result_toggle) is not None and c.isVisible())

    window._step = watched  # type: ignore[method-assign]
    try:
        chat.show_thread(LazyTranscript(store, thread_id))
        for _ in range(2000):
            QApplication.processEvents()
            if seen and not window.busy:
                break
            time.sleep(0.001)
        window._step = step  # type: ignore[method-assign]
        cards = {c.call_id: c for c in chat.findChildren(ToolCard)}
        made = [i for i in range(3) if f"w{i}" in cards]  # (the turns near the screen: a turn is a long file)
        assert made and all(f"r{i}" in cards for i in made)
        for call_id in [f"{kind}{i}" for i in made for kind in "wr"]:
            shown = [cards_now[call_id] for cards_now in seen if call_id in cards_now]
            # made with neither, then its arguments' text in a step of its own, then its result's section
            assert shown[0] == (False, False), f"{call_id}'s texts were laid out in the step that made its card"
            assert (True, False) in shown, f"{call_id}'s result came in the step of its arguments"
            assert shown[-1] == (True, True)
            assert shown == sorted(shown)  # (nothing went away meanwhile)
            card = cards[call_id]
            assert card.later is None and card._result_toggle.text().startswith("Result")
        assert all("def f():" in cards[f"w{i}"]._args.toPlainText() for i in made)
    finally:
        window._step = step  # type: ignore[method-assign]
        chat.close()
        chat.deleteLater()
        store.close()


class _CountedMetrics:
    """A button's font metrics that count the texts measured."""

    def __init__(self, metrics: Any, measured: list[str]) -> None:
        self._metrics, self._measured = metrics, measured

    def horizontalAdvance(self, text: str) -> int:
        self._measured.append(text)
        return int(self._metrics.horizontalAdvance(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._metrics, name)


def test_a_result_toggles_size_hints_measure_its_preview_once(qapp_instance: Any) -> None:
    """A card's layout asks its result toggle's size hints again and again (each step that lays the column out):
    each measured the preview, 300 characters, anew (30 cards' hints, 1.7-3 ms of CPU). The widths are kept until
    the font or the style changes."""
    from PySide6.QtWidgets import QToolButton

    from ui.widgets.flow import ElidedToolButton

    button = ElidedToolButton(min_text="Result…")
    measured: list[str] = []
    real = button.fontMetrics
    button.fontMetrics = lambda: _CountedMetrics(real(), measured)  # type: ignore[method-assign]
    preview = "Result  ·  " + "a long preview of the result " * 10
    button.setText(preview)
    button.resize(200, 24)
    hints = [(button.sizeHint().width(), button.minimumSizeHint().width()) for _ in range(10)]
    assert len(set(hints)) == 1
    assert measured.count(preview) <= 1 and len(measured) == len(set(measured)), measured  # (each text once)
    button.setStyleSheet("font-size: 40px;")  # (a font several times as big: measured again)
    assert button.sizeHint().width() > hints[0][0] * 1.5
    assert QToolButton.text(button).endswith("…")
    button.deleteLater()

