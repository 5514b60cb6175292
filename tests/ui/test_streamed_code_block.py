"""A long code block streamed into a MarkdownStream: its finished lines are highlighted and laid out
once (frozen pieces), and what it shows at the end is what rendering the whole answer at once shows:
the same text, the same colours, line for line; Copy copies the whole code, Wrap applies to it all."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication, QTextDocument, QTextTable
from PySide6.QtWidgets import QApplication

from tests.fakes.rendered_markdown import drawn_runs, streamed_view
from tests.ui.code_colours import highlighted
from ui import markdown
from ui.chat.view import code_lines
from ui.chat.view.code_stream import PIECE_CHARS, CodeStream, Piece
from ui.chat.view.stream import FREEZE_CHARS, MAX_RENDER_CHARS, MarkdownStream
from ui.widgets.common import AutoHeightText


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    return None


def python_code(lines: int) -> str:
    out = []
    for i in range(lines):
        if i % 25 == 0:
            out.append(f'def f{i}(x):\n    """Doubles x.\n\n    Over lines, {i}.\n    """\n')
        elif i % 25 == 7:
            out.append(f"    s = '''a string\nover two lines {i}'''\n")
        else:
            out.append(f"    y{i} = x * {i}  # <note> & {i}\n")
    return "".join(out)


def bash_code(lines: int) -> str:
    return "".join(f'cat <<EOF\nline {i} $HOME "q"\nEOF\n' if i % 9 == 0 else f'echo "{i}" | grep -v x\n'
                   for i in range(lines))


CASES = {
    "closing fence then prose": "Here it is:\n\n```python\n" + python_code(120) + "```\n\nThat is all **folks**.\n",
    "still open at the end": "Some words first.\n\n```python\n" + python_code(150),
    "a lexer rule over lines (heredoc)": "```bash\n" + bash_code(120) + "```\nafter\n",
    "a lexer that cannot resume (JSON)": "```json\n[\n" + "".join(f'  {{"a{i}": [1, "x\\"y", null]}},\n'
                                                                  for i in range(90)) + "  {}\n]\n```\n",
    "long prose, then still open": "".join(f"Paragraph {i} of words, words and words.\n\n" for i in range(60))
                                   + "```python\n" + python_code(100),
    "plain, no language": "~~~\n" + "".join(f"<tag> & line {i}\n" for i in range(200)) + "~~~\n\n- done\n",
    "a minified JSON document on one line": "```json\n[" + ",".join(
        f'{{"id":{i},"name":"item <{i}> & co","tags":["a","b\\"c"],"ok":true,"parent":null}}' for i in range(150))
        + "]\n```\n",
    "long lines among short ones": "```python\n" + python_code(30) + "names = [" + ", ".join(
        f"'n{i}', \"\"\"doc {i}\"\"\", {i}.5" for i in range(400)) + "]\n" + python_code(30)
        + "blob = '" + "ab<&>" * 900 + "'\n```\n",
    "a long plain line": "```\n" + "word & <tag> " * 700 + "\nend\n```\n",
}




def _under_body(html: str) -> str:
    return re.sub(r"<body[^>]*>", "<body>", html)


def parts(view: MarkdownStream) -> list[AutoHeightText | CodeStream]:
    found = [view._layout.itemAt(i).widget() for i in range(view._layout.count())]  # type: ignore[union-attr]
    return [w for w in found if isinstance(w, AutoHeightText | CodeStream)]


def colour_runs(doc: QTextDocument, blocks: list[Any]) -> list[tuple[str, str]]:
    """Each character of ``blocks`` (a line each) with its colour as drawn, runs of one colour merged."""
    out: list[tuple[str, str]] = []
    for block in blocks:
        for text, drawn in drawn_runs(block):
            colour = drawn.foreground().color().name()
            if out and out[-1][1] == colour:
                out[-1] = (out[-1][0] + text, colour)
            else:
                out.append((text, colour))
        out.append(("\n", ""))
    return out


def merged(runs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Colour runs without the line breaks, runs of one colour merged."""
    out: list[tuple[str, str]] = []
    for text, colour in runs:
        if text == "\n" and not colour:
            continue
        if out and out[-1][1] == colour:
            out[-1] = (out[-1][0] + text, colour)
        else:
            out.append((text, colour))
    return out


