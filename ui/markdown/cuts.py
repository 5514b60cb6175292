"""Where a growing Markdown text can be cut: the end of its last finished block (:func:`split_stable`), a long list
between its items (:func:`list_cuts`), a long table between its rows (:func:`table_cuts`, :func:`table_widths`),
and words that add no Markdown to a paragraph (:func:`plain_append`). Plain text scanning, no parser: a streaming
view freezes what is finished and re-renders only the tail (:mod:`ui.chat.view.stream`)."""

from __future__ import annotations

import re
from typing import NamedTuple

#: A code fence, also inside quotes and list items (indented, after ``>``).
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")


def split_stable(text: str) -> int:
    """Index just past the last complete block of ``text`` (0 when none is complete).

    A block is complete when a blank line follows it outside a code fence, or when its
    closing fence (the same character, at least as many, nothing after it) has arrived. The
    rest (the tail) may still change as text streams in.
    """
    pos = 0
    stable = 0
    in_fence: str | None = None
    prev_blank = True
    for line in text.splitlines(keepends=True):
        end = pos + len(line)
        complete_line = line.endswith("\n")
        stripped = line.strip()
        m = _FENCE.match(line)
        if in_fence is not None:
            if (complete_line and m and m.group(1)[0] == in_fence[0] and len(m.group(1)) >= len(in_fence)
                    and not line[m.end():].strip()):
                in_fence = None
                stable = end
        elif m and complete_line:
            in_fence = m.group(1)
            if not prev_blank:
                stable = pos  # the paragraph above the fence is finished
        elif complete_line and not stripped:
            stable = end
        prev_blank = not stripped
        pos = end
    return stable


#: A list item's line at the left margin: its bullet, or its number and the delimiter after it.
_ITEM_LINE = re.compile(r"(?:([-+*])|(\d{1,9})([.)]))(?:[ \t]|$)")
#: A thematic break ("- - -", "* * *"), which an item's line would otherwise match.
_RULE_LINE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")


def _lazy(line: str) -> bool:
    """Whether a stripped line would go on a paragraph (not start a block: an item, a rule, a heading, a quote,
    a table's row, a fence)."""
    return (_ITEM_LINE.match(line) is None and _RULE_LINE.match(line) is None and line[:1] not in "#>|`~"
            and line[:1].isalnum())


class ListCut(NamedTuple):
    """Where a text may be cut inside a list: ``at``, the start of an item's line, the items before it finished."""

    at: int
    #: The item's number in its (ordered) list, counting the items before it; None in a bulleted list.
    number: int | None


def list_cuts(text: str, first: int | None = None) -> list[ListCut]:
    """Where ``text`` (a tail after :func:`split_stable`'s finished blocks: no blank line in it, outside a code
    fence) may be cut between the items of a list: the start of each line at the left margin that begins an item
    of the same list as the item before it (the lines in between in that item: indented as its text, or a
    paragraph's lazy lines). Rendered apart, the part before such a cut ends with the finished items (a list that
    goes on: see :func:`render_part`'s ``list_goes_on``) and the part after it starts the list's next item
    (``start``: its number). ``first``: ``text`` starts with a list that goes on from one cut before it, and its
    first item is number ``first``. The scan stops at the first line that may be read otherwise (a fence, a
    block less indented than the item's text, a line at the margin that is no item of the list): the cuts
    before it hold whatever follows."""
    cuts: list[ListCut] = []
    kind: str | None = None  # the marker of the list the lines are in: its bullet, or its number's delimiter
    number = 0  # the number of the next item of an ordered list
    content = 0  # where the last item's text starts
    paragraph = False  # the line before is a paragraph's (an item may interrupt one only as a bullet or "1.")
    pos = 0
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n") or not line.strip() or _FENCE.match(line):
            break
        m = None if _RULE_LINE.match(line) else _ITEM_LINE.match(line)
        if m is None:
            if kind is not None and (line[0] not in " \t" or (len(line) - len(line.lstrip(" ")) < content
                                                              and not _lazy(line.strip()))):
                break  # the list may end here, or go on: not told without parsing
            paragraph = paragraph or (kind is None and line[0] not in " \t")
            pos += len(line)
            continue
        marker = m.group(1) or m.group(3)
        mark = m.group(1) or m.group(2) + m.group(3)
        after = line[len(mark):].rstrip("\n")
        spaces = len(after) - len(after.lstrip(" "))
        content = len(mark) + (spaces if 0 < spaces <= 4 and after.strip() else 1)
        if marker == kind:
            cuts.append(ListCut(pos, number if m.group(2) is not None else None))
            number += 1
        elif (kind is None and not paragraph) or (m.group(2) in (None, "1") and after.strip()):
            kind = marker  # a list starts
            number = int(m.group(2)) + 1 if m.group(2) is not None else 0
            if pos == 0 and first is not None and m.group(2) is not None:
                number = first + 1
        else:
            break
        paragraph = False
        pos += len(line)
    return cuts


