"""The full-size review's footer: the key hints on one line when the window has the room (the status, empty,
takes none of it), and the whole footer inside the window at 1024×640."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.fakes.app_window import wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("size", [(1920, 1040), (1024, 600)])
async def test_the_key_hints_keep_one_line_and_the_footer_shows_whole(desktop: Any, size: tuple[int, int]) -> None:
    from PySide6.QtCore import QPoint

    pane = desktop.window.docks.changes_pane
    review = pane.open_review()
    review.resize(*size)
    await wait_until(lambda: review.width() == size[0], what="the review window's width")
    await asyncio.sleep(0.05)
    hints = review.hints
    line = hints.fontMetrics().lineSpacing()
    whole = hints.fontMetrics().horizontalAdvance(hints.text())
    # The empty status takes none of the row: the hints have it (on one line when it is that wide).
    assert not review.status.isVisible()
    assert hints.width() >= min(whole, review.width() - 40), f"the hints have {hints.width()} px of {review.width()}"
    if hints.width() >= whole:
        assert hints.heightForWidth(hints.width()) < 2 * line
    bottom = hints.mapTo(review, QPoint(0, hints.height())).y()
    assert bottom <= review.height(), f"the hints end at y {bottom} of {review.height()}"
    review.status.setText("Applied 2 hunks to app.py as one change")
    await asyncio.sleep(0.05)
    assert review.status.isVisible() and review.status.width() > 0
    assert hints.height() >= hints.heightForWidth(hints.width()) and hints.mapTo(review, QPoint(0, hints.height())).y() <= review.height()
    review.close()