def all_blocks(doc: QTextDocument) -> list[Any]:
    blocks, block = [], doc.begin()
    while block.isValid():
        blocks.append(block)
        block = block.next()
    return blocks


def whole_code_runs(doc: QTextDocument) -> list[tuple[str, str]]:
    """The colour runs of the code lines of the first code block of a one-shot render (under its header)."""
    table = next(f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable))
    cell = table.cellAt(0, 0)
    first = cell.firstCursorPosition().block().next()  # under the header line
    last = cell.lastCursorPosition().block()
    blocks = [b for b in all_blocks(doc) if first.blockNumber() <= b.blockNumber() <= last.blockNumber()]
    return colour_runs(doc, blocks)


def streamed_code_runs(code: CodeStream) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for piece in code.pieces:
        if piece.isVisibleTo(code):
            out += colour_runs(piece.document(), all_blocks(piece.document()))
    return out


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("chunk", [7, 61, 100_000])
def test_a_streamed_code_block_shows_what_rendering_it_whole_shows(qtbot: Any, name: str, chunk: int) -> None:
    text = CASES[name]
    view = streamed_view(qtbot, text, chunk)
    assert view.text == text
    shown = parts(view)
    codes = [w for w in shown if isinstance(w, CodeStream)]
    # Each part is its Markdown rendered whole, and the parts are the whole answer, in order.
    assert "".join(w.markdown or "" for w in shown if w.isVisibleTo(view)) == text
    for part in shown:
        if isinstance(part, AutoHeightText) and part.markdown:
            # Beside the part (same parent, so the same font and style sheet whatever earlier tests set).
            whole = AutoHeightText(parent=part.parentWidget())
            whole.hide()
            whole.set_markdown(part.markdown)
            # The body's default font comes from the widget's polish (the app's style sheet, which earlier
            # tests in the same process may have set): compare what the Markdown made, under it.
            assert _under_body(part.toHtml()) == _under_body(whole.toHtml())
    closed = text.count("```") + text.count("~~~") == 2
    if chunk == 100_000 and closed:  # given at once (a stored answer), a closed block is rendered whole
        assert not codes
        return
    assert len(codes) == 1, "a long code block still open while it streams grows in a CodeStream"
    code = codes[0]
    # The code block: the same lines, the same colours as the block rendered at once.
    language = code.language
    expected = markdown.code_blocks(code.markdown)[0]
    assert code.code == expected
    assert [code_lines.colours(line) for line in code.shown_lines()] == highlighted(expected, language)
    whole = AutoHeightText()
    qtbot.addWidget(whole)
    whole.resize(700, 100)
    whole.set_markdown(code.markdown)
    runs, whole_runs = streamed_code_runs(code), whole_code_runs(whole.document())
    if max(map(len, expected.split("\n"))) < code_lines.LONG_LINE_CHARS:
        assert "".join(t for t, _c in runs) == expected + "\n"
        assert runs == whole_runs
    else:  # a line cut while it streamed stays in paragraphs (each ending where a row does): the same characters
        paragraphs = "".join(t for t, _c in runs).split("\n")  # and colours
        assert len(paragraphs) > expected.count("\n") + 2
        assert max(map(len, paragraphs)) < 2 * code_lines.LONG_LINE_CHARS
        assert merged(runs) == merged(whole_runs)
        assert "".join(paragraphs) == expected.replace("\n", "")
    assert len({c for _t, c in runs}) > (2 if language else 1)  # coloured (the test can tell colours apart)
    assert code.header.text() == markdown.code_header(language, index=0, wrap=True)


