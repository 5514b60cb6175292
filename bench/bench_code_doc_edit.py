"""A streamed code block's document edits alone: its lines written into a piece's document, laid out, painted.

bench_ui_streaming's three code answers (JSON on one line, Python, C++) are lexed as a :class:`CodeStream` has them
(:class:`~ui.chat.view.code_lines.CodeLines`: finished lines, a long line cut in paragraphs), then written into one
document laid out 1,100 px wide (the code font, no text shaping, as a piece) by
:func:`ui.chat.view.code_draw.replace_lines`, ``LINES`` lines an edit (the last shown line given again with its end
changed first, as the line being written is), and the document laid out; then painted whole, a screen (900 px) at a
time, into an image (each round starts with no colour ranges kept from an earlier one). No window, no lexing in the timings: the document's own work. For each answer, the window
thread's CPU (``time.thread_time``) per KB of code, the median of ``ROUNDS`` rounds, for writing and laying out, and
for painting; with the load average. Run offscreen:
``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_code_doc_edit.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_ui_streaming as bus  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "5"))
LINES = int(os.environ.get("LINES", "30"))
WIDTH, SCREEN = 1100, 900


def lines_of(text: str) -> list[Any]:
    """A code answer's lines as a streamed block shows them (a line over LONG_LINE_CHARS cut in paragraphs)."""
    from ui.chat.view.code_lines import LONG_LINE_CHARS, LOOKAHEAD_CHARS, CodeLines

    opener, code = text.split("\n", 1)
    code = code.rsplit("```", 1)[0].rstrip("\n") + "\n"
    lines = CodeLines(opener.strip("`") or None)
    out: list[Any] = []
    for line in code.splitlines(keepends=True):
        while len(line) > LONG_LINE_CHARS + LOOKAHEAD_CHARS:
            size, part = lines.cut(line)
            out.append(part)
            line = line[size:]
        done = lines.finished(line)
        if done and lines.head_runs:  # (its first runs are the cut paragraphs': shown already)
            done[0] = done[0][lines.head_runs:]
        out += done
    return out


def one_round(lines: list[Any]) -> tuple[float, float]:
    """CPU seconds writing and laying out ``lines``, then painting them."""
    from PySide6.QtCore import QRectF, QSizeF
    from PySide6.QtGui import QFont, QImage, QPainter, QTextDocument

    from ui import theme
    from ui.chat.view import code_draw

    doc = QTextDocument()
    font = QFont(theme.mono_family())
    font.setStyleStrategy(QFont.StyleStrategy.PreferNoShaping)
    doc.setDefaultFont(font)
    doc.setUndoRedoEnabled(False)
    doc.setDocumentMargin(0)
    doc.setPageSize(QSizeF(WIDTH, -1))
    shown: list[Any] = []
    getattr(code_draw, "_RANGES", {}).clear()  # (each round as a first answer: no colour ranges made yet)
    cpu = time.thread_time()
    for end in range(LINES, len(lines) + LINES, LINES):
        if shown:  # the line being written, its end changed first
            last = shown[-1]
            cut = (*last[:-1], (last[-1][0], last[-1][1][:-1])) if last and last[-1][1] else last
            code_draw.replace_lines(doc, shown, [*shown[:-1], cut], wrap=True)
            shown = [*shown[:-1], cut]
        new = lines[:end]
        code_draw.replace_lines(doc, shown, new, wrap=True)
        shown = new
        doc.size()  # laid out
    written = time.thread_time() - cpu
    image = QImage(WIDTH, SCREEN, QImage.Format.Format_ARGB32_Premultiplied)
    cpu = time.thread_time()
    top, height = 0.0, doc.size().height()
    while top < height:
        painter = QPainter(image)
        painter.translate(0, -top)
        doc.drawContents(painter, QRectF(0, top, WIDTH, SCREEN))
        painter.end()
        top += SCREEN
    return written, time.thread_time() - cpu


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from ui import theme

    app = QApplication.instance() or QApplication([])
    theme.apply_theme(app, "light")  # type: ignore[arg-type]
    for name, make in bus.CODE_ANSWERS.items():
        lines = lines_of("".join(make()))
        kb = sum(len(text) for line in lines for _style, text in line) / 1000
        one_round(lines)  # warms up
        rounds = [one_round(lines) for _ in range(ROUNDS)]
        write = statistics.median(r[0] for r in rounds) * 1000 / kb
        paint = statistics.median(r[1] for r in rounds) * 1000 / kb
        print(f"{name:>13}: written and laid out {write:.3f} ms/KB, painted {paint:.3f} ms/KB (window thread CPU, "
              f"median of {ROUNDS}; {kb:.0f} KB, {len(lines)} paragraphs, {LINES} an edit; "
              f"load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
