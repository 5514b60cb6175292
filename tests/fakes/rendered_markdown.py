"""What a streaming answer shows checked against rendering its Markdown afresh: the chat's live segments
(``ui.chat.view.stream.MarkdownStream``) must show what a new view given the same text shows."""

from __future__ import annotations

from ui.chat.view.stream import MarkdownStream
from ui.widgets.common import AutoHeightText


def rendered(source: str, like: AutoHeightText | None = None) -> str:
    """``source`` rendered whole in a fresh view (with ``like``'s font: a view polished by the application's
    style sheet has its own)."""
    fresh = AutoHeightText()
    if like is not None:
        fresh.document().setDefaultFont(like.document().defaultFont())
    fresh.set_markdown(source)
    html = fresh.toHtml()
    fresh.deleteLater()
    return html


def assert_shown_as_rendered(stream: MarkdownStream) -> None:
    """Each segment of ``stream`` shows what rendering its Markdown whole in a fresh view shows, and together they
    hold the stream's text."""
    views = [v for v in stream.findChildren(AutoHeightText) if v.markdown is not None]
    assert views, "nothing shown"
    assert "".join(v.markdown or "" for v in views) == stream.text
    for view in views:
        assert view.toHtml() == rendered(view.markdown or "", view), f"shown differs from rendering {view.markdown!r}"
