"""A column header's new figures lay nothing out when they need no other height.

While the candidates stream, each header's figures change four times a second; a label that may change size asks
its layout, and through it the column's and the splitter's, to lay out again at every change of its text. New
figures of the same height repaint the label alone; figures that need another line (a narrow column) make the
header grow, and the label shows them whole.
"""

from __future__ import annotations

from typing import Any

from fakes.compare_window import settle

from tests.fakes.app_window import as_read


class LayoutRequests:
    """The LayoutRequest events delivered to ``widgets`` (an application-wide filter), and the Paint events of
    ``painted``."""

    def __init__(self, widgets: list[Any], painted: Any) -> None:
        from PySide6.QtCore import QEvent, QObject
        from PySide6.QtWidgets import QApplication

        seen = self.seen = list[str]()
        self.paints = 0
        counter = self

        class Filter(QObject):
            def eventFilter(self, watched: QObject, event: QEvent) -> bool:
                if event.type() == QEvent.Type.LayoutRequest and any(watched is w for w in widgets):
                    seen.append(watched.objectName() or type(watched).__name__)
                elif event.type() == QEvent.Type.Paint and watched is painted:
                    counter.paints += 1
                return False

        self.filter = Filter()
        self.app = QApplication.instance()
        self.app.installEventFilter(self.filter)

    def close(self) -> None:
        self.app.removeEventFilter(self.filter)


def test_new_figures_of_the_same_height_lay_out_neither_header_nor_column(qtbot: Any) -> None:
    from PySide6.QtWidgets import QPlainTextEdit

    from ui.compare.stats import ColumnStats
    from ui.compare.view import CompareView

    view = CompareView(["model-a", "model-b"], [QPlainTextEdit(), QPlainTextEdit()])
    qtbot.addWidget(view)
    view.resize(1200, 700)
    view.show()
    qtbot.waitExposed(view)
    header, column = view.headers[0], view.columns[0]
    stats = ColumnStats("model-a", status="streaming", output_tokens=120, ttft=0.4, streaming_s=2.0)
    header.show_stats(stats)  # the first figures: the header makes room for them
    settle()
    assert as_read(header.figures.text()) == stats.line()
    assert header.figures.height() >= header.figures.fontMetrics().height()
    requests = LayoutRequests([header, column, view.splitter], header.figures)
    try:
        for tokens in (130, 140, 150):
            stats.output_tokens = tokens
            header.show_stats(stats)
            settle()
            assert as_read(header.figures.text()) == stats.line()
        qtbot.waitUntil(lambda: requests.paints > 0)  # the label repainted (on the window's next repaint)
        assert requests.seen == [], f"new figures laid out {requests.seen}"
    finally:
        requests.close()

    # A column too narrow for the figures on one line: the header grows and the label shows them whole.
    one_line = header.figures.height()
    view.resize(560, 700)
    settle()
    stats.cost, stats.tool_calls, stats.verify = 0.0123, 3, True
    header.show_stats(stats)
    settle()
    label = header.figures
    assert label.width() == label.parentWidget().width() > 0
    assert label.height() == label.heightForWidth(label.width()) > one_line
    assert label.parentWidget().geometry().bottom() < header.height()
