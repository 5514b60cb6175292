"""What a flush of a streamed code block costs does not grow with the block: the characters laid out
again and lexed on a flush 40 KB into the block are about those of a flush 2 KB into it, for many
short lines (Python, C++) and for one long line (a minified JSON document); and each finished line is
highlighted once."""

from __future__ import annotations

import html
import itertools
import json
import re
from typing import Any

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from tests.fakes.rendered_markdown import drawn_runs, streamed_view
from tests.ui.code_colours import highlighted
from ui import markdown, theme
from ui.chat.view import code_draw, code_lines, code_stream
from ui.chat.view.code_lines import LONG_LINE_CHARS, LOOKAHEAD_CHARS, CodeLines
from ui.chat.view.code_stream import CodeStream, Piece
from ui.chat.view.stream import MarkdownStream

#: Characters given to the view per flush (about 16 ms of a fast model).
FLUSH = 200


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    return None


def python_lines(n: int) -> str:
    return "".join(f'\ndef handler_{i}(event):\n    """Handle {i}."""\n' if i % 30 == 0
                   else f"    value_{i} = compute(event, {i}) * 2  # step {i} <of> it\n" for i in range(n))


def cpp_lines(n: int) -> str:
    return "".join(f"/* Handles {i}:\n   then stores it. */\nint handler_{i}(int x) {{\n" if i % 20 == 0
                   else "    return x;\n}\n" if i % 20 == 19
                   else f'    auto v_{i} = compute(x, {i}) * 2;  // step {i} "of" it\n' for i in range(n))


def json_line(size: int) -> str:
    items, i = [], 0
    while sum(map(len, items)) < size:
        items.append(json.dumps({"id": i, "name": f"item <{i}> & co", "tags": ["a", 'b"c'], "ok": i % 3 == 0},
                                separators=(",", ":")))
        i += 1
    return "[" + ",".join(items) + "]"


BLOCKS = {
    "python": "```python\n" + python_lines(900),
    "cpp": "```cpp\n" + cpp_lines(1000),
    "json on one line": "```json\n" + json_line(45_000),
    "plain on one line": "```\n" + "word & <tag> " * 3500,
}


