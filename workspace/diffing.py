"""The diff engine of change review: exact line diffs, text formats and unified output.

Everything here works on *exact* lines (each keeps its own line ending), so a merge
of accepted hunks reproduces untouched regions byte for byte: CRLF files stay CRLF,
a missing final newline stays missing, and Latin-1 text stays Latin-1.

The line diff is a patience diff: lines unique to both sides anchor the match
(longest increasing subsequence), the gaps between anchors are diffed recursively,
and small anchor-less gaps fall back to :class:`difflib.SequenceMatcher`. A
20,000-line file with 500 changed places diffs in a few tens of milliseconds (see
``bench/bench_diff.py``), where plain ``SequenceMatcher`` without autojunk needs
seconds and with autojunk mangles files with many repeated lines.
"""

from __future__ import annotations

import bisect
import codecs
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Opcode = tuple[str, int, int, int, int]

# -- text formats -------------------------------------------------------------------------------

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL = frozenset(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D, 0x08, 0x1B}
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How a text file is stored: codec, byte-order mark, dominant newline, final newline."""

    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"
    final_newline: bool = True

    @property
    def label(self) -> str:
        nl = {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}[self.newline]
        bom = " with BOM" if self.bom else ""
        return f"{self.encoding}{bom}, {nl}"

    def decode(self, data: bytes) -> str:
        return data[len(self.bom):].decode(self.encoding)

    def encode(self, text: str) -> bytes:
        """Bytes of ``text``; raises :class:`UnicodeEncodeError` if the codec cannot hold it."""
        return self.bom + text.encode(self.encoding)

    def can_encode(self, text: str) -> str | None:
        """None if ``text`` fits this codec, else the first character that does not."""
        try:
            text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            return text[exc.start: exc.end]
        return None

    def with_newlines(self, text: str) -> str:
        """``text`` (any newline style) converted to this file's newline style."""
        if self.newline == "\n":
            return text.replace("\r\n", "\n")
        unified = text.replace("\r\n", "\n")
        return unified.replace("\n", self.newline)