#: A table's delimiter line: a cell of dashes (aligned by colons) per column, between pipes.
_DELIMITER_LINE = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
#: A pipe that parts two cells (not escaped).
_CELL_PIPE = re.compile(r"(?<!\\)\|")


class TableCut(NamedTuple):
    """A table cut between its rows (:func:`table_cuts`): its header and delimiter lines (each piece after the first
    renders its rows under them, not showing them) and its columns' widths in percent (every piece has them)."""

    head: str
    widths: tuple[int, ...]


def _cells(line: str) -> list[str]:
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in _CELL_PIPE.split(row)]


def table_cuts(text: str, head: str | None = None) -> tuple[str, list[int]] | None:
    """Where ``text`` (a tail after :func:`split_stable`'s finished blocks: no blank line in it) may be cut between the
    rows of the table it starts with: its head (the header and delimiter lines) and the start of each finished row
    line after them, or None when it starts with no table. ``head``: ``text`` goes on with the rows of a table cut
    before (no header in it). The rows end at the first line that may be read otherwise (no pipe in it, or a
    block's start: a quote, a fence, a heading, a list item, a rule)."""
    lines = text.splitlines(keepends=True)
    pos = 0
    if head is None:
        if (len(lines) < 2 or not lines[1].endswith("\n") or _DELIMITER_LINE.match(lines[1].rstrip("\n")) is None
                or "|" not in lines[0] + lines[1] or len(_cells(lines[0])) != len(_cells(lines[1]))):
            return None
        head = lines[0] + lines[1]
        pos = len(head)
        lines = lines[2:]
    cuts: list[int] = []
    for line in lines:
        stripped = line.strip()
        if (not line.endswith("\n") or "|" not in line or stripped[:1] in "#>`~" or _RULE_LINE.match(line)
                or _ITEM_LINE.match(stripped) or line.startswith("    ")):
            break
        if pos:
            cuts.append(pos)
        pos += len(line)
    return head, cuts


def _shown_length(cell: str) -> int:
    """About how many characters a cell's Markdown shows (no link targets, no emphasis or code marks)."""
    return len(_LINK_TARGET.sub("", cell)) - sum(cell.count(c) for c in "*`[]~")


#: A link's target after its text: ``](url)``.
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def table_widths(head: str, rows: str) -> tuple[int, ...]:
    """Percent widths for a table's columns from its header and first rows (each column's longest cell, within
    limits, so a long note does not squeeze the numbers): a table cut in pieces lays every piece out with them."""
    header = head.splitlines()[0]
    longest = [max(3, min(_shown_length(cell), 60)) for cell in _cells(header)]
    for line in rows.splitlines()[:50]:
        for i, cell in enumerate(_cells(line)[:len(longest)]):
            longest[i] = max(longest[i], min(_shown_length(cell), 60))
    total = sum(longest)
    return tuple(max(1, 100 * n // total) for n in longest)


#: Characters that never start, end or change Markdown syntax in the middle of a line (with letters and digits).
_PLAIN = frozenset(" .,;?'\"")
#: A line that is (or is inside) an ordered list item's marker: "1." or "- 2)" at its start.
_ORDERED_START = re.compile(r"[ >]*(?:(?:[-+*]|\d{1,9}[.)])(?: +|$))*\d{1,9}[.)](?: |$)")


def _plain(text: str) -> bool:
    return all(c.isalnum() or c in _PLAIN for c in text)


def plain_append(shown: str, text: str) -> str | None:
    """What to add, as plain text, at the end of ``shown``'s rendering so that it shows ``text``'s, or None
    when it cannot be told without rendering ``text``.

    ``text`` is ``shown`` plus letters, digits, spaces and ``.,;?'"`` on the last line, whose last word so
    far is plain too (no delimiter, link or code just before): that neither opens nor closes a block or
    an inline span, so the added words take the format of the text before them. A streaming view appends
    them to its document instead of laying the whole tail out again. Spaces at the end are held back and
    runs of spaces are one, as rich text shows them.
    """
    if not text.startswith(shown) or not _plain(delta := text[len(shown):]):
        return None
    head = shown.rstrip(" ")
    line = head[head.rfind("\n") + 1:]
    if not line.strip() or not _plain(line[line.rfind(" ") + 1:]):
        return None
    new_line = text[text.rfind("\n") + 1:]
    if "www." in new_line.lower() or "]:" in new_line or _ORDERED_START.match(new_line):
        return None  # a bare web address becomes a link; "[a]: b" a link reference; "1." a list item
    return re.sub(" {2,}", " ", text.rstrip(" ")[len(head):]) if delta else ""
