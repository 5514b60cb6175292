"""A streaming answer's live segment renders only what changed: the finished blocks it shows stay in its document,
and only the blocks after them (the open one, those finished since) are rendered and replaced.

Text with Markdown in every few words (a delimiter, a code span) is never plain words (see
test_stream_plain_words.py): before, each new piece rendered the whole live segment (up to its freeze, over a
thousand characters) again with ``setHtml``. What is shown stays what rendering the segment's whole Markdown shows,
whatever the blocks before and after the cut.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.rendered_markdown import assert_shown_as_rendered, rendered

from ui import markdown
from ui.chat.view.stream import MarkdownStream
from ui.widgets.common import AutoHeightText

#: Blocks that end the first part, and blocks that start the next one (some of which render apart only whole:
#: a list going on, an indented line, a table or a rule).
BEFORE = ["Some **bold** and `code` here.\n\n", "# A title\n\n", "```py\nx = 1\n```\n\n", "```py\nx = 1\n```\n",
          "- a\n- b\n\n", "1. a\n2. b\n\n", "> a quote\n\n", "| a |\n|---|\n| 1 |\n\n", "---\n\n", "- a\n  - b\n\n",
          "A line\n"]
AFTER = ["Then **more** words", "# Title *two*\n\nmore", "- an item", "2. two", "```js\ny\n```\n\nz", "  indented",
         "---\n\nx", "> q", "| a |\n|---|\n| 1 |", "[ref]: https://example.com\n\nsee [ref]",
         "p\n\n# H\n\n```py\nx\n```\n\n- a\n- b\n\n> q\n\n| a |\n|---|\n| 1 |\n\nend *x*"]


@pytest.mark.parametrize("before", BEFORE)
def test_a_segment_grown_a_character_at_a_time_shows_its_whole_rendering(qtbot: Any, before: str) -> None:
    for after in AFTER:
        text = "Intro words.\n\n" + before + after
        view = AutoHeightText()
        qtbot.addWidget(view)
        for cut in range(1, len(text) + 1):
            part = text[:cut]
            view.grow_markdown(part, markdown.split_stable(part))
            assert view.markdown == part
            assert view.toHtml() == rendered(part), f"{part!r} shows otherwise than rendered whole"


def test_new_paragraphs_leave_the_finished_ones_in_the_document(qtbot: Any) -> None:
    stream = MarkdownStream()
    qtbot.addWidget(stream)
    words = ("the", "robot", "streams", "**text**", "while", "`tools`", "run")
    paragraph = " ".join(words * 4) + "."
    stream.append(paragraph + "\n\n" + paragraph[:40])
    live = stream.findChildren(AutoHeightText)[-1]
    first_end = live.document().firstBlock().length()  # the first paragraph's text and its block's end
    changes: list[tuple[int, int, int]] = []
    live.document().contentsChange.connect(lambda at, removed, added: changes.append((at, removed, added)))
    stream.append(paragraph[40:] + "\n\n" + paragraph + "\n\n" + paragraph[:30])  # Markdown in it: not plain words
    stream.append(paragraph[30:60])
    assert changes, "nothing changed in the live segment's document"
    # setHtml removes the whole document and adds it again (a change at 0): only what follows the first
    # paragraph changed.
    assert min(at for at, _removed, _added in changes) >= first_end - 1, changes
    assert live.markdown == stream.text
    assert_shown_as_rendered(stream)


def test_a_freeze_goes_in_a_turn_of_its_own(qtbot: Any) -> None:
    """The piece that finishes enough blocks to freeze is rendered in the live segment; the freeze (the segment
    finished, a new one made and rendered) waits for a later turn of the event loop, not adding its work to the
    turn that renders the new text."""
    from ui.chat.view.stream import FREEZE_CHARS

    paragraph = " ".join(("the", "robot", "**streams**", "text", "while", "`tools`", "run") * 5) + "."
    stream = MarkdownStream()
    qtbot.addWidget(stream)
    stream.append(paragraph + "\n\n")
    segments = stream.segments
    text = paragraph + "\n\n"
    while len(text) < FREEZE_CHARS:
        text += paragraph + "\n\n"
    stream.append(text[len(paragraph) + 2:] + "And the open one")
    assert stream.segments == segments, "the piece's turn froze the segment too"
    live = stream.findChildren(AutoHeightText)[-1]
    assert live.markdown == stream.text  # the piece is shown
    qtbot.waitUntil(lambda: not stream.pending)  # the freeze's turn
    assert stream.segments == segments + 1
    assert_shown_as_rendered(stream)