class Relaid:
    """Characters of the pieces' paragraphs laid out again: a piece set whole, or the paragraphs an
    insertion touched (a paragraph changed is laid out whole)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        self.setting = False
        real_init, real_set = Piece.__init__, Piece.setHtml

        def init(piece: Piece, parent: Any) -> None:
            real_init(piece, parent)
            doc = piece.document()

            def changed(pos: int, _removed: int, added: int) -> None:
                # (the last paragraph the change reaches: at the document's end, its last one)
                first, last = doc.findBlock(pos), doc.findBlock(min(pos + added, doc.characterCount() - 1))
                if not self.setting and first.isValid() and last.isValid():
                    self.chars += last.position() + last.length() - first.position()

            doc.contentsChange.connect(changed)

        def set_html(piece: Piece, text: str) -> None:
            self.setting = True
            try:
                real_set(piece, text)
            finally:
                self.setting = False
            self.chars += piece.document().characterCount()

        monkeypatch.setattr(Piece, "__init__", init)
        monkeypatch.setattr(Piece, "setHtml", set_html)


def per_flush(view: MarkdownStream, text: str, relaid: Relaid) -> list[tuple[int, int, int]]:
    """Stream ``text``; for each flush once the block grows in a CodeStream: (characters of code so far,
    characters laid out again, characters lexed)."""
    out: list[tuple[int, int, int]] = []
    for start in range(0, len(text), FLUSH):
        codes = [w for w in view.findChildren(CodeStream)]
        lexed, laid = (codes[0].lines.lexed if codes else 0), relaid.chars
        view.append(text[start:start + FLUSH])
        while view.pending:  # a flush's work, caught up (never the case at this rate)
            QApplication.processEvents()
        QApplication.processEvents()
        codes = [w for w in view.findChildren(CodeStream)]
        if codes:
            out.append((len(codes[0].code), relaid.chars - laid, codes[0].lines.lexed - lexed))
    return out


def mean(values: list[int]) -> float:
    return sum(values) / max(1, len(values))


@pytest.mark.parametrize("name", list(BLOCKS))
def test_a_flush_costs_what_arrived_not_what_was_streamed_before(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    relaid = Relaid(monkeypatch)
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    flushes = per_flush(view, BLOCKS[name], relaid)
    early = [f for f in flushes if 2_000 <= f[0] < 8_000]
    late = [f for f in flushes if 36_000 <= f[0] < 42_000]
    assert len(early) >= 20 and len(late) >= 20, (len(early), len(late))
    for what, index in (("laid out again", 1), ("lexed", 2)):
        before, after = mean([f[index] for f in early]), mean([f[index] for f in late])
        # Equal within a margin (a piece frozen or a line cut now and then): never the block so far
        # (at 40 KB, laying out or lexing it whole on a flush would be ~10 times the early figure).
        assert after <= 1.5 * before + 2 * FLUSH, f"{what} per flush: {before:.0f} early, {after:.0f} late"
        # A flush: what arrived, the line being written (cut at LONG_LINE_CHARS) and a paragraph cut off it.
        bound = 2 * (LONG_LINE_CHARS + LOOKAHEAD_CHARS) + 4 * FLUSH
        assert max(f[index] for f in late) < bound, f"a flush {what} {max(f[index] for f in late)}"


@pytest.mark.parametrize("language, body", [("python", python_lines(500)), ("cpp", cpp_lines(500))])
def test_each_finished_line_is_highlighted_once(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, language: str, body: str) -> None:
    """Across a stream of 500 lines (no string or comment left open at a line's end, nothing kept
    pending), the lexer sees each finished line once as a finished line; the line being written is
    lexed on every flush (what arrived of it), which is not counted here."""
    seen: dict[str, int] = {}
    live = [False]
    real_lex, real_live = CodeLines._lex, CodeLines.live

    def lex(self: CodeLines, text: str) -> Any:
        if not live[0]:
            for line in text.splitlines():
                seen[line] = seen.get(line, 0) + 1
        return real_lex(self, text)

    def live_line(self: CodeLines, line: str) -> list[str]:
        live[0] = True
        try:
            return real_live(self, line)
        finally:
            live[0] = False

    monkeypatch.setattr(CodeLines, "_lex", lex)
    monkeypatch.setattr(CodeLines, "live", live_line)
    monkeypatch.setattr(code_lines, "PENDING_CHARS", 0)  # a comment over lines is not kept pending
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    text = f"```{language}\n" + body
    for start in range(0, len(text), 37):
        view.append(text[start:start + 37])
        QApplication.processEvents()
    code = view.findChildren(CodeStream)[0]
    streamed = [line for line in code.code.split("\n")[:-1] if line.strip()]
    unique = [line for line in streamed if streamed.count(line) == 1]
    assert len(unique) > 300
    assert all(seen.get(line, 0) >= 1 for line in unique), "a finished line was never highlighted"
    assert max(seen.get(line, 0) for line in unique) == 1, "a finished line was highlighted again"


@pytest.mark.parametrize("language", ["javascript", "python"])
def test_a_long_line_cut_off_is_lexed_once(monkeypatch: pytest.MonkeyPatch, language: str) -> None:
    """A long line (a minified script) is cut a paragraph at a time: each cut lexes its window once and carries
    the lexer's state on from where the paragraph ends in it, not lexing the paragraph again to find that state;
    what the cuts and the rest of the line show is the line highlighted whole."""
    code = "var a = [" + ", ".join(f"'s{i}', {i} * 2" for i in range(3000)) + "];"
    lexed: list[int] = []
    real = code_lines.lex_from

    def counted(lexer: Any, text: str, stack: tuple[str, ...], **kwargs: Any) -> Any:
        lexed.append(len(text))
        return real(lexer, text, stack, **kwargs)

    monkeypatch.setattr(code_lines, "lex_from", counted)
    lines = CodeLines(language)
    assert lines.resumable
    window = LONG_LINE_CHARS + LOOKAHEAD_CHARS
    at, parts = 0, []
    while len(code) - at >= window:
        size, part = lines.cut(code[at:at + window])
        at += size
        parts.append(part)
    assert len(parts) > 10
    assert lexed == [window] * len(parts), "a cut's paragraph was lexed again"
    rest = lines.live(code[at:])
    shown = tuple(run for part in [*parts, *rest] for run in part)
    assert "".join(text for _style, text in shown) == code
    assert code_lines.colours(shown) == highlighted(code, language)[0]


@pytest.mark.parametrize("language, code", [("json", json_line(30_000)),
                                            ("python", "x = [" + ", ".join(f"'s{i}'" for i in range(4000)) + "]\ny = 1")])
def test_the_closing_check_of_one_long_line_works_in_slices(language: str, code: str) -> None:
    """The check of a closed block against its whole highlight is spread over turns of the event loop,
    also inside one long line; what it ends with is the whole block's highlight, span for span."""

    steps = list(code_lines.whole_lines(code, language))
    assert steps.count(None) >= 10
    last = steps[-1]
    assert last is not None
    assert [code_lines.colours(line) for line in last] == highlighted(code, language)


