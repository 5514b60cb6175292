"""A narrow column wraps an answer's footer and a comparison header's figures between the figures, never inside one.

Seen in the comparison's screenshots: "74.5 tok/" at the end of a footer's line and "s · 1.59 s to first token" on
the next (a line may break after a "/"), a header's "· 12" with "tok/s · 1 tool" below it, and lines beginning with "·".
"""

from __future__ import annotations

from typing import Any

from tests.fakes.app_window import as_read


def line_starts(label: Any, width: int) -> list[int]:
    """Where each line after the first begins in ``label``'s text, wrapped at ``width`` as a word-wrapping label
    wraps it (its font, word boundaries)."""
    from PySide6.QtGui import QTextLayout, QTextOption

    layout = QTextLayout(label.text(), label.font())
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)
    layout.setTextOption(option)
    layout.beginLayout()
    starts = []
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        starts.append(line.textStart())
    layout.endLayout()
    return starts[1:]


def assert_wraps_between(label: Any, separator: str) -> None:
    text = label.text().replace("\u00a0", " ")  # (the same length: indices as laid out)
    starts = {0}  # where a figure begins: a line begins there, after the separator, never inside it
    at = text.find(separator)
    while at >= 0:
        starts.add(at + len(separator))
        at = text.find(separator, at + 1)
    for width in range(40, label.fontMetrics().horizontalAdvance(text) + 2):
        inside = [text[max(0, s - 8):s] + "|" + text[s:s + 8] for s in line_starts(label, width) if s not in starts]
        assert not inside, f"at {width} px a line breaks inside a figure: {inside}"


def test_an_answers_footer_wraps_between_its_figures(qtbot: Any) -> None:
    from ui.chat.view.messages import RunFooter

    footer = RunFooter(turn_id=None)
    qtbot.addWidget(footer)
    footer.set_usage(914, 21, None, 2.4, priced=True, first_token=1.59, speed=74.5)
    assert as_read(footer.usage.text()) == (
        "914 in · 21 out tokens  ·  74.5 tok/s  ·  1.59 s to first token  ·  cost unknown  ·  2.4 s")
    assert_wraps_between(footer.usage, "  ·  ")


def test_a_comparison_headers_figures_wrap_between_them(qtbot: Any) -> None:
    from PySide6.QtWidgets import QPlainTextEdit

    from ui.compare.stats import ColumnStats
    from ui.compare.view import CompareView

    view = CompareView(["openai/model-a", "openai/model-b"], [QPlainTextEdit(), QPlainTextEdit()])
    qtbot.addWidget(view)
    stats = ColumnStats("openai/model-a", status="streaming", output_tokens=442, ttft=0.7, streaming_s=36.8,
                        tool_calls=1)
    for compact in (False, True):
        header = view.headers[0]
        header.set_compact(compact)
        header.show_stats(stats)
        shown = as_read(header.figures.text())
        assert shown == ("streaming · " if compact else "") + stats.line()
        assert_wraps_between(header.figures, " · ")
