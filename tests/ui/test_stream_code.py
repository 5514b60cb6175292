"""A long code block streamed into a MarkdownStream grows in place: its finished lines are highlighted
once, and what the segments show at the end is exactly what rendering their Markdown whole shows."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from ui import markdown
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
    "still open at the end": "```python\n" + python_code(150),
    "language change": ("```python\n" + python_code(80) + "```\n\n```javascript\n"
                        + "".join(f"const a{i} = `t ${{x}}`; /* c */\n" for i in range(80)) + "```\n"),
    "a lexer rule over lines (heredoc)": "```bash\n" + bash_code(120) + "```\nafter\n",
    "a long line": "```python\n" + python_code(40) + "x = '" + "y" * (3 * MAX_RENDER_CHARS) + "'\n"
                   + python_code(40) + "```\n",
    "plain, no language": "```\n" + "".join(f"<tag> & line {i}\n" for i in range(200)) + "```\n",
}


def stream(qtbot: Any, text: str, chunk: int) -> MarkdownStream:
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    for start in range(0, len(text), chunk):
        view.append(text[start:start + chunk])
        QApplication.processEvents()
    for _ in range(2000):
        if not view.pending:
            break
        QApplication.processEvents()
        QApplication.instance().thread().msleep(2)  # type: ignore[union-attr]
    assert not view.pending
    return view


def segments(view: MarkdownStream) -> list[AutoHeightText]:
    found = [view._layout.itemAt(i).widget() for i in range(view._layout.count())]  # type: ignore[union-attr]
    return [w for w in found if isinstance(w, AutoHeightText)]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("chunk", [7, 61, 100_000])
def test_a_streamed_code_block_shows_what_rendering_it_whole_shows(qtbot: Any, name: str, chunk: int) -> None:
    text = CASES[name]
    view = stream(qtbot, text, chunk)
    shown = segments(view)
    for segment in shown:
        if not segment.markdown:
            continue
        whole = AutoHeightText()
        qtbot.addWidget(whole)
        whole.set_markdown(segment.markdown)
        assert segment.toHtml() == whole.toHtml(), segment.markdown[:60]
        assert segment.toPlainText() == whole.toPlainText()
    assert view.text == text


def test_a_segment_is_the_markdown_it_shows(qtbot: Any) -> None:
    text = CASES["closing fence then prose"]
    view = stream(qtbot, text, 61)
    assert "".join(s.markdown or "" for s in segments(view)) == text


def test_finished_lines_are_highlighted_once(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lexer sees each finished line about once (plus the line being written, and the lines of a
    string still open), not the whole block on every flush; the block is set as HTML once."""
    lexed: list[int] = []
    real_lex = markdown._lex_from

    def counting(lexer: Any, text: str, stack: tuple[str, ...]) -> Any:
        lexed.append(len(text))
        return real_lex(lexer, text, stack)

    whole: list[int] = []
    real_highlight = markdown.highlight

    def highlight(code: str, language: str | None) -> str:
        whole.append(len(code))
        return real_highlight(code, language)

    sets: list[int] = []
    real_set = AutoHeightText.setHtml

    def set_html(self: AutoHeightText, html: str) -> None:
        sets.append(len(html))
        real_set(self, html)

    monkeypatch.setattr(markdown, "_lex_from", counting)
    monkeypatch.setattr(markdown, "highlight", highlight)
    monkeypatch.setattr(AutoHeightText, "setHtml", set_html)
    code = python_code(1500)  # ~60 KB
    chunk = 40
    view = stream(qtbot, "```python\n" + code + "```\n", chunk)
    assert len(code) > 50_000
    flushes = len(code) // chunk
    # Every flush re-lexes at most the open string's lines and the open line; the whole block would be
    # flushes * len(code) / 2 (about 45 million characters here).
    assert sum(lexed) < 12 * len(code), sum(lexed)
    big = [n for n in whole if n > FREEZE_CHARS]
    assert len(big) <= 2, big  # entering the block (small then) and the check once it closed, off the loop
    assert len([n for n in sets if n > 10 * FREEZE_CHARS]) == 0  # never the whole block as HTML again
    assert flushes > 1000
    assert [s.markdown for s in segments(view) if s.markdown] == ["```python\n" + code + "```\n"]