def test_a_cut_lines_colours_are_compared_with_its_whole_highlight_run_by_run() -> None:
    """The closing check keeps a line cut while it streamed when its parts show the whole line's colours:
    parts cut anywhere (a run of one style cut in two) are the same; a part with another colour is not;
    and a line's shown length counts its text."""
    code = json_line(5_000)
    steps = list(code_lines.whole_lines(code, "json"))
    whole = steps[-1]
    assert whole is not None and len(whole) == 1
    line = whole[0]
    size = code_lines.text_length(line)
    assert size == len(code)
    parts = code_lines.split_line(line, [1_000, 1_000, 1_500, size - 3_500])
    assert [code_lines.text_length(part) for part in parts] == [1_000, 1_000, 1_500, size - 3_500]
    assert code_lines.same_colours(parts, line)
    recoloured = [parts[0], (("color: #123456", parts[1][0][1]), *parts[1][1:]), *parts[2:]]
    assert not code_lines.same_colours(recoloured, line)


@pytest.mark.parametrize("name", ["python", "cpp", "json on one line"])
def test_a_streamed_blocks_tokens_are_drawn_without_formatting_them_to_html(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Once the block grows in a CodeStream, the lexer's tokens go to its pieces as runs of one style:
    pygments' HTML formatter formats no code on a flush, nor in the closing check (only one character per
    token type, the first time a theme meets it, to read the type's style off it)."""
    from pygments.formatters.html import HtmlFormatter

    formatted: list[int] = []
    streaming = [False]
    real = HtmlFormatter.format_unencoded

    def counting(self: HtmlFormatter, tokensource: Any, outfile: Any) -> Any:
        tokens = list(tokensource)
        if streaming[0]:
            formatted.append(sum(len(value) for _kind, value in tokens))
        return real(self, tokens, outfile)

    monkeypatch.setattr(HtmlFormatter, "format_unencoded", counting)
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    text = BLOCKS[name][:20_000]
    for start in range(0, len(text), FLUSH):
        streaming[0] = bool(view.findChildren(CodeStream))  # before: the block is Markdown rendered whole
        view.append(text[start:start + FLUSH])
        QApplication.processEvents()
    view.append("\n```\n")
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)  # bounds a hang
    code = view.findChildren(CodeStream)[0]
    assert len(code.code) > 19_000
    assert all(size <= 1 for size in formatted), f"{sum(formatted)} characters formatted to HTML"


@pytest.mark.parametrize("name, flush, bound", [("json on one line", 2 * LONG_LINE_CHARS, 1.7),
                                                ("python", FLUSH, 1.25), ("cpp", FLUSH, 1.25)])
