"""Markdown to Qt rich text (ui/markdown/) and the code blocks' copy link in the views."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QGuiApplication, QTextCursor, QTextDocument

from ui import markdown
from ui.widgets import common
from ui.widgets.common import AutoHeightText, RichLabel, follow_link


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    """QTextDocument lays text out with fonts: it needs the application."""


def _document(html: str) -> QTextDocument:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc


def _blocks(doc: QTextDocument) -> list[Any]:
    blocks = []
    block = doc.begin()
    while block.isValid():
        blocks.append(block)
        block = block.next()
    return blocks


def _anchors(html: str) -> list[str]:
    doc = _document(html)  # alive while its blocks are read
    return [href for block in _blocks(doc) for href in _hrefs(block)]


def _hrefs(block: Any) -> list[str]:
    hrefs = []
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        if fragment.isValid() and fragment.charFormat().anchorHref():
            hrefs.append(fragment.charFormat().anchorHref())
        it += 1
    return hrefs


def test_setext_headings_are_headings() -> None:
    html = markdown.render("Title\n=====\n\nSub title\n---------\n\nText.")
    assert "=====" not in html and "-----" not in html
    assert 'font-size:x-large; font-weight:600;">Title</p>' in html
    assert 'font-size:large; font-weight:600;">Sub title</p>' in html
    assert "<hr>" not in html


def test_atx_headings_and_inline_styles() -> None:
    html = markdown.render("# Title\n\nSome **bold**, *it*, ~~gone~~ and `code`.")
    assert 'font-size:x-large; font-weight:600;">Title</p>' in html
    assert "<b>bold</b>" in html and "<i>it</i>" in html and "<s>gone</s>" in html
    assert "<code" in html and "&#8201;code&#8201;</code>" in html


def test_link_whose_url_holds_parentheses() -> None:
    html = markdown.render("See [x](https://en.wikipedia.org/wiki/Foo_(bar)) now.")
    assert '<a href="https://en.wikipedia.org/wiki/Foo_(bar)"' in html
    assert ">x</a> now." in html  # nothing of the URL is left over as text
    # A bare URL with balanced parentheses keeps them; the sentence's full stop is not part of it.
    bare = markdown.render("Read https://en.wikipedia.org/wiki/Foo_(bar).")
    assert _anchors(bare) == ["https://en.wikipedia.org/wiki/Foo_(bar)"]


def test_task_list_boxes() -> None:
    text = "- [ ] write the tests\n- [x] read the issue\n  - [x] nested done\n- plain item\n"
    html = markdown.render(text)
    assert "[ ]" not in html and "[x]" not in html
    doc = _document(html)
    blocks = _blocks(doc)
    lines = [b.text() for b in blocks]
    assert lines[:4] == [f"{markdown.TASK_OPEN}\xa0write the tests", f"{markdown.TASK_DONE}\xa0read the issue",
                         f"{markdown.TASK_DONE}\xa0nested done", "plain item"]
    # A task list shows the boxes instead of bullets; the nested list is indented further.
    assert "list-style-type:none" in html
    assert blocks[2].textList().format().indent() == 2 > blocks[0].textList().format().indent()


def test_ordered_list_keeps_its_start_number() -> None:
    html = markdown.render("3. a\n4. b\n")
    assert '<ol start="3"' in html
    doc = _document(html)
    blocks = _blocks(doc)
    assert [b.textList().itemText(b) for b in blocks[:2]] == ["3.", "4."]
    assert "start=" not in markdown.render("1. a\n2. b\n")


def test_nested_lists_and_list_spacing() -> None:
    html = markdown.render("- a\n  - b\n    1. c\n- d\n\nafter")
    doc = _document(html)
    indents = {b.text(): b.textList().format().indent() for b in _blocks(doc) if b.textList() is not None}
    assert indents == {"a": 1, "b": 2, "c": 3, "d": 1}
    # Only the last item of the whole list has the gap to what follows (Qt would put a list's
    # bottom margin on the item above its nested list).
    margins = {b.text(): b.blockFormat().bottomMargin() for b in _blocks(doc)}
    assert margins["a"] == margins["b"] == margins["c"] == 3 and margins["d"] == 10


def test_tables_with_alignment() -> None:
    html = markdown.render("| Name | Count |\n|:-----|------:|\n| `a` | 1 |\n| b | 22 |\n")
    assert "<th align=\"left\"" in html and re.search(r'<td align="right"[^>]*>22</td>', html)
    doc = _document(html)
    cursor = QTextCursor(doc)
    cursor.movePosition(QTextCursor.MoveOperation.NextBlock)
    table = cursor.currentTable()
    assert table is not None and (table.rows(), table.columns()) == (3, 2)
    assert table.cellAt(2, 1).firstCursorPosition().block().text() == "22"


def test_blockquote_and_rule() -> None:
    html = markdown.render("> quoted *text*\n> - item\n\n---\n\nafter")
    assert "<i>text</i>" in html and "<hr>" in html
    doc = _document(html)
    assert "quoted text" in doc.toPlainText() and "after" in doc.toPlainText()


def test_raw_html_is_shown_as_text_never_rendered() -> None:
    assert "&lt;script&gt;" in markdown.render("<script>alert(1)</script>")
    html = markdown.render('Hi <b>there</b> <img src="x" onerror="alert(1)">\n\n<div>\nblock\n</div>\n')
    assert "<b>" not in html and "<img" not in html and "<div" not in html
    assert "&lt;b&gt;there&lt;/b&gt;" in html
    assert "&lt;div&gt;" in html


def test_only_http_https_and_mailto_are_links() -> None:
    html = markdown.render(
        "[web](https://a.example) [plain](http://b.example) [mail](mailto:me@c.example) "
        "[js](javascript:alert(1)) [file](file:///etc/passwd) [rel](docs/x.md) <https://d.example> "
        "and www.e.example"
    )
    assert _anchors(html) == ["https://a.example", "http://b.example", "mailto:me@c.example",
                              "https://d.example", "http://www.e.example"]
    assert "javascript" not in html.split("[js]")[0]  # the label stays, the target goes
    assert ">js<" not in html and "js" in _document(html).toPlainText()
    assert markdown.clickable("HTTPS://x.example") and not markdown.clickable("copy:0")


def test_images_are_links_to_them() -> None:
    html = markdown.render("![the *diagram*](https://x.example/d.png) ![local](d.png)")
    assert "<img" not in html
    assert _anchors(html) == ["https://x.example/d.png"]
    assert ">the diagram</a>" in html
    assert "[local]" in html
    # An image inside a link is the link's text (no link inside a link).
    assert _anchors(markdown.render("[![logo](https://x.example/l.png)](https://x.example)")) == ["https://x.example"]


def test_code_blocks_are_highlighted_with_a_language_label_and_a_copy_link() -> None:
    text = "Intro\n\n```python\ndef f():\n    return 1\n```\n\n    indented code\n\n~~~\nplain\n~~~\n"
    html = markdown.render(text, copy=True)
    assert "<span" in html  # pygments highlighted the python block
    assert ">python</span>" in html
    assert _anchors(html) == ["copy:0", "copy:1", "copy:2"]
    assert markdown.code_blocks(text) == ["def f():\n    return 1", "indented code", "plain"]
    assert "copy:" not in markdown.render(text)  # views that do not handle the link get none


def test_an_unclosed_fence_while_streaming_is_still_a_code_block() -> None:
    text = "Para one.\n\n```python\nx = 1\n"
    assert markdown.split_stable(text) == len("Para one.\n\n")
    html = markdown.render(text)
    assert "<pre" in html and "Para one." in html
    assert markdown.code_blocks(text) == ["x = 1"]


def test_split_stable_never_cuts_a_code_block() -> None:
    # A longer fence is closed only by one as long; a fence line with text after it closes nothing.
    text = "````\n```\n\nstill code\n````\nafter"
    assert markdown.split_stable(text) == len(text) - len("after")
    text = "```\ncode\n``` not a close\n\nmore code\n"
    assert markdown.split_stable(text) == 0
    # Fences inside list items and quotes are fences too: their blank lines cut nothing.
    text = "1. item\n\n    ```\n    a\n\n    b\n    ```\n\ntail"
    assert markdown.split_stable(text) == len(text) - len("tail")
    assert markdown.split_stable("1. item\n\n    ```\n    a\n\n    b\n") == len("1. item\n\n")
    assert markdown.code_blocks(text) == ["a\n\nb"]


def test_link_reference_definitions() -> None:
    html = markdown.render("See [the docs][d].\n\n[d]: https://docs.example/x\n")
    assert _anchors(html) == ["https://docs.example/x"]


def test_inline_cache_follows_the_theme(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import theme

    monkeypatch.setattr(theme, "_current", theme.LIGHT)
    light = markdown.inline("a `b` [c](https://c.example)")
    monkeypatch.setattr(theme, "_current", theme.DARK)
    dark = markdown.inline("a `b` [c](https://c.example)")
    assert theme.LIGHT.accent in light and theme.DARK.accent in dark


@pytest.fixture
def clipboard() -> Any:
    board = QGuiApplication.clipboard()
    board.setText("before")
    return board


def test_copy_link_of_autoheighttext_puts_the_code_on_the_clipboard(clipboard: Any, qtbot: Any) -> None:
    view = AutoHeightText()
    qtbot.addWidget(view)
    view.resize(500, 10)
    view.set_markdown("One:\n\n```python\nprint(1)\n```\n\nTwo:\n\n```\nsecond block\n```\n")
    view.show()
    qtbot.waitExposed(view)
    # Click the second "Copy" link where it is drawn.
    doc = view.document()
    target = None
    for block in _blocks(doc):
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().anchorHref() == "copy:1":
                target = fragment.position() + 1
            it += 1
    assert target is not None
    cursor = QTextCursor(doc)
    cursor.setPosition(target)
    point: QPoint = view.cursorRect(cursor).center()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert clipboard.text() == "second block"
    # A view showing plain HTML has no code to copy.
    view.setHtml("<p>plain</p>")
    assert view.markdown is None and not follow_link("copy:0", view.markdown)


def test_copy_link_of_richlabel(clipboard: Any, qtbot: Any) -> None:
    label = RichLabel()
    qtbot.addWidget(label)
    label.set_markdown("```sh\necho hi\n```")
    assert "copy:0" in label.text()
    label.linkActivated.emit("copy:0")
    assert clipboard.text() == "echo hi"


def test_follow_link_opens_only_web_and_mail_links(clipboard: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    class Desktop:
        @staticmethod
        def openUrl(url: Any) -> bool:
            opened.append(url.toString())
            return True

    monkeypatch.setattr(common, "QDesktopServices", Desktop)
    source = "```\ncode\n```"
    assert follow_link("https://x.example/a", source) and follow_link("mailto:a@b.example", source)
    for url in ("javascript:alert(1)", "file:///etc/passwd", "settings:", "copy:7", "copy:x"):
        assert not follow_link(url, source)
    assert opened == ["https://x.example/a", "mailto:a@b.example"]
    assert clipboard.text() == "before"


def test_streamed_markdown_keeps_copy_links_per_segment(clipboard: Any, qtbot: Any) -> None:
    from ui.chat.view.stream import FREEZE_CHARS, MarkdownStream

    para = "A paragraph of words that fills the segment quickly. " * 8
    text = "".join(f"{para}\n\n```python\nblock_{i} = {i}\n```\n\n" for i in range(6)) + "- [x] done\n"
    stream = MarkdownStream()
    qtbot.addWidget(stream)
    for start in range(0, len(text), 7):
        stream.append(text[start:start + 7])
    qtbot.waitUntil(lambda: not stream.pending)  # the freezes, on later turns of the loop
    assert stream.segments > 1 and len(text) > FREEZE_CHARS
    views = stream.findChildren(AutoHeightText)
    codes = [code for view in views for code in markdown.code_blocks(view.markdown or "")]
    assert codes == [f"block_{i} = {i}" for i in range(6)]
    last_code_view = next(v for v in reversed(views) if v.markdown and "block_5" in v.markdown)
    index = markdown.code_blocks(last_code_view.markdown or "").index("block_5 = 5")
    last_code_view.anchorClicked.emit(QUrl(f"copy:{index}"))
    assert clipboard.text() == "block_5 = 5"