def test_finished_lines_are_highlighted_once_and_frozen_pieces_never_set_again(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lexer sees each finished line once (plus the line being written, again as it grows), never
    the whole block on a flush; a frozen piece is never set again; no piece holds much more than PIECE_CHARS."""
    lexed: list[str] = []
    real_lex = code_lines.lex_from

    def counting(lexer: Any, text: str, stack: tuple[str, ...]) -> Any:
        lexed.append(text)
        return real_lex(lexer, text, stack)

    # What each piece's document was changed by: (characters removed, characters added), a write each.
    writes: dict[int, list[tuple[int, int]]] = {}
    set_html: list[int] = []
    real_init = Piece.__init__

    def init(self: Piece, parent: Any) -> None:
        real_init(self, parent)
        key = id(self)
        self.document().contentsChange.connect(
            lambda _at, removed, added: writes.setdefault(key, []).append((removed, added)))

    monkeypatch.setattr(code_lines, "lex_from", counting)
    monkeypatch.setattr(Piece, "__init__", init)
    monkeypatch.setattr(Piece, "setHtml", lambda self, html: set_html.append(len(html)))
    body = "".join(f"    value_{i} = compute(event, {i}) * 2  # step {i}\n" for i in range(1200))  # ~50 KB
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    text = "```python\n" + body
    for start in range(0, len(text), 40):
        view.append(text[start:start + 40])
        QApplication.processEvents()
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)
    code = next(w for w in parts(view) if isinstance(w, CodeStream))
    # Each finished line was lexed once as a finished line (in a batch of lines ending with it); the
    # line being written is lexed at each flush, as far as it has come.
    finished = [line for batch in lexed for line in batch.splitlines(keepends=True) if line.endswith("\n")]
    counts: dict[str, int] = {}
    for line in finished:
        counts[line] = counts.get(line, 0) + 1
    lines = body.splitlines(keepends=True)
    streamed = lines[FREEZE_CHARS // len(lines[0]) + 2:-1]  # the lines after the block became a CodeStream
    assert all(counts.get(line, 0) >= 1 for line in streamed)
    assert sum(counts.get(line, 0) for line in streamed) <= 1.2 * len(streamed), "finished lines lexed again"
    assert sum(map(len, lexed)) < 3 * len(body)  # the whole block on every flush would be ~600 times it
    # The frozen pieces were written while they were the recent piece (the finished lines, then the line
    # being written after them), at their end: no write replaced more than the line being written (what of it
    # changed), and once frozen they are never set again; no piece's whole HTML is ever set.
    pieces = code.pieces
    frozen = pieces[:-1]
    assert len(frozen) >= len(body) // (2 * PIECE_CHARS)
    assert all(writes[id(piece)] for piece in frozen)
    # (Its colours set again, the line being written is a change of its whole paragraph: at most a line and its end.)
    most = max(removed for piece in frozen for removed, _added in writes[id(piece)])
    assert most <= max(map(len, lines)), f"{most} characters written again"
    before = {id(piece): len(writes[id(piece)]) for piece in frozen}
    more = "".join(f"    more_{i} = {i}\n" for i in range(300)) + "```\n"
    for start in range(0, len(more), 40):
        view.append(more[start:start + 40])
        QApplication.processEvents()
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)
    assert {id(piece): len(writes[id(piece)]) for piece in frozen} == before, "a frozen piece was set again"
    biggest = max(added for piece in code.pieces for _removed, added in writes.get(id(piece), [(0, 0)]))
    assert biggest < 2 * PIECE_CHARS  # a batch of lines, never the block (~60 KB here)
    assert not set_html, "a piece's whole HTML was set"
    assert [code_lines.colours(line) for line in code.shown_lines()] == highlighted(
        body + more[:-4].rstrip("\n"), "python")


def test_a_50_kb_block_is_a_few_large_pieces(qtbot: Any) -> None:
    """A new piece (a text widget made, then shown for the first time) costs about as much as laying out a
    few KB of code: a 50 KB block is shown in pieces of about 6,000 characters, not twice as many of half
    that, and still shows what rendering it whole shows."""
    body = python_code(1300)  # ~50 KB
    view = streamed_view(qtbot, "```python\n" + body, 300)
    code = next(w for w in parts(view) if isinstance(w, CodeStream))
    pieces = [piece for piece in code.pieces if not piece.isHidden()]
    assert len(pieces) <= len(body) // 4500 + 1, f"{len(pieces)} pieces for {len(body)} characters"
    assert [code_lines.colours(line) for line in code.shown_lines()] == highlighted(body.rstrip("\n"), "python")


def rows(blocks: list[Any]) -> list[str]:
    """The rows ``blocks`` are laid out in (their text, top to bottom)."""
    out = []
    for block in blocks:
        layout, text = block.layout(), block.text()
        block.document().documentLayout().blockBoundingRect(block)  # (laid out)
        out += [text[row.textStart():row.textStart() + row.textLength()]
                for row in (layout.lineAt(i) for i in range(layout.lineCount()))]
    return out


def streamed_rows(code: CodeStream) -> list[str]:
    return rows([block for piece in code.pieces if piece.isVisibleTo(code) for block in all_blocks(piece.document())])


def reopened_rows(code: CodeStream, parent: Any) -> list[str]:
    """The rows of the code block's lines as a reopened thread shows them (its Markdown rendered whole), its code as
    wide as the streamed block's."""
    return whole_rows(code.markdown, code.pieces[0].viewport().width(), parent)


def whole_rows(source: str, width: int, parent: Any) -> list[str]:
    """The rows of the lines of the code block ``source`` rendered whole, its code ``width`` wide."""
    whole = AutoHeightText(parent=parent)
    whole.resize(parent.width(), 100)
    whole.set_markdown(source)
    whole.show()
    QApplication.processEvents()

    def code_blocks() -> list[Any]:
        table = next(f for f in whole.document().rootFrame().childFrames() if isinstance(f, QTextTable))
        first = table.cellAt(0, 0).firstCursorPosition().block().next()  # under the header line
        last = table.cellAt(0, 0).lastCursorPosition().block()
        return [b for b in all_blocks(whole.document()) if first.blockNumber() <= b.blockNumber() <= last.blockNumber()]

    rows(code_blocks())
    narrower = code_blocks()[0].layout().lineAt(0).width() - width
    if narrower:
        whole.resize(int(whole.width() - narrower), 100)
        QApplication.processEvents()
    shown = rows(code_blocks())
    whole.deleteLater()
    return shown


def test_a_streamed_minified_line_shows_the_rows_a_reopened_thread_shows(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-line JSON document longer than LONG_LINE_CHARS is cut into paragraphs while it streams (a flush never
    lays the whole line out); each cut showed as a line break the text does not have ("item 57" / ', "tags": ...'),
    in the closed block too. Now each paragraph ends where a row of the line ends: while it streams, where the line
    being written was laid out with a row starting; once closed, where the line shown whole has one at the block's
    width (again once it is resized). So the block shows the rows a reopened thread shows; unwrapped, the line is one
    paragraph. Counted: the closing check looks for the line's rows (``code_draw.wrap_starts``) only when a cut did
    not end where a row did at the block's width."""
    from ui.chat.view import code_draw

    looked: list[int] = []
    real_starts = code_draw.wrap_starts

    def counted(*args: Any) -> Any:
        looked.append(1)
        return real_starts(*args)

    monkeypatch.setattr(code_draw, "wrap_starts", counted)
    text = "Here:\n\n```json\n[" + ",".join(
        f'{{"id": {i}, "name": "item {i}", "tags": ["a", "b"], "ok": {str(i % 2 == 0).lower()}, "score": {i * 1.5}}}'
        for i in range(150)) + "]\n```\n\nDone.\n"
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    half = text.index('"id": 100,')
    for start in range(0, half, 61):
        view.append(text[start:min(half, start + 61)])
        QApplication.processEvents()
    qtbot.waitUntil(lambda: not view.pending, timeout=60_000)
    code = next(w for w in parts(view) if isinstance(w, CodeStream))
    # While it streams, each paragraph cut off the line ends where a row does (as the line being written was laid
    # out): the rows are those of the line so far shown whole, but for its last.
    assert len([b for piece in code.pieces for b in all_blocks(piece.document())]) > 3
    assert streamed_rows(code)[:-1] == reopened_rows(code, view)[:-1]
    assert code._cut_width == code.recent.viewport().width()  # every cut so far at a row (came a flush at a time)
    for start in range(half, len(text), 61):
        view.append(text[start:start + 61])
        QApplication.processEvents()
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)
    paragraphs = [b for piece in code.pieces if piece.isVisibleTo(code) for b in all_blocks(piece.document())]
    assert len(paragraphs) > 3  # still cut: no paragraph of the whole line laid out
    assert max(len(b.text()) for b in paragraphs) < 2 * code_lines.LONG_LINE_CHARS
    shown = streamed_rows(code)
    assert "".join(shown) == code.code
    assert shown == reopened_rows(code, view)
    assert not looked  # its cuts were made at rows: kept as they are
    view.resize(520, 400)  # narrower: the rows change, and the paragraphs follow them
    qtbot.waitUntil(lambda: not view.checking, timeout=60_000)
    QApplication.processEvents()
    assert streamed_rows(code) == reopened_rows(code, view) != shown
    assert looked
    code.set_wrap(False)
    qtbot.waitUntil(lambda: not view.checking, timeout=60_000)
    assert streamed_rows(code) == [code.code]  # one row, scrolled sideways
    code.set_wrap(True)
    qtbot.waitUntil(lambda: not view.checking, timeout=60_000)
    QApplication.processEvents()
    assert streamed_rows(code) == reopened_rows(code, view)


def test_copy_copies_the_whole_code_and_wrap_applies_to_every_piece(qtbot: Any) -> None:
    board = QGuiApplication.clipboard()
    board.setText("before")
    code_text = python_code(260) + "long = '" + "y" * 400 + "'\n" + python_code(10)
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    view.show()
    text = "Intro.\n\n```python\n" + code_text
    for start in range(0, len(text), 50):
        view.append(text[start:start + 50])
        QApplication.processEvents()
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)
    code = next(w for w in parts(view) if isinstance(w, CodeStream))
    visible = [p for p in code.pieces if p.isVisibleTo(code)]
    assert len(visible) >= 2  # frozen pieces and the recent one
    code.header.linkActivated.emit(f"{markdown.COPY_SCHEME}:0")
    assert board.text() == code_text.rstrip("\n")

    def wraps(piece: Piece) -> bool:
        return not piece.document().begin().blockFormat().nonBreakableLines()

    assert all(wraps(p) for p in visible) and not code.bar.isVisibleTo(code)
    code.header.linkActivated.emit(f"{markdown.WRAP_SCHEME}:0")
    QApplication.processEvents()
    assert not code.wrap and markdown.TASK_OPEN in code.header.text()
    assert not any(wraps(p) for p in visible)
    assert code.bar.isVisibleTo(code) and code.bar.maximum() > 0  # one bar scrolls the long line sideways
    long_piece = next(p for p in visible if "yyyy" in p.toPlainText())
    code.bar.setValue(60)
    assert long_piece.horizontalScrollBar().value() == 60
    code.header.linkActivated.emit(f"{markdown.WRAP_SCHEME}:0")
    assert code.wrap and markdown.TASK_DONE in code.header.text()
    assert all(wraps(p) for p in visible) and not code.bar.isVisibleTo(code)
    assert long_piece.horizontalScrollBar().value() == 0
    # A piece's context menu copies the whole message as Markdown.
    source = code.pieces[0].parentWidget().markdown_source  # type: ignore[union-attr]
    assert source() == view.text


