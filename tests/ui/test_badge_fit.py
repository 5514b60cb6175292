"""A card's robot badge narrowed with its card (a comparison's column): its name ends in "…", and where even "…" has no
room it shows nothing, and no empty pill. It drew an empty tinted pill (the style sheet's background and padding around
no text); now the theme's rule for a badge that shows nothing (``[empty="true"]``, ``ui.theme.chat_rules``) draws no
background, its padding, so its size, unchanged (the width it is given never depends on what it shows: no loop).
Pixels of the card as the window draws it, in both themes, and in a delegation lane's colours (``style_chip``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication, QLabel

from ui import theme
from ui.chat.view.cards import ToolCard

#: Card widths from a comparison's narrowest column to one where the badge shows whole.
WIDTHS = range(150, 330, 6)


@pytest.fixture(params=["light", "dark"])
def themed(request: Any, qapp_instance: Any) -> Iterator[QApplication]:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply_theme(app, request.param)
    yield app
    theme.apply_theme(app, "light")


def _card() -> tuple[ToolCard, QLabel]:
    card = ToolCard(call_id="c1", tool="read_file", robot="file-helper", server=None, arguments={"path": "f.py"})
    card.show()
    chip = card.findChild(QLabel, "RobotChip")
    assert chip is not None
    return card, chip


def _at(card: ToolCard, width: int) -> QImage:
    card.setFixedWidth(width)
    for _ in range(3):
        QApplication.processEvents()
    return card.grab().toImage()


def _in_card(card: ToolCard, chip: QLabel) -> QRect:
    """The badge's rectangle in the card."""
    return QRect(chip.mapTo(card, QPoint(0, 0)), chip.size())


def _empty_pills(card: ToolCard, chip: QLabel) -> list[int]:
    """The widths at which the badge shows nothing and its rectangle is not all the header's colour."""
    bad = []
    for width in WIDTHS:
        image = _at(card, width)
        if QLabel.text(chip):
            continue
        rect = _in_card(card, chip)
        header = QColor(image.pixel(rect.left() - 2, rect.center().y()))  # the row's spacing left of it
        inside = {QColor(image.pixel(x, y)).rgb() for x in range(rect.left(), rect.right() + 1)
                  for y in range(rect.top() + 2, rect.bottom() - 1)}
        if inside != {header.rgb()}:
            bad.append(width)
    return bad


def test_a_badge_with_no_room_draws_no_empty_pill(themed: QApplication) -> None:
    card, chip = _card()
    try:
        shown = set()
        for width in WIDTHS:
            _at(card, width)
            shown.add(QLabel.text(chip))
        assert {"file-helper", ""} <= shown  # the widths go from whole to nothing
        assert _empty_pills(card, chip) == []
        # Its size hints are the same with or without text: its width never depends on what it shows.
        _at(card, WIDTHS[-1])
        wide = chip.sizeHint(), chip.minimumSizeHint()
        _at(card, WIDTHS[0])
        assert not QLabel.text(chip) and (chip.sizeHint(), chip.minimumSizeHint()) == wide
        # Wide again: the pill and its name back.
        image = _at(card, 400)
        assert QLabel.text(chip) == "file-helper"
        rect = _in_card(card, chip)
        assert QColor(image.pixel(rect.left() + 3, rect.center().y())) != QColor(image.pixel(rect.left() - 2,
                                                                                        rect.center().y()))
    finally:
        card.close()
        card.deleteLater()


def test_a_lanes_badge_with_no_room_draws_no_empty_pill(themed: QApplication) -> None:
    from ui.widgets.status import recolor_chips

    card, chip = _card()
    try:
        recolor_chips(card, "file-helper", "#d9480f")  # a delegation lane's colour: a style sheet of its own
        assert _empty_pills(card, chip) == []
    finally:
        card.close()
        card.deleteLater()


def _ink(image: QImage, rect: QRect, background: QColor) -> int:
    """How many columns of ``rect`` in ``image`` have ink on ``background`` (a pixel of a text's colour)."""
    def inked(x: int) -> bool:
        for y in range(rect.top(), rect.bottom() + 1):
            pixel = QColor(image.pixel(x, y))
            if max(abs(pixel.red() - background.red()), abs(pixel.green() - background.green()),
                   abs(pixel.blue() - background.blue())) > 60:
                return True
        return False
    return sum(inked(x) for x in range(rect.left(), rect.right() + 1))


def _drawn_alone(chip: QLabel, text: str, background: QColor) -> int:
    """The ink columns of ``text`` drawn in the badge's font and colour with room to spare."""
    width = chip.fontMetrics().horizontalAdvance(text) + 20
    image = QImage(width, chip.height(), QImage.Format.Format_RGB32)
    image.fill(background)
    painter = QPainter(image)
    painter.setFont(chip.font())
    painter.setPen(chip.palette().color(chip.foregroundRole()))
    painter.drawText(QRect(10, 0, width - 20, chip.height()), int(Qt.AlignmentFlag.AlignVCenter), text)
    painter.end()
    return _ink(image, image.rect(), background)


def test_an_elided_badge_shows_its_ellipsis_whole(themed: QApplication) -> None:
    """"file-hel…" lost the last dot of its "…": it was elided to the badge's contents width, but QLabel draws a text
    in a style sheet's pill half an "x" in. Each width from whole to "…": the text drawn whole (as much ink as the same
    text drawn with room to spare)."""
    card, chip = _card()
    try:
        cut, elided = [], set()
        for width in range(150, 330, 2):
            image = _at(card, width)
            shown = QLabel.text(chip)
            if not shown or shown == chip.text():
                continue
            elided.add(shown)
            rect = _in_card(card, chip)
            background = QColor(image.pixel(rect.left() + 2, rect.center().y()))  # the pill's, in its padding
            if _ink(image, rect, background) < _drawn_alone(chip, shown, background) - 1:
                cut.append((width, shown))
        assert {"file-hel…", "fil…", "…"} <= elided
        assert cut == []
    finally:
        card.close()
        card.deleteLater()
