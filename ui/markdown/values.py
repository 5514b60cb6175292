"""Tool results and other values for people: pretty, highlighted JSON with every string that spans lines shown as
text under its key (:mod:`workspace.readable`), whole (:func:`readable_html`, :func:`value_html`) or in pieces a view
adds a few at a time (:func:`value_pieces`)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from ui import theme
from ui.markdown import _esc, highlight

if TYPE_CHECKING:
    from workspace.readable import JsonPieces, TextBlock

def to_json_text(value: Any, *, indent: int = 2) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def json_html(value: Any, *, max_chars: int = 60_000) -> str:
    """Pretty, highlighted JSON as a ``<pre>`` block (long values cut with a note)."""
    text = to_json_text(value)
    note = ""
    if len(text) > max_chars:
        note = f"\n… {len(text) - max_chars:,} more characters (open Raw to see everything)"
        text = text[:max_chars]
    return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
            f"{highlight(text, 'json')}{_esc(note)}</pre>")


class Piece(NamedTuple):
    """A part of a value's rich text (:func:`value_pieces`): a block of the document (``goes_on`` False: a new
    element after the ones before) or more lines of the element before (``goes_on``: its text goes on, in the
    same element: the ``<pre>`` before, or the frame of a text under a key); ``bottom``: the margin under the
    element once its last piece is in (its lines' margins are 0)."""

    html: str
    goes_on: bool = False
    bottom: int = 0
    #: It starts with a label's paragraph (where a text under a key comes from).
    label: bool = False
    #: Lines of text it holds.
    lines: int = 0
    #: A text under a key, as plain lines (None: none): shown after ``html`` (its label) in a frame with the bar
    #: (:class:`~ui.widgets.common.PieceFeeder`), not in a table's cell, so that its pieces (``goes_on``) are laid
    #: out alone: Qt lays a table out whole on each change of its cell.
    text: str | None = None


def _chunks(text: str, lines: int | None) -> list[str]:
    """``text`` cut after every ``lines`` lines (None: whole), each to be a ``<pre>`` whose lines go on from the
    one before's (:func:`_chunked`)."""
    return [chunk for chunk, _ in _chunked(iter(text.split("\n")), lines)]


def _chunked(rows: Iterator[str], lines: int | None) -> Iterator[tuple[str, bool]]:
    """The text of ``rows`` (its lines) cut after every ``lines`` lines (None: whole), each chunk with whether it is
    the last, made as the rows come (two rows read past a chunk): each is to be a ``<pre>`` whose lines go on from
    the one before's: Qt drops a newline just inside a ``<pre>``'s either end, so a chunk starting or (but the last)
    ending with an empty line has one more there, and the whole's last newline (dropped) makes no chunk."""
    if lines is None:
        yield "\n".join(rows), True
        return
    ahead: list[str] = []
    first = True
    while True:
        ahead += itertools.islice(rows, lines + 2 - len(ahead))
        group, ahead = ahead[:lines], ahead[lines:]
        last = not ahead or ahead == [""]  # (rows were read to two past the group: none are left)
        chunk = "\n".join(group)
        yield ("\n" if not first and chunk.startswith("\n") else "") + chunk + (
            "\n" if not last and chunk.endswith("\n") else ""), last
        if last:
            return
        first = False


def _rows_within(fragments: Iterator[str], budget: int, length: list[int]) -> Iterator[str]:
    """The lines of the text ``fragments`` make, cut after its first ``budget`` characters; ``length[0]``: the
    characters of the fragments read, past the budget too once the last line is read: the first fragment past it
    is read (to know whether the text is cut), the rest are left in ``fragments``."""
    row: list[str] = []
    kept = 0
    for fragment in fragments:
        length[0] += len(fragment)
        part = fragment[: budget - kept]
        kept += len(part)
        if "\n" in part:
            *ends, rest = part.split("\n")
            for end in ends:
                row.append(end)
                yield "".join(row)
                row = []
            part = rest
        row.append(part)
        if kept >= budget and (len(part) < len(fragment) or _counted(fragments, length, 1)):
            break
    yield "".join(row)


def _counted(fragments: Iterator[str], length: list[int], most: int) -> bool:
    """Whether ``fragments`` had more characters, ``most`` at least (the last fragment whole) counted in
    ``length[0]``."""
    counted = 0
    for fragment in fragments:
        counted += len(fragment)
        if counted >= most:
            break
    length[0] += counted
    return counted > 0


#: A step's end with nothing added (:class:`~ui.widgets.common.PieceFeeder`): the pieces' maker has more to do
#: before its next piece (a JSON text's characters past those shown, counted for its note).
PAUSE = Piece("", goes_on=True)
#: Characters of a JSON text past those shown counted a step (encoded at some 20 a microsecond).
COUNT_CHARS = 40_000

#: Lines of a value's text a piece (:func:`value_pieces`) when a view shows it in steps: laid out whole, a result of
#: 50 KB held the window 15-120 ms; 100 lines cost a few.
PIECE_LINES = 100


def value_pieces(value: Any, *, lines: int | None = None, max_chars: int = 60_000) -> Iterator[Piece]:
    """:func:`value_html` in pieces of ``lines`` lines at most (None: an element a piece), each made (its
    highlighting) only when asked: a view shows a big result a bounded piece at a time, the document put
    together as the whole HTML makes it (:class:`~ui.widgets.common.AutoHeightText.append_piece`)."""
    mono = theme.mono_family()
    pre = f'<pre style="font-family:{mono}; margin:0; white-space:pre-wrap;">'
    if isinstance(value, str) and not _is_json_text(value):
        for i, chunk in enumerate(_chunks(value, lines)):
            yield Piece(f"{pre}{_esc(chunk)}</pre>", i > 0, lines=chunk.count("\n") + 1)
        return
    from workspace.readable import readable_parts

    yield from _readable_pieces(readable_parts(value), lines=lines, max_chars=max_chars, framed=True)


def _joined(pieces: Iterator[Piece]) -> str:
    """Pieces of whole blocks (``lines`` None) as one HTML."""
    return "".join(piece.html.replace("margin:0;", "margin:0 0 6px 0;", 1) if piece.bottom else piece.html
                   for piece in pieces)


def _readable_pieces(parts: Iterator[JsonPieces | TextBlock], *, lines: int | None, max_chars: int,
                     framed: bool = False) -> Iterator[Piece]:
    """:func:`readable_html` of a value's ``parts`` (:func:`workspace.readable.readable_parts`) in pieces
    (:func:`value_pieces`), its JSON encoded only as far as the pieces taken show; ``framed``: a text under a key as
    its lines (:attr:`Piece.text`, a piece per ``lines`` lines), not a table's HTML."""
    from workspace.readable import JsonPieces

    mono = theme.mono_family()
    pre = f'<pre style="font-family:{mono}; margin:0; white-space:pre-wrap;">'
    c = theme.colors()
    budget = max_chars
    for part in parts:
        if isinstance(part, JsonPieces):
            length = [0]
            kept = max(0, budget)
            for i, (chunk, last) in enumerate(_chunked(_rows_within(part.pieces, kept, length), lines)):
                cut = last and length[0] > budget
                if cut and lines is not None:  # the rest counted for the note a bounded portion a step
                    yield Piece(f"{pre}{highlight(chunk, 'json')}{chr(10) if chunk.endswith(chr(10)) else ''}</pre>",
                                i > 0, lines=chunk.count("\n") + 1)
                    while _counted(part.pieces, length, COUNT_CHARS):
                        yield PAUSE
                    note = f"… {length[0] - budget:,} more characters (open Raw to see everything)"
                    yield Piece(f"{pre}{_esc(note)}</pre>", True, 6, lines=1)
                    break
                while cut and _counted(part.pieces, length, COUNT_CHARS):
                    pass
                note = f"\n… {length[0] - budget:,} more characters (open Raw to see everything)" if cut else ""
                body = highlight(chunk, "json") + _esc(note)
                yield Piece(f"{pre}{body}</pre>", i > 0, 6 if last else 0, lines=chunk.count("\n") + 1)
            budget -= min(length[0], kept)
            continue
        text = part.text
        note = ""
        if len(text) > budget:
            note = f"\n… {len(text) - budget:,} more characters (open Raw to see everything)"
            text = text[: max(0, budget)]
        budget -= len(text)
        head = (f'<p style="margin:4px 0 2px 0; color:{c.muted}; font-family:{mono};">{_esc(part.label)}</p>'
                if part.label else "")
        if framed:
            yield from _text_pieces(head, text + note, lines)
        else:
            yield Piece(f'{head}<table width="100%" cellspacing="0" cellpadding="0" style="margin:0 0 6px 0;"><tr>'
                        f'<td width="3" style="background-color:{c.border};"></td><td width="8"></td><td>'
                        f"{pre}{_esc(text)}{_esc(note)}</pre></td></tr></table>", label=bool(head))
        if budget <= 0:
            break


def _text_pieces(head: str, text: str, lines: int | None) -> Iterator[Piece]:
    """A text under a key (after its label's paragraph ``head``) as :attr:`Piece.text` pieces of ``lines`` lines
    (None: one), its lines those the ``<pre>`` of :func:`readable_html` shows (Qt drops a newline just inside a
    ``<pre>``'s either end)."""
    text = text.removeprefix("\n")
    rows = (text[:-1] if text.endswith("\n") else text).split("\n")
    step = lines or len(rows)
    for i in range(0, len(rows), step):
        part = rows[i:i + step]
        yield Piece("" if i else head, bool(i), label=bool(head) and not i, lines=len(part), text="\n".join(part))


def readable_html(value: Any, *, max_chars: int = 60_000) -> str:
    """A value for people: pretty, highlighted JSON, with every string that spans lines shown as text
    under its key (no ``\\n`` or ``\\"``; see :mod:`workspace.readable`). Long parts are cut with a note."""
    from workspace.readable import readable_parts

    return _joined(_readable_pieces(readable_parts(value), lines=None, max_chars=max_chars))


def _is_json_text(text: str) -> bool:
    """True when ``text`` is a JSON document (an object or array; plain words are not)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def value_html(value: Any) -> str:
    """A result or an error for people: highlighted JSON with its multi-line strings as text, or plain
    text when it is not JSON (:func:`readable_html`)."""
    if isinstance(value, str) and not _is_json_text(value):
        return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
                f"{_esc(value)}</pre>")
    return readable_html(value)