def test_a_short_or_closed_code_block_renders_as_before(qtbot: Any) -> None:
    """A block that closes before it is long, and a stored answer given at once, are rendered whole."""
    short = "Intro.\n\n```python\nx = 1\n```\n\nDone.\n"
    stored = "```python\n" + python_code(100) + "```\n"
    for text in (short, stored):
        view = streamed_view(qtbot, text, 5 if text is short else len(text))
        assert not [w for w in parts(view) if isinstance(w, CodeStream)]
        assert "".join(w.markdown or "" for w in parts(view) if isinstance(w, AutoHeightText)) == text


def test_a_stored_answer_ending_in_a_long_open_block_never_renders_the_block_whole(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given at once (a stored thread), the prose is frozen a few blocks a turn, then the open block
    grows in a CodeStream: no segment is ever set to the whole block's Markdown."""
    rendered: list[int] = []
    real = markdown.render_part

    def render_part(text: str, **kwargs: Any) -> tuple[str, int]:
        rendered.append(len(text))
        return real(text, **kwargs)

    monkeypatch.setattr(markdown, "render_part", render_part)
    body = python_code(500)
    text = "".join(f"Paragraph {i} of words, words and words.\n\n" for i in range(60)) + "```python\n" + body
    view = streamed_view(qtbot, text, len(text))
    code = next(w for w in parts(view) if isinstance(w, CodeStream))
    assert [code_lines.colours(line) for line in code.shown_lines()] == highlighted(body.rstrip("\n"), "python")
    assert rendered and max(rendered) <= MAX_RENDER_CHARS < len(body) // 4, rendered


def test_a_text_replaced_while_its_code_block_is_checked_shows_the_new_text(qtbot: Any) -> None:
    """A provider that replaces its output while the closed block is being checked: the check of the
    removed block stops with it, and the new text shows."""
    view = MarkdownStream()
    qtbot.addWidget(view)
    text = "```python\n" + python_code(200) + "```\n"
    for start in range(0, len(text), 500):
        view.append(text[start:start + 500])
    qtbot.waitUntil(lambda: not view.pending, timeout=60_000)
    assert view.checking
    view.set_text("Something else.")
    for _ in range(20):
        QApplication.processEvents()
    assert not view.checking and not [w for w in parts(view) if isinstance(w, CodeStream)]
    assert [w.toPlainText() for w in parts(view) if isinstance(w, AutoHeightText) and w.markdown] == ["Something else."]


@pytest.mark.parametrize("odd", ["x = 1\ry = 2\n", "a\x00b\n"])
def test_a_carriage_return_coming_in_a_streaming_block_shows_the_code_once(qtbot: Any, odd: str) -> None:
    """markdown-it rewrites carriage returns and NULs, so a block holding one is not grown in a CodeStream: one
    arriving while the block streams in a CodeStream has the block rendered as the rest of the text is, from its
    start, and the CodeStream, which showed it so far, goes (it stayed, and the code was shown twice)."""
    text = "```text\n" + "pad = 1\n" * 300 + odd + "more\n```\n"
    view = streamed_view(qtbot, text, 300)
    shown = parts(view)
    assert not [w for w in shown if isinstance(w, CodeStream)]
    assert sum(w.toPlainText().count("pad = 1") for w in shown if isinstance(w, AutoHeightText)) == 300


def test_a_minified_line_that_comes_in_a_burst_shows_no_line_break_while_it_streams(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst (a flush of several thousand characters, faster than the block is shown) is caught up a share a turn,
    each share cut in paragraphs about LONG_LINE_CHARS long; the live paragraph, laid out in the last turn, showed the
    rows of the first cut only, and each later cut of the turn ended where it was made: a line break the text does not
    have ('"name": "it' / 'em 57"'), until the block closed. Now each paragraph ends where a row starts, found by
    laying out the paragraph alone with a row's worth of what follows it; the block made in the turn the burst came
    (no width yet) waits for its first paint. After every share shown, the rows are those of the line shown whole,
    but for the last (still being written)."""
    text = "Here:\n\n```json\n[" + ",".join(
        f'{{"id": {i}, "name": "item {i}", "tags": ["a", "b"], "ok": {str(i % 2 == 0).lower()}, "score": {i * 1.5}}}'
        for i in range(400)) + "]\n```\n\nDone.\n"
    shares: list[tuple[list[str], str, int]] = []  # the rows shown after each share, the block so far, its width
    real_grow = CodeStream.grow

    def grow(code: CodeStream, *args: Any, **kwargs: Any) -> bool:
        more = real_grow(code, *args, **kwargs)
        if code.isVisible():
            shares.append((streamed_rows(code), code.markdown, code.pieces[0].viewport().width()))
        return more

    monkeypatch.setattr(CodeStream, "grow", grow)
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    QApplication.processEvents()
    half = text.index('"id": 300,')
    view.append(text[:half // 2])  # two bursts, the second while the first is caught up
    QApplication.processEvents()
    view.append(text[half // 2:half])
    qtbot.waitUntil(lambda: not view.pending, timeout=60_000)  # bounds a hang
    assert len(shares) >= 4  # the catch-up took turns
    for turn, (shown, source, width) in enumerate(shares):
        whole = whole_rows(source, width, view)
        assert shown[:-1] == whole[:len(shown) - 1], f"share {turn}: a line break the text does not have"
    code = next(w for w in parts(view) if isinstance(w, CodeStream))
    paragraphs = [b for piece in code.pieces for b in all_blocks(piece.document())]
    assert len(paragraphs) > 10  # cut: no flush laid the whole line out
    assert max(len(b.text()) for b in paragraphs) < 2 * code_lines.LONG_LINE_CHARS + MAX_RENDER_CHARS
    assert code._cut_width == code.recent.viewport().width()  # every cut at a row: the closing check keeps them
