"""A streamed code block's pieces are written with a cursor, their text plain and their colours their paragraphs'
layouts' formats (never their HTML set): what a finished block shows is what its code rendered at once shows, character for character
(the same text, the same format: colour, weight, slant, font), paragraph for paragraph (the same wrap),
whatever the language, the theme and how the answer was cut in tokens; Copy copies exactly the code."""

from __future__ import annotations

import random
from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication, QTextDocument
from PySide6.QtWidgets import QApplication

from tests.fakes.rendered_markdown import drawn_runs
from ui import markdown, theme
from ui.chat.view.code_stream import CodeStream
from ui.chat.view.stream import MarkdownStream


@pytest.fixture(autouse=True)
def _app(qapp_instance: object) -> None:
    return None


def code_for(language: str | None, seed: int) -> str:
    """About 5 KB of code in ``language`` with what highlighting and HTML must both get right: entities,
    quotes, tabs, non-ASCII text, empty lines, strings and comments, lines of various lengths."""
    rng = random.Random(seed)
    words = ("alpha", "beta", "<tag>", "a & b", "ünï", "日本", "x\ty", "'q'", '"dq"', "#", "//", "/*", "*/", "{", "}")
    out: list[str] = ["start\n"]  # (a first empty line: Qt's HTML import drops a newline just after <pre>)
    i = 0
    while sum(map(len, out)) < 5_000:
        i += 1
        w = " ".join(rng.choice(words) for _ in range(rng.randint(0, 6)))
        if language == "python":
            out.append(rng.choice([f"def f_{i}(x):\n    return x * {i}  # {w}\n", f"s_{i} = {w!r}\n", "\n",
                                   f'    """{w}"""\n', f"\tvalue_{i} = [{i}, {i}.5, None]\n"]))
        elif language == "cpp":
            out.append(rng.choice([f"int f_{i}(int x) {{ return x * {i}; }}  // {w}\n", f'auto s_{i} = "{w}";\n',
                                   "\n", f"/* {w} */\n", f"#include <v_{i}>\n"]))
        elif language == "json":
            out.append(rng.choice([f'  {{"k_{i}": {i}, "s": "{w}", "n": null, "t": true}},\n', "\n"]))
        elif language == "bash":
            out.append(rng.choice([f'echo "{w}" | grep -v x_{i}  # c\n', f"export V_{i}=$HOME/{i}\n", "\n"]))
        else:
            out.append(f"{w} {i}\n")
    return "".join(out)


def stream_block(qtbot: Any, language: str | None, code: str, seed: int) -> CodeStream:
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    text = f"```{language or ''}\n{code}"
    rng = random.Random(seed)
    pos = 0
    while pos < len(text):
        size = rng.choice([1, 3, 5, 40, 200])
        view.append(text[pos:pos + size])
        pos += size
        if rng.random() < 0.5:
            QApplication.processEvents()
    view.append("```\n")
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)  # bounds a hang
    codes = view.findChildren(CodeStream)
    assert len(codes) == 1, "the block grew in a CodeStream"
    return codes[0]


def characters(doc: QTextDocument) -> list[tuple[str, dict[int, Any]]]:
    """Each character of ``doc`` (a paragraph's end as "\\n") with its format's properties."""
    out: list[tuple[str, dict[int, Any]]] = []
    block = doc.begin()
    while block.isValid():
        for text, drawn in drawn_runs(block):
            props = drawn.properties()
            out += [(ch, props) for ch in text]
        out.append(("\n", {}))
        block = block.next()
    return out


def paragraph_formats(doc: QTextDocument) -> list[dict[int, Any]]:
    out, block = [], doc.begin()
    while block.isValid():
        out.append(block.blockFormat().properties())
        block = block.next()
    return out


def rendered_at_once(code: str, language: str | None, *, wrap: bool) -> QTextDocument:
    """The code rendered at once, as a code block's lines are (its highlighted HTML in the block's pre)."""
    doc = QTextDocument()
    doc.setDocumentMargin(0)
    doc.setHtml(markdown.code_lines_html(markdown.highlight(code, language), wrap=wrap))
    return doc


def shown(code: CodeStream) -> QTextDocument:
    """The pieces shown, one after the other, as one document (each piece's text in the formats it is drawn in)."""
    doc = QTextDocument()
    cursor = doc.rootFrame().lastCursorPosition()
    first = True
    for piece in code.pieces:
        if piece.isHidden():
            continue
        block = piece.document().begin()
        while block.isValid():
            if not first:
                cursor.insertBlock(block.blockFormat(), block.charFormat())
            else:
                cursor.setBlockFormat(block.blockFormat())
                cursor.setBlockCharFormat(block.charFormat())
                first = False
            for text, drawn in drawn_runs(block):
                cursor.insertText(text, drawn)
            block = block.next()
    return doc