def test_a_finished_line_or_a_paragraph_cut_off_a_long_line_is_not_laid_out_again(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, name: str, flush: int, bound: float) -> None:
    """The line being written and the finished lines above it are one document: a line finished (or a
    paragraph cut off a long line) stays the paragraph it was while it was written, laid out with the
    turn's change, and neither it nor the paragraph above it is laid out again. Counted: the characters of
    the paragraphs every edit of every piece touches, over the stream. Written again into a piece of finished
    lines (the line being written in a piece of its own), the characters laid out were ~2.05 x the code for a
    one-line JSON document in bursts of two paragraphs a turn, ~1.4 x for Python and C++ in flushes of 200
    characters; here ~1.5 x (the line being written laid out again as it grows) and ~1.15 x."""
    relaid = Relaid(monkeypatch)
    text = BLOCKS[name]
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    started: tuple[int, int] | None = None
    for start in range(0, len(text), flush):
        if started is None and view.findChildren(CodeStream):
            started = (start, relaid.chars)
        view.append(text[start:start + flush])
        while view.pending:
            QApplication.processEvents()
    assert started is not None
    code = view.findChildren(CodeStream)[0]
    assert code.code == text.split("\n", 1)[1].rstrip("\n")
    streamed, laid = len(text) - started[0], relaid.chars - started[1]
    assert streamed <= laid < bound * streamed, f"{laid} characters laid out for {streamed} streamed"


def test_a_changed_line_and_the_lines_after_it_are_one_edit(qtbot: Any) -> None:
    """Replacing a piece's lines where the last shown line changed and new lines follow it (the live piece
    when a line being written is finished and the next begins) touches the changed line once: written in
    two edits, the second (adding a paragraph after it) laid it out again."""
    piece = Piece(None)  # type: ignore[arg-type]
    qtbot.addWidget(piece)
    first = (("", "x" * 1000),)
    code_draw.replace_lines(piece.document(), [], [first], wrap=True)
    edits: list[tuple[int, int]] = []
    piece.document().contentsChange.connect(lambda pos, _removed, added: edits.append((pos, added)))
    changed, after = (("", "x" * 999 + "y"),), (("", "z"),)
    code_draw.replace_lines(piece.document(), [first], [changed, after], wrap=True)
    assert piece.document().toPlainText() == "x" * 999 + "y\nz"
    assert len(edits) == 1, edits


