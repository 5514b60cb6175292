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
    real_value_html = cards.value_html
    monkeypatch.setattr(cards, "value_html", lambda value: made.append(value) or real_value_html(value))
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
    real = workspace.readable.readable_blocks
    monkeypatch.setattr(workspace.readable, "readable_blocks", lambda value: calls.append(value) or real(value))
    card = _card(arguments, {"data": "ok"})
    assert len(calls) == read
    shown = card._args.toPlainText()
    assert ('"name": "row 0"' in shown) if read == 0 else ("def f():" in shown)
    card.deleteLater()
