"""The rows a diff view shows for one :class:`~workspace.changes.FileChange` (no Qt here).

A row is a small tuple ``(kind, hunk, left, right)``, cheap enough that a 20,000-line file
builds in a few milliseconds:

- ``CTX``: an unchanged line; ``left`` indexes the base's lines, ``right`` the proposal's;
- ``DEL``: a removed line (``left``); ``ADD``: an added line (``right``, an index into the
  proposal, or into ``hunk.edited_lines`` when the user edited the hunk);
- ``PAIR`` (side by side only): ``left`` removed and/or ``right`` added on one row (-1: none);
- ``HUNK``: a hunk's header (the decision buttons); ``INFO``: a rename, binary or empty-file
  note under its header;
- ``GAP``: unchanged lines left out (``left`` is the gap's number in :attr:`DiffRows.gaps`).

Rows are built once per (file, layout, context) and rebuilt when a decision changes what
a hunk shows (an edit), when a gap is expanded, or when the layout switches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspace.changes import FileChange, Hunk

CTX, DEL, ADD, PAIR, HUNK, INFO, GAP = range(7)
KIND_NAMES = ("ctx", "del", "add", "pair", "hunk", "info", "gap")

Row = tuple[int, int, int, int]

#: Unchanged lines shown around each hunk (when the whole file is not shown).
CONTEXT = 3


@dataclass(slots=True)
class Gap:
    """Unchanged lines not shown: base lines ``[old_start, old_end)`` = proposal lines from ``new_start``."""

    old_start: int
    old_end: int
    new_start: int
    #: The base line where the unchanged region around the gap starts (what ``expanded`` holds).
    region: int = 0

    @property
    def count(self) -> int:
        return self.old_end - self.old_start


@dataclass(slots=True)
class DiffRows:
    """The rows of one file in one layout, and where each hunk's header is."""

    rows: list[Row]
    split: bool
    gaps: list[Gap] = field(default_factory=list)
    #: Row of each hunk's header, by hunk index in ``FileChange.hunks``.
    header_rows: dict[int, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def hunk_span(self, hunk_index: int) -> tuple[int, int]:
        """Rows ``[first, last)`` of a hunk: its header and its changed lines."""
        start = self.header_rows[hunk_index]
        end = start + 1
        rows = self.rows
        while end < len(rows) and rows[end][1] == hunk_index and rows[end][0] not in (HUNK, CTX, GAP):
            end += 1
        return start, end


def hunk_final_lines(hunk: Hunk) -> list[str]:
    return hunk.edited_lines if hunk.edited_lines is not None else hunk.new_lines


def build_rows(fc: FileChange, *, split: bool = False, context: int = CONTEXT, whole_file: bool = False,
               expanded: frozenset[int] | set[int] = frozenset()) -> DiffRows:
    """The rows of ``fc``: hunks with ``context`` unchanged lines around them (all with ``whole_file``).

    ``expanded`` holds the ``region`` of gaps the user opened.
    """
    rows: list[Row] = []
    append = rows.append
    out = DiffRows(rows=rows, split=split)
    old_total = len(fc.old_lines) if fc.old_lines is not None else 0
    line_hunks = [h for h in fc.hunks if h.kind == "lines"]
    first_line_hunk = line_hunks[0].index if line_hunks else -1

    def equal(o1: int, o2: int, n1: int, *, first: bool, last: bool) -> None:
        count = o2 - o1
        if count <= 0:
            return
        head = 0 if first else context
        tail = 0 if last else context
        if whole_file or o1 in expanded or count <= head + tail + 2:
            for k in range(count):
                append((CTX, -1, o1 + k, n1 + k))
            return
        for k in range(head):
            append((CTX, -1, o1 + k, n1 + k))
        gap_start = o1 + head
        gap_end = o2 - tail
        out.gaps.append(Gap(gap_start, gap_end, n1 + head, o1))
        append((GAP, -1, len(out.gaps) - 1, -1))
        for k in range(tail):
            o = gap_end + k
            append((CTX, -1, o, n1 + (o - o1)))

    prev_old = prev_new = 0
    for h in fc.hunks:
        hi = h.index
        if h.kind != "lines":
            out.header_rows[hi] = len(rows)
            append((HUNK, hi, -1, -1))
            append((INFO, hi, -1, -1))
            continue
        equal(prev_old, h.old_start, prev_new, first=hi == first_line_hunk, last=False)
        out.header_rows[hi] = len(rows)
        append((HUNK, hi, -1, -1))
        final = hunk_final_lines(h)
        if split:
            _pair_rows(h, final, append)
        else:
            for i in range(h.old_start, h.old_end):
                append((DEL, hi, i, -1))
            if h.edited_lines is not None:
                for k in range(len(final)):
                    append((ADD, hi, -1, k))
            else:
                for j in range(h.new_start, h.new_end):
                    append((ADD, hi, -1, j))
        prev_old, prev_new = h.old_end, h.new_end
    if fc.old_lines is not None:
        equal(prev_old, old_total, prev_new, first=not line_hunks, last=True)
    return out


def _pair_rows(h: Hunk, final: list[str], add: Callable[[Row], None]) -> None:
    """Side by side: similar old/new lines on the same row, the rest aligned in order."""
    hi = h.index
    edited = h.edited_lines is not None
    base_new = 0 if edited else h.new_start
    ia = ib = 0
    pairs = [(p.old_index, p.new_index) for p in h.inline()]
    for pa, pb in [*pairs, (len(h.old_lines), len(final))]:
        for a, b in zip_longest(range(ia, pa), range(ib, pb)):
            add((PAIR, hi, -1 if a is None else h.old_start + a, -1 if b is None else base_new + b))
        if pa < len(h.old_lines) and pb < len(final):
            add((PAIR, hi, h.old_start + pa, base_new + pb))
        ia, ib = pa + 1, pb + 1


def find_row(rows: DiffRows, *, old_line: int | None = None, new_line: int | None = None) -> int:
    """The row showing base line ``old_line`` (or proposal line ``new_line``), or the nearest before it."""
    best = 0
    for n, (kind, _h, left, right) in enumerate(rows.rows):
        if kind in (HUNK, INFO, GAP):
            continue
        if old_line is not None and kind != ADD and 0 <= left <= old_line:
            best = n
            if left == old_line:
                return n
        if new_line is not None and kind != DEL and 0 <= right <= new_line:
            best = n
            if right == new_line:
                return n
    return best


__all__ = ["ADD", "CTX", "DEL", "GAP", "HUNK", "INFO", "KIND_NAMES", "PAIR", "DiffRows", "Gap", "Row",
           "build_rows", "find_row", "hunk_final_lines"]
