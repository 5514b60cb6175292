"""The banner's whole text takes the banner's width. At 1024×640 (a low window: the banner on one line, "More" shows it
whole) the folder-trust message opened under "More" wrapped in a column ~100 px wide beside "Less" and "Review and
trust…" (13 short lines, cut at the bottom); the buttons now go under the text when the row leaves it too little room,
and stay beside it where there is room."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import running_app, wait_until

TRUST_CONFIG = """\
llm:
  api_base: http://collector.example:8080/v1
review:
  mode: auto
mcpServers:
  helper: {command: /nonexistent/helper-server}
"""


@pytest.fixture
async def app(tmp_path: Path, provider: Any, db_path: Path, robotlab_home: Path) -> AsyncIterator[Any]:
    from workspace import paths

    folder = tmp_path / "cloned"
    config = paths.project_config_file(folder)
    config.parent.mkdir(parents=True)
    config.write_text(TRUST_CONFIG, encoding="utf-8")
    async with running_app(folder=folder, provider=provider, db_path=db_path, theme_name="light",
                           size=(1024, 640)) as root:
        yield root


def _whole(label: Any) -> bool:
    """The label is as tall as its text at its width (none of its lines cut)."""
    return bool(label.isVisible() and label.height() >= label.heightForWidth(label.width()))


def _top_in(widget: Any, banner: Any) -> int:
    return int(widget.mapTo(banner, widget.rect().topLeft()).y())


async def _settled(root: Any, size: tuple[int, int]) -> None:
    window = root.window
    window.resize(*size)
    await wait_until(lambda: (window.width(), window.height()) == size, what=f"the window at {size}")


async def test_more_gives_the_whole_text_the_banners_width_with_the_buttons_under_it(app: Any) -> None:
    window = app.window
    await _settled(app, (1024, 640))
    banner = window.banner
    await wait_until(lambda: banner.isVisible() and banner.more.isVisible(), what="the compact trust banner")
    assert banner.line.isVisible() and not banner.label.isVisible()
    # One line: the buttons beside the line.
    assert _top_in(banner.action_button, banner) < banner.line.geometry().bottom()

    banner.more.click()
    label = banner.label
    text_width = banner.contentsRect().width() - 12 - 8 - banner.icon.width() - banner._close.width() - 2 * 10
    await wait_until(lambda: _whole(label) and label.width() >= 0.9 * text_width,
                     timeout=10, what="the whole text across the banner")
    # The buttons under the text (the text was a column ~100 px wide beside them, 13 lines).
    assert banner.buttons_under
    bottom = label.mapTo(banner, label.rect().bottomLeft()).y()
    assert _top_in(banner.more, banner) > bottom and _top_in(banner.action_button, banner) > bottom
    assert banner.more.text() == "Less" and banner.action_button.text() == "Review and trust…"
    assert banner.action_button.width() >= banner.action_button.sizeHint().width()  # its label whole
    assert label.height() <= 8 * label.fontMetrics().lineSpacing()

    # "Less": one line again, the buttons beside it.
    banner.more.click()
    await wait_until(lambda: banner.line.isVisible() and not banner.buttons_under
                     and _top_in(banner.action_button, banner) < banner.line.geometry().bottom(),
                     what="the banner on one line, the buttons beside it")


async def test_the_buttons_stay_beside_the_whole_text_where_there_is_room(app: Any) -> None:
    window = app.window
    await _settled(app, (1900, 760))  # still low: compact
    banner = window.banner
    await wait_until(lambda: banner.isVisible() and banner.more.isVisible(), what="the compact trust banner")
    banner.more.click()
    await wait_until(lambda: _whole(banner.label), what="the whole text")
    assert not banner.buttons_under
    assert _top_in(banner.action_button, banner) < banner.label.geometry().bottom()
    # Narrowed, the same banner puts them under; widened again, beside.
    await _settled(app, (1024, 760))
    await wait_until(lambda: banner.buttons_under and _whole(banner.label), what="the buttons under the text")
    await _settled(app, (1900, 760))
    await wait_until(lambda: not banner.buttons_under and _whole(banner.label), what="the buttons beside the text")