@pytest.mark.parametrize("theme_name", ["light", "dark"])
@pytest.mark.parametrize("language", ["python", "cpp", "json", "bash", None])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_finished_streamed_block_shows_each_character_as_rendering_it_at_once(
        qtbot: Any, language: str | None, seed: int, theme_name: str) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply_theme(app, theme_name)
    try:
        code = code_for(language, seed)
        block = stream_block(qtbot, language, code, seed)
        assert block.code == code.rstrip("\n")
        streamed, whole = shown(block), rendered_at_once(block.code, language, wrap=True)
        got, expected = characters(streamed), characters(whole)
        assert "".join(ch for ch, _f in got) == "".join(ch for ch, _f in expected) == block.code + "\n"
        for at, ((ch, fmt), (_ch, want)) in enumerate(zip(got, expected, strict=True)):
            assert fmt == want, f"character {at} ({ch!r}) of line {block.code[:at].count(chr(10)) + 1}"
        assert len({str(f) for _ch, f in got}) > (2 if language else 0)  # colours the test can tell apart
        assert paragraph_formats(streamed) == paragraph_formats(whole)
        # Wrap off: every paragraph is drawn again, still character for character the code rendered at once.
        block.set_wrap(False)
        unwrapped = rendered_at_once(block.code, language, wrap=False)
        assert characters(shown(block)) == characters(unwrapped)
        assert paragraph_formats(shown(block)) == paragraph_formats(unwrapped)
        board = QGuiApplication.clipboard()
        block.header.linkActivated.emit(f"{markdown.COPY_SCHEME}:0")
        assert board.text() == code.rstrip("\n")
    finally:
        theme.apply_theme(app, "light")


def _lines_drawn(doc: Any) -> list[list[tuple[str, Any]]]:
    """Each paragraph's characters and their formats as drawn."""
    lines: list[list[tuple[str, Any]]] = [[]]
    for ch, fmt in characters(doc):
        if ch == "\n":
            lines.append([])
        else:
            lines[-1].append((ch, fmt))
    return lines


@pytest.mark.parametrize("odd", ["\u2029", "\ufdd0", "\ufdd1", "\ud83d"])
def test_a_paragraph_separator_in_a_line_keeps_the_line_one_paragraph(qtbot: Any, odd: str) -> None:
    """A line is one paragraph of its piece (the line being written is found by its number, a line's colours are
    its paragraph's): what a document takes for a paragraph's end (the paragraph separator U+2029, Qt's frame marks
    U+FDD0 and U+FDD1) is drawn as a line separator or the replacement character, and a lone surrogate (half an
    escaped pair, as ``json.loads`` gives it) is one position of the document; every line shows what it is, in the
    colours the same code with an ``x`` there has (a lone surrogate is read back from Qt as nothing: its lines are
    counted, the others compared)."""
    code = "start\n" + "".join(f"s_{i} = 'a{odd}b {i}'  # c{odd}d\n" if i % 7 == 3 else f"t_{i} = 'ab {i}'  # cd\n"
                               for i in range(200))
    block = stream_block(qtbot, "python", code, 4)
    doc = shown(block)
    assert doc.blockCount() == block.code.count("\n") + 1
    got = _lines_drawn(doc)
    plain = _lines_drawn(shown(stream_block(qtbot, "python", code.replace(odd, "x"), 4)))
    assert len(got) == len(plain) == code.count("\n") + 1
    drawn = {"\u2029": "\u2028", "\ufdd0": "\ufffd", "\ufdd1": "\ufffd"}.get(odd)
    for number, (line, want, source) in enumerate(zip(got, plain, [*code.split("\n")], strict=True)):
        if odd in source and drawn is None:
            continue
        assert "".join(ch for ch, _f in line) == source.replace(odd, drawn or ""), number
        assert [f for _ch, f in line] == [f for _ch, f in want], number


@pytest.mark.parametrize("language", ["python", "json"])
def test_characters_beyond_the_bmp_keep_the_colours_after_them_in_place(qtbot: Any, language: str) -> None:
    """A paragraph's colours are ranges in its layout, counted in UTF-16 units as Qt counts a document's
    positions: a character beyond the BMP (an emoji: two units) on a line, and on the line being written as it
    grows, leaves the runs after it in their colours."""
    if language == "python":
        code = "start\n" + "".join(f"s_{i} = '\U0001F600 {i}' + \"\U0001F680\"  # \U0001F4A1 n\n" for i in range(120))
    else:
        code = "[\n" + "".join(f'  {{"k\U0001F600{i}": "\U0001F680 v", "n": {i}}},\n' for i in range(120)) + "  {}\n]\n"
    block = stream_block(qtbot, language, code, 5)
    streamed, whole = shown(block), rendered_at_once(block.code, language, wrap=True)
    got, expected = characters(streamed), characters(whole)
    assert "".join(ch for ch, _f in got) == "".join(ch for ch, _f in expected)
    for at, ((ch, fmt), (_ch, want)) in enumerate(zip(got, expected, strict=True)):
        assert fmt == want, f"character {at} ({ch!r})"
