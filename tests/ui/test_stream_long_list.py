"""A long list streamed with no blank line in it is frozen between its items, not rendered whole on every flush.

No block of such a list counts as finished (:func:`ui.markdown.split_stable` finds none), so the live segment
held the whole list and each flush rendered all of it again: a 50 KB list streamed in flushes of the bridge
rendered up to 50,000 characters a turn. Now the finished items (those before the open one) are frozen into a
segment of their own once they are long enough, and the list goes on in the next segment, numbered on
(``start=``), nested lists kept; the pieces show what the whole list shows, and copying gives the Markdown.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.frame_clock import FrameClock, stream_in_flushes
from fakes.rendered_markdown import assert_shown_as_rendered, shown_blocks

from ui import markdown
from ui.chat.view.stream import MAX_RENDER_CHARS
from ui.widgets.common import AutoHeightText


def ordered(size: int, *, same_number: bool = False) -> str:
    """A paragraph, then an ordered list with nested bullets and task items (no blank line), ``size`` characters or
    more; ``same_number``: every item written "1." (the list numbers them)."""
    lines = ["Here is the **checklist**:\n"]
    i = 0
    while sum(map(len, lines)) < size:
        lines.append(f"{1 if same_number else i + 1}. Check *step {i}* of the `deploy` run and note what changed\n")
        if i % 5 == 4:
            pad = " " * len(f"{1 if same_number else i + 1}. ")  # nested under the item's text
            lines.append(f"{pad}- [ ] the logs of step {i} are kept\n{pad}- [x] its exit status is 0\n")
        i += 1
    return "".join(lines) + "And the last words."


def bullets(size: int) -> str:
    """A bulleted list with a nested ordered list now and then, ``size`` characters or more."""
    lines: list[str] = []
    i = 0
    while sum(map(len, lines)) < size:
        lines.append(f"- item {i}: **result** with `value_{i}` and a few more words\n")
        if i % 7 == 6:
            lines.append("  1. first sub-step\n  2. second sub-step\n")
        i += 1
    return "".join(lines)


def whole_blocks(text: str, like: AutoHeightText) -> list[tuple[object, ...]]:
    view = AutoHeightText()
    view.document().setDefaultFont(like.document().defaultFont())
    view.set_markdown(text)
    blocks = shown_blocks([view.document()])
    view.deleteLater()
    return blocks


@pytest.mark.parametrize("text", [ordered(50_000), ordered(20_000, same_number=True), bullets(30_000)],
                         ids=["ordered", "all-numbered-1", "bullets"])
def test_a_long_list_renders_a_bounded_part_a_turn_and_shows_as_whole(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    clock = FrameClock()
    stream, per_turn = stream_in_flushes(qtbot, monkeypatch, clock, text)
    # A turn renders the budget and what the freeze of its pieces leaves (before: the whole list, every turn).
    assert max(per_turn) <= 2 * MAX_RENDER_CHARS, per_turn
    views = [v for v in stream.findChildren(AutoHeightText) if v.markdown is not None]
    assert len(views) > 5, "the list was not cut in segments"
    assert "".join(v.markdown or "" for v in views) == stream.markdown_source() == text  # the Markdown to copy
    assert_shown_as_rendered(stream)
    # The pieces show the whole list's items, numbers, nesting and gaps, block for block.
    assert shown_blocks([v.document() for v in views]) == whole_blocks(text, views[0])


def test_list_cuts_are_between_items_of_one_list() -> None:
    text = "Intro:\n1. a\n2. b\n   - x\n   - y\n3. c\n- other list\n- d\nText\n- e\n4. f"
    cuts = markdown.list_cuts(text)
    # "2." and "3." go on from the item before; "- other list" starts a list and "- d" goes on from it; "- e" comes
    # after a paragraph's line (it is that item's lazy line); "4. f" is not finished.
    assert [(text[c.at:c.at + 2], c.number) for c in cuts] == [("2.", 2), ("3.", 3), ("- ", None)]
    assert text[cuts[-1].at:].startswith("- d")
    assert markdown.list_cuts("1. a\n1. b\n1. c\n", first=12) == [markdown.ListCut(5, 13), markdown.ListCut(10, 14)]
    assert markdown.list_cuts("- a\n```\n- b\n") == []  # a fence: its lines are not Markdown
    assert markdown.list_cuts("- a\n- - -\n- b\n") == []  # a rule ends the list