def test_the_closing_check_compares_a_cut_line_a_paragraph_a_turn(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a block with a long line cut while it streamed closes, its check compares the line's colours
    with the whole highlight's a paragraph per turn of the event loop (a step a turn here), not the whole
    line in one turn (~45 KB of runs compared at once held the window ~30 ms); and it still ends with the
    paragraphs shown kept (their colours are the whole line's). Counted: the characters whose colours are
    compared in each turn of the check."""
    compared: list[int] = [0]
    real_colours = code_lines.colours

    def counting(line: Any) -> Any:
        compared[-1] += code_lines.text_length(line)
        return real_colours(line)

    monkeypatch.setattr(code_lines, "colours", counting)
    monkeypatch.setattr(code_stream, "colours", counting, raising=False)
    monkeypatch.setattr(code_stream, "CHECK_SLICE_S", 0.0)  # a step per turn
    real_step = CodeStream._check_step

    def step(code: CodeStream) -> None:
        compared.append(0)
        real_step(code)

    monkeypatch.setattr(CodeStream, "_check_step", step)
    text = BLOCKS["json on one line"]
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    for start in range(0, len(text), 2 * LONG_LINE_CHARS):
        view.append(text[start:start + 2 * LONG_LINE_CHARS])
        while view.pending:
            QApplication.processEvents()
    code = view.findChildren(CodeStream)[0]
    paragraphs = [block for piece in code.pieces for block in code._blocks.get(piece, [])]
    view.append("\n```\n")
    qtbot.waitUntil(lambda: not view.checking, timeout=60_000)  # bounds a hang
    assert sum(compared) >= len(code.code)  # the line was compared
    assert max(compared) <= 2 * (LONG_LINE_CHARS + LOOKAHEAD_CHARS), f"{max(compared)} characters compared in a turn"
    assert [block for piece in code.pieces for block in code._blocks.get(piece, [])] == paragraphs  # kept


def test_the_closing_check_sets_the_pieces_that_differ_a_turn_each(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """C++'s lexer cannot resume from a line's state, so pieces of a C++ block streamed differ from the block
    highlighted whole and the closing check sets them again: one piece per turn of the event loop (a step a
    turn here), not all of them in the check's last turn; what it ends with is the whole highlight."""
    sets: list[int] = [0]
    real_set = CodeStream._set

    def counting(code: CodeStream, piece: Piece, blocks: list[Any], *, anew: bool = False) -> None:
        sets[-1] += 1
        real_set(code, piece, blocks, anew=anew)

    real_step = CodeStream._check_step

    def step(code: CodeStream) -> None:
        sets.append(0)
        real_step(code)

    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    text = BLOCKS["cpp"]
    for start in range(0, len(text), 2 * FLUSH):
        view.append(text[start:start + 2 * FLUSH])
        while view.pending:
            QApplication.processEvents()
    monkeypatch.setattr(code_stream, "CHECK_SLICE_S", 0.0)  # a step per turn
    monkeypatch.setattr(CodeStream, "_set", counting)
    monkeypatch.setattr(CodeStream, "_check_step", step)
    view.append("\n```\n")
    qtbot.waitUntil(lambda: not view.checking, timeout=60_000)  # bounds a hang
    code = view.findChildren(CodeStream)[0]
    assert sum(sets) >= 2, sets  # pieces were set again (else the test shows nothing)
    assert max(sets) == 1, f"{max(sets)} pieces set again in a turn"
    assert [code_lines.colours(line) for line in code.shown_lines()] == highlighted(code.code, "cpp")


@pytest.mark.parametrize("name", ["json on one line", "python"])
def test_a_piece_is_laid_out_once_not_again_when_it_is_polished_and_shown(qtbot: Any, name: str) -> None:
    """A new piece is written before it is first shown: it is polished and given the column's width when it is made,
    so its lines are laid out at that width as they are written, and neither its style's font (given when it is
    polished) nor its width (given when it is shown) lays them out again. Counted: the characters of the paragraphs
    Qt laid out again between two edits of a piece (after each edit, each paragraph's layout is marked; a layout
    laid out again has its position set again). Polished and sized when first shown, each piece after the first was
    laid out whole twice more (~1.6 x the JSON line's code, ~1.3 x Python's); here only the first piece is, once (the
    column's width is not known when it is made, with the block)."""
    marked = QPointF(-1000.0, 0.0)

    def relaid(doc: Any) -> int:
        blocks = (doc.findBlockByNumber(n) for n in range(doc.blockCount()))
        return sum(b.length() for b in blocks if b.layout().position().x() != marked.x())

    counted: dict[Any, int] = {}  # per piece's document
    real_replace = code_draw.replace_lines

    def replacing(doc: Any, shown: list[Any], lines: list[Any], *, wrap: bool) -> None:
        counted[doc] = counted[doc] + relaid(doc) if doc in counted else 0  # Qt's layouts since the last edit
        real_replace(doc, shown, lines, wrap=wrap)
        doc.size()  # (laid out)
        for n in range(doc.blockCount()):
            layout = doc.findBlockByNumber(n).layout()
            layout.setPosition(QPointF(marked.x(), layout.position().y()))

    view = MarkdownStream()
    qtbot.addWidget(view)
    view.setStyleSheet(theme.style_sheet("light"))  # the window's (its pieces' font is given when they are polished)
    view.resize(700, 400)
    view.show()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(code_draw, "replace_lines", replacing)
        text = BLOCKS[name]
        for start in range(0, len(text), 2 * LONG_LINE_CHARS):
            view.append(text[start:start + 2 * LONG_LINE_CHARS])
            while view.pending:
                QApplication.processEvents()
            QApplication.processEvents()
    code = view.findChildren(CodeStream)[0]
    pieces = code.pieces
    assert len(pieces) >= 5 and all(p.isVisible() for p in pieces)
    again = {n: chars for n, p in enumerate(pieces) if (chars := counted[p.document()] + relaid(p.document()))}
    assert set(again) <= {0}, f"pieces laid out again (characters): {again}, of {len(code.code)}"


def test_a_turn_whose_pieces_were_laid_out_again_at_a_new_width_grows_nothing(qtbot: Any) -> None:
    """The conversation's scroll bar coming (or the window resized) narrows the column: Qt lays every piece out
    again at the new width (~5 ms for the JSON line's first pieces), and the block does not grow in that turn as
    well: it grows in the next one; a width changing every turn (a window resized by dragging) holds it up one turn
    at most. (It grew in the same turn: that turn was the answer's worst stall.)"""
    parent = QWidget()
    qtbot.addWidget(parent)
    layout = QVBoxLayout(parent)
    code = CodeStream("json", parent, source=str)
    layout.addWidget(code)
    parent.resize(700, 400)
    parent.show()
    text = json_line(30_000)
    for end in range(2_000, 14_000, 2_000):
        while code.grow(text[:end], closed=False):
            QApplication.processEvents()
        QApplication.processEvents()
    assert len(code.pieces) >= 2
    lexed = code.lines.lexed
    parent.resize(690, 400)
    QApplication.processEvents()
    assert code.grow(text[:20_000], closed=False), "a turn left for the block to grow in"
    assert code.lines.lexed == lexed, "the block grew in the turn its pieces were laid out again"
    parent.resize(680, 400)  # the width changes again before the next turn: the block grows all the same
    QApplication.processEvents()
    code.grow(text[:20_000], closed=False)
    assert code.lines.lexed > lexed


def _spaces_after_a_colour(runs: list[tuple[str, bool]]) -> int:
    """How many runs (text, a colour alone or nothing) are spaces alone in a colour alone just after a run in one."""
    return sum(1 for (_before, plain_before), (text, plain) in itertools.pairwise(runs)
               if plain and plain_before and text and not text.strip(" "))


def test_spaces_after_a_token_in_a_colour_alone_are_no_run_of_their_own(qtbot: Any) -> None:
    """C++'s spaces between words are a token type of their own (grey), so a streamed C++ block had about half
    again as many runs of one style as it needed: each a fragment of its piece's document inserted on its own, an
    item Qt lays out and draws apart. Spaces after a token take its style when both styles are a colour alone
    (the spaces look the same): in the pieces' documents and in the block highlighted whole (its HTML), which
    still show the same runs. Counted: the fragments of spaces alone in a colour alone right after a fragment in
    one, in a streamed 30 KB C++ block's documents (2,947 of 9,021 fragments on the old code; none of 6,047 now), and
    in its highlighted HTML (2,947 too without the join)."""
    from PySide6.QtGui import QFont, QTextCharFormat

    def plain(fmt: QTextCharFormat) -> bool:
        return (fmt.fontWeight() <= QFont.Weight.Normal and not fmt.fontItalic() and not fmt.fontUnderline()
                and not fmt.hasProperty(QTextCharFormat.Property.BackgroundBrush))

    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    text = BLOCKS["cpp"][:30_000]
    text = text[:text.rfind("\n") + 1]
    for start in range(0, len(text), FLUSH):
        view.append(text[start:start + FLUSH])
        QApplication.processEvents()
    view.append("```\n")
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)  # bounds a hang
    code = view.findChildren(CodeStream)[0]
    joined = fragments = 0
    for piece in code.pieces:
        block = piece.document().begin()
        while block.isValid():
            runs = [(text, plain(drawn)) for text, drawn in drawn_runs(block)]
            fragments += len(runs)
            joined += _spaces_after_a_colour(runs)
            block = block.next()
    assert fragments > 5_000
    assert joined == 0, f"{joined} of {fragments} fragments are spaces after a token in a colour alone"
    # The block highlighted whole (a closed block rendered at once) joins them the same way.
    span = re.compile(r'<span style="([^"]*)">([^<]*)</span>|([^<]+)')
    html_runs = [[(html.unescape(m.group(2) if m.group(1) is not None else m.group(3)),
                   (m.group(1) or "") in markdown.PLAIN_COLOURS) for m in span.finditer(line)]
                 for line in markdown.highlight(code.code, "cpp").split("\n")]
    assert sum(map(len, html_runs)) > 5_000
    assert sum(_spaces_after_a_colour(runs) for runs in html_runs) == 0


@pytest.mark.parametrize("odd", ["cafe\u0301 \u0645\u0631\u062d\u0628\u0627", "\x1b[31mcafe\x07 \x7f"])
def test_ascii_code_is_laid_out_unshaped_and_other_text_shaped(qtbot: Any, odd: str) -> None:
    """A code line's runs of one style are many short items of its paragraph's layout, and Qt shaped each one
    (about a third of writing a piece's lines and laying them out): pieces of printable ASCII code are laid out
    without shaping (PreferNoShaping: a glyph a character, which is what shaping gives it in a monospace font).
    Once the code holds anything else (a combining accent placed on its letter, Arabic's joined letters need
    shaping; a control character, ESC of a terminal's colours, takes no width unshaped and a column shaped, as a
    block rendered whole shows it), the piece that shows it and the pieces after it shape their text; the pieces
    above it stay as they were."""
    def streamed(text: str) -> CodeStream:
        return streamed_view(qtbot, text, FLUSH).findChildren(CodeStream)[0]

    ascii_block = streamed(BLOCKS["cpp"][:30_000])
    assert len(ascii_block.pieces) > 3
    assert not any(shaped(piece) for piece in ascii_block.pieces)
    lines = python_lines(600).splitlines(keepends=True)
    accented = f"    s = '{odd}'  # not printable ASCII\n"
    mixed = streamed("```python\n" + "".join(lines[:400]) + accented + "".join(lines[400:]))
    first = next(i for i, piece in enumerate(mixed.pieces) if any("cafe" in line.text() for line in lines_of(piece)))
    assert first > 1
    assert [shaped(piece) for piece in mixed.pieces] == [False] * first + [True] * (len(mixed.pieces) - first)


def shaped(piece: Piece) -> bool:
    """Whether Qt shapes the piece's text (its default; not when the font prefers no shaping)."""
    from PySide6.QtGui import QFont

    return not piece.font().styleStrategy() & QFont.StyleStrategy.PreferNoShaping


def lines_of(piece: Piece) -> list[Any]:
    out, block = [], piece.document().begin()
    while block.isValid():
        out.append(block)
        block = block.next()
    return out


@pytest.mark.parametrize("name", ["cpp", "json on one line"])
def test_a_pieces_lines_are_inserted_as_one_text_their_colours_set_on_their_paragraphs(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A piece's runs of one style were each inserted with their format (a fragment of the document each: C++ ~160 a
    KB, a one-line JSON ~280), each insert a call and a format looked up in the document's collection. An edit now
    inserts its text plain (the live line's new end, then the new lines in one text) and each paragraph written
    is given its line's colours as its layout's formats, as a highlighter does. Counted over a streamed 30 KB block:
    at most two inserts an edit, one fragment a paragraph; each character is still drawn in its colour
    (test_code_stream_formats). On the old code: 6,165 inserts (C++) and 8,302 (JSON) for 148 edits."""
    from PySide6.QtGui import QTextCursor

    inserts, edits = [0], [0]
    real_insert, real_replace = QTextCursor.insertText, code_draw.replace_lines

    def insert(cursor: QTextCursor, *args: Any) -> None:
        inserts[0] += 1
        real_insert(cursor, *args)

    def replace(*args: Any, **kwargs: Any) -> None:
        edits[0] += 1
        real_replace(*args, **kwargs)

    monkeypatch.setattr(QTextCursor, "insertText", insert)
    monkeypatch.setattr(code_draw, "replace_lines", replace)
    text = BLOCKS[name][:30_000]
    view = streamed_view(qtbot, text, FLUSH)
    code = view.findChildren(CodeStream)[0]
    runs = paragraphs = fragments = 0
    for piece in code.pieces:
        block = piece.document().begin()
        while block.isValid():
            paragraphs += 1
            runs += len(drawn_runs(block))
            it = block.begin()
            while not it.atEnd():
                fragments += 1
                it += 1
            block = block.next()
    assert runs > 3 * paragraphs, "the block shows its colours"
    assert edits[0] > 50
    assert inserts[0] <= 2 * edits[0], f"{inserts[0]} inserts for {edits[0]} edits ({runs} runs)"
    assert fragments <= paragraphs, f"{fragments} fragments for {paragraphs} paragraphs"
