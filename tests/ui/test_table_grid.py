"""A Markdown table's grid: each cell draws its own 1 px border and the cells overlap by a pixel, instead of Qt's
collapsed borders (whose neighbours Qt looks up cell by cell each time it lays out or paints the table), with the rules
and the text where the collapsed borders put them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QTextCursor, QTextDocument, QTextFormat, QTextTable

from ui import markdown, theme

HEAD = "| # | test | result | time (ms) | note |\n|---:|---|:---:|---:|---|\n"
ROWS = "".join(f"| {i} | `test_case_{i}` | {'**pass**' if i % 3 else '*fail*'} | {i * 37 % 997} | run {i} of the "
               f"[suite](https://ci.example.org/{i}) |\n" for i in range(12))


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    """QTextDocument lays text out with fonts: it needs the application."""


def _tables(doc: QTextDocument) -> list[QTextTable]:
    tables: list[QTextTable] = []
    block = doc.begin()
    while block.isValid():
        table = QTextCursor(block).currentTable()
        if table is not None and table not in tables:
            tables.append(table)
        block = block.next()
    return tables


def _collapsed(doc: QTextDocument) -> None:
    """The same tables drawn as they were, with Qt's collapsed borders: no cell spacing, the table's margins and the
    cells' padding (6 px all round, the table's cellpadding) as the collapsed border needs them."""
    for table in _tables(doc):
        table_format = table.format()
        table_format.setBorderCollapse(True)
        table_format.setCellSpacing(0)
        table_format.setTopMargin(table_format.topMargin() - 1)
        table_format.setBottomMargin(table_format.bottomMargin() - 2)
        table_format.setLeftMargin(0)
        table_format.setRightMargin(0)
        table.setFormat(table_format)
        for row in range(table.rows()):
            for column in range(table.columns()):
                cell = table.cellAt(row, column)
                cell_format = cell.format().toTableCellFormat()
                cell_format.clearProperty(QTextFormat.Property.TableCellTopPadding)
                cell_format.clearProperty(QTextFormat.Property.TableCellBottomPadding)
                cell.setFormat(cell_format)


def _image(doc: QTextDocument, width: int) -> QImage:
    doc.setDocumentMargin(0)
    doc.setTextWidth(width)
    image = QImage(width, int(doc.size().height() + 0.999), QImage.Format.Format_ARGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    doc.drawContents(painter, QRectF(0, 0, image.width(), image.height()))
    painter.end()
    return image


def _grid(image: QImage) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """Where the image's rules are (the rows a rule crosses at x=3, the columns one crosses in the middle of the second
    row of cells) and, in each row of cells, how far from its rules the text's glyphs are (dark pixels: an inline code's
    background is not text)."""
    rule = QColor(theme.colors().border).rgb()
    rows = [y for y in range(image.height()) if image.pixel(3, y) == rule]
    middle = (rows[1] + rows[2]) // 2
    columns = [x for x in range(image.width()) if image.pixel(x, middle) == rule]
    text: list[tuple[int, int]] = []
    for top, bottom in itertools.pairwise(rows):
        inked = [y for y in range(top + 1, bottom)
                 if any(QColor(image.pixel(x, y)).lightness() < 128 for x in range(image.width()))]
        text.append((inked[0] - top, bottom - inked[-1]) if inked else (0, 0))
    return rows, columns, text


def test_a_table_draws_its_grid_with_its_cells_borders_not_collapsed_ones() -> None:
    """Qt finds a collapsed border's neighbouring cells cell by cell each time it lays a table out or paints it (a
    screen of table painted in ~6 ms, ~1.3 without): each cell draws its own 1 px border and the cells overlap by a
    pixel, so two neighbours' borders are one rule (before: border-collapse, no cell spacing)."""
    doc = QTextDocument()
    doc.setHtml(markdown.render(HEAD + ROWS))
    (table,) = _tables(doc)
    table_format = table.format()
    assert not table_format.borderCollapse()
    assert (table_format.border(), table_format.cellSpacing(), table_format.cellPadding()) == (1, -1, 6)


@pytest.mark.parametrize("width", [600, 1100])
@pytest.mark.parametrize("case", ["whole", "first piece", "middle piece"])
def test_the_rules_and_the_text_are_where_collapsed_borders_put_them(case: str, width: int) -> None:
    cut = markdown.TableCut(HEAD, markdown.table_widths(HEAD, ROWS))
    kwargs: dict[str, Any] = {"whole": {}, "first piece": {"table_goes_on": cut},
                              "middle piece": {"table_from": cut, "table_goes_on": cut}}[case]
    text = ROWS if "table_from" in kwargs else HEAD + ROWS
    html = "<p>Before.</p>" + markdown.render(text, **kwargs) + "<p>After.</p>"
    now, before = QTextDocument(), QTextDocument()
    now.setHtml(html)
    before.setHtml(html)
    _collapsed(before)
    shown, collapsed = _image(now, width), _image(before, width)
    assert shown.height() == collapsed.height()  # the text after the table, the pieces' joins (TABLE_SEAM) stay
    rows, columns, inked = _grid(shown)
    rows_then, columns_then, inked_then = _grid(collapsed)
    assert rows == rows_then and len(rows) == 12 + 1 + ("table_from" not in kwargs)  # every rule on the same line
    assert inked == inked_then  # every row's text at the same height
    if case == "whole":  # columns as wide as their cells: every rule where it was
        assert columns == columns_then
    else:  # widths in percent of the width: Qt rounds them from another total, a rule may be a pixel to the side
        assert len(columns) == len(columns_then) == 6
        assert all(abs(x - x_then) <= 1 for x, x_then in zip(columns, columns_then, strict=True)), (columns, columns_then)


def test_a_copied_table_has_a_collapsed_grid_elsewhere() -> None:
    """Copied out of the chat (Ctrl+C on a selection), a table's HTML has a collapsed grid and no negative cell
    spacing, which HTML elsewhere (a browser, an office suite) does not take and draws doubled borders for; the
    copied text is the table's."""
    from PySide6.QtWidgets import QApplication

    from ui.widgets.common import AutoHeightText

    view = AutoHeightText(markdown.render("Before\n\n" + HEAD + ROWS))
    try:
        view.selectAll()
        view.copy()
        data = QApplication.clipboard().mimeData()
        copied = data.html()
        assert 'cellspacing="-1"' not in copied and "<table" in copied
        assert 'cellspacing="0"' in copied and "border-collapse:collapse;" in copied
        assert "test_case_11" in data.text() and data.text() == view.textCursor().selection().toPlainText()
    finally:
        view.deleteLater()


def test_copied_html_leaves_what_has_no_overlapping_table_as_it_is() -> None:
    plain = '<p>cellspacing</p><table border="1" cellspacing="2"><tr><td>x</td></tr></table>'
    assert markdown.copied_html(plain) == plain
    assert markdown.copied_html('<table cellspacing="-1">') == '<table cellspacing="0" style="border-collapse:collapse;">'
