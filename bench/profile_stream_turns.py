"""Where the window's worst passes of the event loop go while an answer streams (bench_ui_streaming's run).

The prose answer of ``bench_ui_streaming --answers`` (or, with ``--answer list`` or ``--answer table``, the 50 KB list
or table answer of its ``--lists``; with ``--answer json_one_line``, ``python`` or ``cpp``, one of its code answers)
streams into the real window. A pass is the time between two
ticks of that bench's 2 ms stall timer; in each, the window thread's CPU (``time.thread_time``) is split into what
the chat's streamed Markdown does: its renders (how many, and the characters of Markdown they render), inside them
the Markdown rendered to HTML and the document edits (``setHtml``, inserted fragments: Qt lays a shown document out
inside them), a new segment made and shown (its document laid out at the column's width then), a segment resized (a
width that changed lays its document out again), the window's paint and each segment's in it, the
bridge's flush, and a code block's parts (its grow, and in it a long line cut and each cut lexed, the lines lexed, its
pieces' document edits, a new piece made; a piece's paint and resize; the closed block's check); the rest is the token loop feeding the bridge and Qt's own events (layout requests, polish). Each
part says how many times it ran; ``--spans`` lists each printed pass's spans in order too, nested ones indented. The
worst passes of the last of ``ROUNDS`` rounds (the first warms up) are printed, then the median pass holding a
flush. Run offscreen: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/profile_stream_turns.py [--answer table]``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_ui_streaming as bus  # noqa: E402
from scratch import scratch_dir  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "2"))
#: ``--spans``: each pass printed also lists its spans in order, nested ones indented.
SHOW_SPANS = "--spans" in sys.argv[1:]
#: Spans of work: (start, end, CPU start, CPU end, part, how deep it is nested in other spans).
Span = tuple[float, float, float, float, str, int]
SPANS: list[Span] = []
_DEPTH = [0]


def timed(owner: Any, attr: str, part: str, *, when: Callable[..., bool] | None = None) -> None:
    """``owner.attr`` noted as a span of ``part`` each time it runs (when ``when(*args)`` says so)."""
    original = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if when is not None and not when(*args):
            return original(*args, **kwargs)
        wall, cpu = time.perf_counter(), time.thread_time()
        _DEPTH[0] += 1
        try:
            return original(*args, **kwargs)
        finally:
            _DEPTH[0] -= 1
            SPANS.append((wall, time.perf_counter(), cpu, time.thread_time(), part, _DEPTH[0]))

    setattr(owner, attr, wrapper)


def instrument() -> list[int]:
    """Time the parts (before the window is made: Qt looks a Python override up once per object); returns the list
    the characters of each Markdown render go to."""
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QTextCursor
    from PySide6.QtWidgets import QTextBrowser

    from ui import bridge, markdown
    from ui.chat.view import code_draw, code_lines, code_stream, stream
    from ui.main_window import MainWindow
    from ui.widgets import common

    chars: list[int] = []
    render_part = markdown.render_part

    def counted(text: str, **kwargs: Any) -> tuple[str, int]:
        chars.append(len(text))
        return render_part(text, **kwargs)

    markdown.render_part = counted  # type: ignore[assignment]
    timed(markdown, "render_part", "markdown to HTML")
    timed(stream.MarkdownStream, "_render", "render")
    timed(bridge.RunBridge, "_flush_text", "bridge flush")
    timed(QTextBrowser, "setHtml", "setHtml")
    timed(QTextCursor, "insertFragment", "insert fragment")
    timed(common.AutoHeightText, "__init__", "new segment made")
    timed(common.AutoHeightText, "event", "new segment shown",
          when=lambda _self, event: event.type() == QEvent.Type.MetaCall)
    timed(MainWindow, "event", "window paint", when=lambda _self, event: event.type() == QEvent.Type.UpdateRequest)
    timed(common.AutoHeightText, "paintEvent", "segment paint")
    timed(common.AutoHeightText, "resizeEvent", "segment resized")
    # A code block's parts (the code answers): its grow, and in it the long line cut, the lines lexed, the document edits
    timed(code_stream.CodeStream, "grow", "code grow")
    timed(code_stream.CodeStream, "_cut_long_line", "cut long line")
    timed(code_lines.CodeLines, "cut", "lex cut")
    timed(code_lines.CodeLines, "live", "lex live")
    timed(code_lines.CodeLines, "finished", "lex lines")
    timed(code_draw, "replace_lines", "doc edit")
    timed(code_stream.Piece, "__init__", "new piece")
    timed(code_stream.Piece, "paintEvent", "piece paint")
    timed(code_stream.Piece, "resizeEvent", "piece resized")
    timed(code_stream.CodeStream, "_check_step", "code check")
    return chars


def breakdown(gap: tuple[float, float, float, float], spans: list[Span], chars_at: list[tuple[float, int]]) -> str:
    start, end, cpu0, cpu1 = gap
    inside = [s for s in spans if s[0] >= start and s[1] <= end]
    parts: dict[str, float] = {}
    counts: dict[str, int] = {}
    for s in inside:
        parts[s[4]] = parts.get(s[4], 0.0) + (s[3] - s[2]) * 1000
        counts[s[4]] = counts.get(s[4], 0) + 1
    top = sum((s[3] - s[2]) * 1000 for s in inside if not s[5])
    renders = sum(1 for s in inside if s[4] == "render")
    rendered = sum(n for at, n in chars_at if start <= at <= end)
    out = [f"{(end - start) * 1000:5.1f} ms wall, {(cpu1 - cpu0) * 1000:5.1f} ms CPU: {renders} render(s), "
           f"{rendered} characters of Markdown rendered"]
    out += [f"    {part:<20} {ms:5.2f} ms CPU ({counts[part]}x)" for part, ms in sorted(parts.items(), key=lambda kv: -kv[1])]
    out.append(f"    {'the rest':<20} {(cpu1 - cpu0) * 1000 - top:5.2f} ms CPU (the token loop, Qt's own events)")
    if SHOW_SPANS:  # the pass's spans in the order they began, nested ones indented under theirs
        out.append("    in order:")
        out += [f"      {'  ' * s[5]}{s[4]:<20} {(s[3] - s[2]) * 1000:5.2f} ms CPU"
                for s in sorted(inside, key=lambda s: s[0])]
    return "\n".join(out)


def main() -> int:
    home = scratch_dir("robotlab-bench-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    from ui.app import Application, get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    chars = instrument()
    root = Application(provider=bus.NetworkLikeProvider(), db_path=home / "bench.db")
    root.window.resize(1400, 900)
    root.window.show()
    gaps: list[tuple[float, float, float, float]] = []
    chars_at: list[tuple[float, int]] = []

    class Meter(bus.StallMeter):
        def _tick(self) -> None:
            now, cpu = time.perf_counter(), time.thread_time()
            gaps.append((self.last, now, self.last_cpu, cpu))
            chars_at.extend((now, n) for n in chars)  # (the end of the pass they were rendered in)
            chars.clear()
            super()._tick()

    bus.StallMeter = Meter  # type: ignore[misc]  # bench_answer's meter
    args = sys.argv[1:]
    name = args[args.index("--answer") + 1] if "--answer" in args else "prose"
    answers = {**bus.LIST_ANSWERS, **bus.CODE_ANSWERS}
    prose = answers[name]() if name in answers else bus.make_tokens(bus.TOKENS)
    try:
        with loop:
            loop.run_until_complete(asyncio.sleep(1.0))  # the Markdown libraries load
            while any(task.get_name() == "load the Markdown libraries" for task in root.tasks.tasks):
                loop.run_until_complete(asyncio.sleep(0.05))
            for _ in range(ROUNDS):
                SPANS.clear()
                gaps.clear()
                chars_at.clear()
                result = loop.run_until_complete(bus.bench_answer(root, prose))
            loop.run_until_complete(root.aclose())
    finally:
        if not loop.is_closed():
            loop.close()
    gaps = gaps[1:]  # the first "pass" starts at the meter's start
    print(f"{name}: {result['kb_per_s']} KB/s, worst stall {result['worst_stall_ms']} ms "
          f"(load average {os.getloadavg()[0]:.1f}); {len(gaps)} passes")
    for gap in sorted(gaps, key=lambda g: g[3] - g[2], reverse=True)[:3]:
        print("worst pass by CPU: " + breakdown(gap, SPANS, chars_at))
    flushes = [s for s in SPANS if s[4] == "bridge flush"]
    with_flush = sorted((g for g in gaps if any(g[0] <= s[0] <= g[1] for s in flushes)), key=lambda g: g[3] - g[2])
    if with_flush:
        median = with_flush[len(with_flush) // 2]
        print(f"median pass holding a flush (of {len(with_flush)}): " + breakdown(median, SPANS, chars_at))
        cpus = [(g[3] - g[2]) * 1000 for g in with_flush]
        print(f"passes holding a flush: CPU median {statistics.median(cpus):.1f} ms, worst {max(cpus):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