def sniff(data: bytes) -> TextFormat | None:
    """The text format of ``data``, or None when it is binary.

    A BOM names the codec; otherwise UTF-8, then Windows-1252, then Latin-1 (which
    maps every byte). A format is only returned if decoding and encoding again gives
    the same bytes, so an untouched region can never change.
    """
    encoding = None
    bom = b""
    for mark, codec in _BOMS:
        if data.startswith(mark):
            encoding, bom = codec, mark
            break
    head = data[:8192]
    if encoding is None:
        if b"\x00" in head:
            return None
        try:
            data.decode("utf-8")
            encoding = "utf-8"
        except UnicodeDecodeError:
            controls = sum(1 for byte in head if byte in _CONTROL)
            if controls > max(1, len(head) // 100):
                return None
            encoding = "cp1252"
            try:
                data.decode("cp1252")
            except UnicodeDecodeError:
                encoding = "latin-1"
    try:
        text = data[len(bom):].decode(encoding)
    except UnicodeDecodeError:
        return None
    if bom + text.encode(encoding) != data:
        return None
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    newline = "\r\n" if crlf > lf and crlf >= cr else ("\r" if cr > lf and cr > crlf else "\n")
    final = (not text) or text.endswith(("\n", "\r"))
    return TextFormat(encoding=encoding, bom=bom, newline=newline, final_newline=final)


def split_lines(text: str) -> list[str]:
    """Lines with their own endings (only ``\\n``, ``\\r\\n`` and ``\\r`` end a line)."""
    return _LINE.findall(text)


def strip_eol(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


# -- the line diff ------------------------------------------------------------------------------


def diff_lines(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """Opcodes turning ``a`` into ``b`` (``equal``/``replace``/``delete``/``insert``).

    Same shape as :meth:`difflib.SequenceMatcher.get_opcodes`; between two ``equal``
    opcodes there is exactly one other opcode.
    """
    ids: dict[str, int] = {}
    ai = [ids.setdefault(x, len(ids)) for x in a]
    bi = [ids.setdefault(x, len(ids)) for x in b]
    blocks = _matching_blocks(ai, bi)
    return _opcodes(blocks, len(ai), len(bi))


def _matching_blocks(a: list[int], b: list[int]) -> list[tuple[int, int, int]]:
    blocks: list[tuple[int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        # Common prefix and suffix.
        start_a, start_b = alo, blo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        if alo > start_a:
            blocks.append((start_a, start_b, alo - start_a))
        end_a = ahi
        while ahi > alo and bhi > blo and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
        if end_a > ahi:
            blocks.append((ahi, bhi, end_a - ahi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _unique_anchors(a, b, alo, ahi, blo, bhi)
        if anchors:
            pa, pb = alo, blo
            for i, j in anchors:
                stack.append((pa, i, pb, j))
                blocks.append((i, j, 1))
                pa, pb = i + 1, j + 1
            stack.append((pa, ahi, pb, bhi))
            continue
        _fallback(a, b, alo, ahi, blo, bhi, blocks)
    return blocks


def _unique_anchors(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Lines occurring once in each range, longest run in the same order (patience)."""
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    where_b: dict[int, int] = {}
    for j in range(blo, bhi):
        x = b[j]
        if count_b[x] == 1 and count_a.get(x) == 1:
            where_b[x] = j
    if not where_b:
        return []
    pairs = [(i, where_b[x]) for i in range(alo, ahi) if (x := a[i]) in where_b]
    # Longest increasing subsequence of the b positions (patience sorting).
    tails: list[int] = []  # b position at the top of each pile
    tops: list[int] = []  # index into pairs at the top of each pile
    back: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pile = bisect.bisect_left(tails, j)
        if pile:
            back[k] = tops[pile - 1]
        if pile == len(tails):
            tails.append(j)
            tops.append(k)
        else:
            tails[pile] = j
            tops[pile] = k
    out: list[tuple[int, int]] = []
    k = tops[-1]
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    out.reverse()
    return out


def _fallback(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int,
              blocks: list[tuple[int, int, int]]) -> None:
    import difflib

    size = (ahi - alo) * (bhi - blo)
    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=size > 4_000_000)
    for i, j, n in matcher.get_matching_blocks():
        if n:
            blocks.append((alo + i, blo + j, n))


def _opcodes(blocks: list[tuple[int, int, int]], la: int, lb: int) -> list[Opcode]:
    blocks.sort()
    merged: list[list[int]] = []
    for i, j, n in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1][2] += n
        else:
            merged.append([i, j, n])
    ops: list[Opcode] = []
    i = j = 0
    for bi_, bj, n in [*merged, [la, lb, 0]]:
        tag = ""
        if i < bi_ and j < bj:
            tag = "replace"
        elif i < bi_:
            tag = "delete"
        elif j < bj:
            tag = "insert"
        if tag:
            ops.append((tag, i, bi_, j, bj))
        if n:
            ops.append(("equal", bi_, bi_ + n, bj, bj + n))
        i, j = bi_ + n, bj + n
    return ops


def changed_blocks(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """Only the non-equal opcodes: one per place that changed."""
    return [op for op in diff_lines(a, b) if op[0] != "equal"]


# -- intra-line changes ----------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class InlinePair:
    """A changed line paired with the line it replaced, with the changed character spans."""

    old_index: int
    new_index: int
    old_spans: tuple[Span, ...]
    new_spans: tuple[Span, ...]


def inline_spans(old: str, new: str, *, limit: int = 2000) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """Character spans that differ between two versions of a line (word-level tokens)."""
    import difflib

    old, new = strip_eol(old), strip_eol(new)
    if len(old) > limit or len(new) > limit:
        return ((0, len(old)),) if old else (), ((0, len(new)),) if new else ()
    ta = _TOKEN.findall(old)
    tb = _TOKEN.findall(new)
    pa = _offsets(ta)
    pb = _offsets(tb)
    spans_a: list[Span] = []
    spans_b: list[Span] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            _add_span(spans_a, pa[i1], pa[i2])
        if j2 > j1:
            _add_span(spans_b, pb[j1], pb[j2])
    return tuple(spans_a), tuple(spans_b)


def _offsets(tokens: list[str]) -> list[int]:
    out = [0]
    for t in tokens:
        out.append(out[-1] + len(t))
    return out


def _add_span(spans: list[Span], start: int, end: int) -> None:
    if spans and spans[-1][1] == start:
        spans[-1] = (spans[-1][0], end)
    else:
        spans.append((start, end))


def pair_lines(old: Sequence[str], new: Sequence[str], *, cutoff: float = 0.5) -> list[InlinePair]:
    """Pair similar old/new lines of a replaced block (in order) with their inline spans."""
    import difflib

    pairs: list[tuple[int, int]] = []
    if len(old) * len(new) > 2500:
        pairs = [(k, k) for k in range(min(len(old), len(new)))]
    else:
        ranges = [(0, len(old), 0, len(new))]
        while ranges:
            alo, ahi, blo, bhi = ranges.pop()
            best, best_i, best_j = cutoff, -1, -1
            matcher = difflib.SequenceMatcher(autojunk=False)
            for j in range(blo, bhi):
                matcher.set_seq2(strip_eol(new[j]))
                for i in range(alo, ahi):
                    matcher.set_seq1(strip_eol(old[i]))
                    if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best:
                        ratio = matcher.ratio()
                        if ratio > best:
                            best, best_i, best_j = ratio, i, j
            if best_i < 0:
                continue
            pairs.append((best_i, best_j))
            ranges.append((alo, best_i, blo, best_j))
            ranges.append((best_i + 1, ahi, best_j + 1, bhi))
        pairs.sort()
    out = []
    for i, j in pairs:
        sa, sb = inline_spans(old[i], new[j])
        out.append(InlinePair(i, j, sa, sb))
    return out


# -- unified output --------------------------------------------------------------------------------

NO_NEWLINE = "\\ No newline at end of file"


def unified_diff(
    old: Sequence[str],
    new: Sequence[str],
    *,
    old_name: str = "a",
    new_name: str = "b",
    context: int = 3,
    opcodes: Iterable[Opcode] | None = None,
) -> str:
    """A unified diff (git style, ``\\ No newline at end of file`` markers) of two line lists."""
    changes = [op for op in (opcodes if opcodes is not None else diff_lines(old, new)) if op[0] != "equal"]
    if not changes:
        return ""
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    groups: list[list[Opcode]] = []
    for op in changes:
        if groups and op[1] - groups[-1][-1][2] <= 2 * context:
            groups[-1].append(op)
        else:
            groups.append([op])
    for group in groups:
        a1 = max(0, group[0][1] - context)
        b1 = max(0, group[0][3] - context)
        a2 = min(len(old), group[-1][2] + context)
        b2 = min(len(new), group[-1][4] + context)
        out.append(f"@@ -{_range(a1, a2)} +{_range(b1, b2)} @@\n")
        i = a1
        for _, i1, i2, j1, j2 in group:
            for k in range(i, i1):
                _emit(out, " ", old[k])
            for k in range(i1, i2):
                _emit(out, "-", old[k])
            for k in range(j1, j2):
                _emit(out, "+", new[k])
            i = i2
        for k in range(i, a2):
            _emit(out, " ", old[k])
    return "".join(out)


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _emit(out: list[str], prefix: str, line: str) -> None:
    if line.endswith(("\n", "\r")):
        out.append(prefix + line if line.endswith("\n") else prefix + line + "\n")
    else:
        out.append(prefix + line + "\n")
        out.append(NO_NEWLINE + "\n")


# -- three-way merge ---------------------------------------------------------------------------------


def merge3(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> list[str] | None:
    """Both sides' changes to ``base`` combined, or None when they touch the same lines.

    Used to rebase a proposal (``theirs``) on a file that changed on disk (``ours``):
    when the two edited different places, the result has both. Identical changes on
    both sides count once; two insertions at the same place conflict unless identical.
    """
    edits: list[tuple[int, int, int, Sequence[str]]] = []
    for side, other in ((0, ours), (1, theirs)):
        for _, i1, i2, j1, j2 in changed_blocks(base, other):
            edits.append((i1, i2, side, other[j1:j2]))
    edits.sort(key=lambda e: (e[0], e[1], e[2]))
    out: list[str] = []
    pos = 0
    end = -1
    prev: tuple[int, int, int, Sequence[str]] | None = None
    for edit in edits:
        i1, i2, _, lines = edit
        if prev is not None and (prev[0], prev[1]) == (i1, i2) and list(prev[3]) == list(lines):
            continue  # the same change on both sides
        if i1 <= end:
            return None  # both sides touch the same (or adjacent) lines
        out.extend(base[pos:i1])
        out.extend(lines)
        pos = i2
        end = i2
        prev = edit
    out.extend(base[pos:])
    return out
