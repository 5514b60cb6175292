"""The diff view's message when it has nothing to show (the Changes dock's "No proposed changes." and why) is never
clipped: wrapped to the view's width, its later paragraphs left out when the view is short (the dock under a group
of memory writes at 1280x720), its first cut with "…" when even that does not fit on a line."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRect
from PySide6.QtGui import QFontMetrics

from ui.review.painting import MESSAGE_FLAGS, fitted_message

MESSAGE = ("No proposed changes.\n\nWhen a robot edits files in the opened folder, its changes wait here for your "
           "review.")


def fits(metrics: QFontMetrics, text: str, area: QRect) -> bool:
    needed = metrics.boundingRect(QRect(0, 0, area.width(), 1_000_000), MESSAGE_FLAGS, text)
    return needed.height() <= area.height() and needed.width() <= area.width()


def test_the_message_is_whole_then_its_first_paragraph_then_cut(qapp_instance: Any) -> None:
    from PySide6.QtWidgets import QApplication

    metrics = QFontMetrics(QApplication.font())
    line = metrics.lineSpacing()
    assert fitted_message(metrics, MESSAGE, QRect(0, 0, 2000, 10 * line)) == MESSAGE
    narrow = QRect(0, 0, metrics.horizontalAdvance("When a robot edits files in the"), 12 * line)
    assert fitted_message(metrics, MESSAGE, narrow) == MESSAGE  # wrapped, all of it
    short = QRect(0, 0, 400, line + 2)
    assert fitted_message(metrics, MESSAGE, short) == "No proposed changes."
    tiny = QRect(0, 0, metrics.horizontalAdvance("No propos"), line + 2)
    cut = fitted_message(metrics, MESSAGE, tiny)
    assert cut.endswith("…") and "No proposed changes.".startswith(cut[:-1]) and fits(metrics, cut, tiny)


def test_the_view_draws_what_fits_in_a_short_dock_and_all_of_it_in_a_tall_one(qtbot: Any) -> None:
    from ui.review.view import DiffView

    view = DiffView()
    qtbot.addWidget(view)
    view.placeholder = MESSAGE
    view.resize(470, 80)  # the Changes dock's diff area under two memory writes, at 1280x720
    view.show()
    view.grab()
    metrics = QFontMetrics(view.font_ui)
    area = view.viewport().rect().adjusted(20, 0, -20, 0)
    assert view.shown_message and fits(metrics, view.shown_message, area)
    assert view.shown_message != MESSAGE  # it would not fit whole
    view.resize(470, 400)
    view.grab()
    assert view.shown_message == MESSAGE
