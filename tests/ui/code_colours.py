"""A code block's highlighted HTML (:func:`ui.markdown.highlight`) as what each line shows: its runs of one
style (neighbours of one style merged), to compare with a streamed block's lines
(:func:`ui.chat.view.code_lines.colours`)."""

from __future__ import annotations

import html
import re

from ui import markdown
from ui.chat.view.code_lines import colours

#: A span of a line's highlighted HTML (pygments' spans, never nested) and its text, or text.
_SPAN = re.compile(r'<span style="([^"]*)">([^<]*)</span>|([^<]+)')


def html_colours(line: str) -> list[tuple[str, str]]:
    """A line of highlighted HTML as runs of one style, the text as shown."""
    runs = tuple((m.group(1) or "", html.unescape(m.group(2) if m.group(1) is not None else m.group(3)))
                 for m in _SPAN.finditer(markdown.no_background(line)))
    return colours(runs)  # (neighbours of one style merged, as a drawn line's are)


def highlighted(code: str, language: str | None) -> list[list[tuple[str, str]]]:
    """Each line of ``code`` highlighted at once, as runs of one style."""
    return [html_colours(line) for line in markdown.highlight(code, language).split("\n")]
