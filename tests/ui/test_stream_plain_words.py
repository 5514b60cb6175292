"""A streaming answer's plain words are appended to the live segment's document, not rendered again.

The live (unfinished) tail of a :class:`~ui.chat.view.stream.MarkdownStream` is rendered with ``setHtml`` only
when the new text may change its Markdown (a line break, a delimiter, a list marker, a web address...); plain
words are inserted at the end of its document. What is shown stays what rendering the whole tail shows.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from fakes.rendered_markdown import assert_shown_as_rendered

from ui import markdown
from ui.chat.view.stream import MarkdownStream
from ui.widgets.common import AutoHeightText


def _count_set_html(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    original = AutoHeightText.setHtml

    def counting(self: AutoHeightText, text: str) -> None:
        if self.parentWidget() is not None:  # a stream's segment, not the fresh rendering compared with
            calls.append(text)
        original(self, text)

    monkeypatch.setattr(AutoHeightText, "setHtml", counting)
    return calls


@pytest.mark.parametrize(("shown", "text", "added"), [
    ("Some words", "Some words and more", " and more"),
    ("Some words ", "Some words  and", " and"),  # runs of spaces show as one
    ("Some words", "Some words and ", " and"),  # spaces at the end wait for the next word
    ("- an item", "- an item, then", ", then"),
    ("# A title", "# A title grows", " grows"),
    ("**bold** then", "**bold** then words", " words"),
    ("Unicode wörds", "Unicode wörds 日本", " 日本"),
])
def test_plain_words_are_appended(shown: str, text: str, added: str) -> None:
    assert markdown.plain_append(shown, text) == added


@pytest.mark.parametrize(("shown", "text"), [
    ("Some words", "Some words *and*"),  # emphasis
    ("Some words", "Some words\n"),  # a line break may end the paragraph or make a heading
    ("Some words\n", "Some words\nmore"),  # a new line may start a block
    ("Some **bold**", "Some **bold** word"),  # the last word shown is formatted
    ("1", "1."),  # an ordered list item
    ("- 2", "- 2) x"),
    ("see www", "see www.example"),  # a bare web address becomes a link
    ("[a]", "[a]: b"),  # a link reference definition
    ("a `code", "a `code` b"),
    ("Some words", "Other words"),  # not a continuation
    ("", "words"),
])
def test_text_that_may_change_the_markdown_is_rendered(shown: str, text: str) -> None:
    assert markdown.plain_append(shown, text) is None


def test_a_streamed_paragraph_is_rendered_once_per_block(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    words = ("the", "robot", "streams", "text", "while", "tools", "run", "and", "memory", "changes")
    rng = random.Random(3)
    paragraphs = [" ".join(rng.choice(words) for _ in range(40)) + "." for _ in range(3)]
    text = "\n\n".join(paragraphs)
    stream = MarkdownStream()
    qtbot.addWidget(stream)
    calls = _count_set_html(monkeypatch)
    pieces = [text[i:i + 4] for i in range(0, len(text), 4)]
    for piece in pieces:
        stream.append(piece)
    # Each paragraph is rendered when it starts (its first word follows a line break) and when a line break
    # arrives; the words in between are inserted.
    assert len(calls) <= 3 * len(paragraphs), f"{len(calls)} renders for {len(pieces)} pieces"
    assert_shown_as_rendered(stream)


def test_the_live_document_keeps_its_blocks_while_words_arrive(qtbot: Any) -> None:
    stream = MarkdownStream()
    qtbot.addWidget(stream)
    stream.append("A first paragraph.\n\nThe second one")
    live = stream.findChildren(AutoHeightText)[-1]
    changes: list[tuple[int, int, int]] = []
    live.document().contentsChange.connect(lambda at, removed, added: changes.append((at, removed, added)))
    stream.append(" goes on")
    stream.append(" and on")
    # setHtml would have removed the whole document and added it again: only the words were added, at its end
    assert [removed for _at, removed, _added in changes] == [0, 0]
    assert live.document().lastBlock().text() == "The second one goes on and on"
    assert live.markdown == stream.text
    assert_shown_as_rendered(stream)


def test_what_is_shown_matches_rendering_after_each_piece(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    text = ("# A title # here\n\nSome *emphasis* and **bold**, `code` then www.example.com and a@b.example words.\n"
            "Foo\n===\n\n- an item 1. two\n- 12\n- 3) three\n\n> quoted words go on\n\n| a | b |\n|---|---|\n"
            "| c d | e f |\n\n[ref]: https://example.com\n\nsee [ref] and 12 34. done\n\n    indented code here\n\n"
            "```python\nx = 1\n```\n\nthe *emphasis never closes and ünïcödé wörds \"quoted\" end")
    calls = _count_set_html(monkeypatch)
    for seed in range(4):
        rng = random.Random(seed)
        stream = MarkdownStream()
        qtbot.addWidget(stream)
        calls.clear()
        pos = pieces = 0
        while pos < len(text):
            size = rng.randint(1, 6)
            stream.append(text[pos:pos + size])
            pos, pieces = pos + size, pieces + 1
            assert_shown_as_rendered(stream)
        assert stream.text == text
        assert 0 < len(calls) < pieces  # some pieces were rendered, some appended
