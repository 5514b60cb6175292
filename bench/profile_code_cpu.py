"""Where a streamed code block's window CPU per KB goes, against prose's (bench_ui_streaming's answers).

The prose answer and the three code answers of ``bench_ui_streaming --answers`` stream into the real window, as
fast as they go, ``ROUNDS`` times each after a round that warms up, one answer after the other (so each part's
figures come from the same period of a shared machine). For each, the window thread's CPU (``time.thread_time``)
per KB of the answer, and inside it the parts the chat's view and a code block do, each timed where it runs
(its own time, the calls it makes included; a part called inside the same part counted once):

* ``view``: the presenter given a (joined) delta, the view's ``append``, and every render of the streamed
  Markdown (at once, or left for a later turn of the loop); ``render``: the renders alone;
* ``grow``: a code block's part of them (:meth:`~ui.chat.view.code_stream.CodeStream.grow`), and in it the finished
  lines lexed (``lex lines``, :meth:`~ui.chat.view.code_lines.CodeLines.finished`), the line being written lexed
  (``lex live``), the pieces' documents edited (``doc edit``: the runs inserted, the layout at the edit's end), a
  new piece made (``new piece``);
* ``check``: the closed block checked against its whole highlight (its first slices run while the last text is
  shown);
* the rest: the token loop (the bench's events, the bridge's fast path: a code KB is about half as many tokens
  again as prose's) and Qt's own events (layout requests, paint, the stall timer).

Beside them, the answer's tokens, renders and paints per KB (a render and a paint are per turn of the loop: a
turn's fixed costs weigh on a KB as the KB a turn carries do not). Medians over the rounds, with the load average
of each round. Run offscreen:
``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/profile_code_cpu.py``.
"""

from __future__ import annotations

import asyncio
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
from scratch import scratch_dir  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "3"))
#: CPU seconds per part in the answer streaming now.
SPENT: dict[str, float] = {}
#: How many times each part ran (outermost calls) in the answer streaming now.
CALLS: dict[str, int] = {}
_RUNNING: set[str] = set()


def timed(owner: Any, attr: str, part: str) -> None:
    """``owner.attr``'s window CPU added to ``part`` each time it runs (not again when it runs inside itself)."""
    original = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if part in _RUNNING:
            return original(*args, **kwargs)
        _RUNNING.add(part)
        cpu = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[part] = SPENT.get(part, 0.0) + time.thread_time() - cpu
            CALLS[part] = CALLS.get(part, 0) + 1
            _RUNNING.discard(part)

    setattr(owner, attr, wrapper)


def instrument() -> None:
    from ui.chat.model.presenter import ChatPresenter
    from ui.chat.view.code_lines import CodeLines
    from ui.chat.view.code_stream import CodeStream, Piece
    from ui.chat.view.stream import MarkdownStream
    from ui.widgets.common import AutoHeightText

    timed(MarkdownStream, "_render", "render")
    timed(ChatPresenter, "feed", "view")  # the two together: what the presenter and the view do in all
    timed(MarkdownStream, "_render", "view")
    timed(CodeStream, "grow", "grow")
    timed(CodeLines, "finished", "lex lines")
    timed(CodeLines, "live", "lex live")
    timed(CodeStream, "_set", "doc edit")
    timed(CodeStream, "_piece", "new piece")
    timed(CodeLines, "cut", "lex cut")
    timed(CodeStream, "_check_step", "check")
    timed(Piece, "paintEvent", "paint")  # (the view's text widgets' paint: a piece's and a Markdown segment's)
    timed(AutoHeightText, "paintEvent", "paint")


PARTS = ("view", "render", "grow", "lex lines", "lex live", "lex cut", "doc edit", "new piece", "check", "paint")


def main() -> int:
    home = scratch_dir("robotlab-bench-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    instrument()
    from ui.app import Application, get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    root = Application(provider=bus.NetworkLikeProvider(), db_path=home / "bench.db")
    root.window.resize(1400, 900)
    root.window.show()
    answers = {"prose": bus.make_tokens(bus.TOKENS), **{name: make() for name, make in bus.CODE_ANSWERS.items()}}
    rows: dict[str, list[tuple[float, dict[str, float], float, float]]] = {name: [] for name in answers}
    turns: dict[str, list[tuple[float, float]]] = {name: [] for name in answers}  # renders and paints per KB
    try:
        with loop:
            bus.wait_for_lexers(loop, root)
            for round_ in range(ROUNDS + 1):
                for name, tokens in answers.items():
                    SPENT.clear()
                    CALLS.clear()
                    cpu = time.thread_time()
                    result = loop.run_until_complete(bus.bench_bridge(root, tokens))
                    while any(getattr(w, "checking", False) for w in root.window.chat.items()):
                        loop.run_until_complete(asyncio.sleep(0.001))  # the check's CPU is the answer's too
                    cpu = time.thread_time() - cpu
                    kb = sum(map(len, tokens)) / 1000
                    if round_:  # the first round warms up
                        rows[name].append((cpu / kb * 1000, {k: v / kb * 1000 for k, v in SPENT.items()},
                                           result["kb_per_s"], os.getloadavg()[0]))
                        turns[name].append((CALLS.get("render", 0) / kb, CALLS.get("paint", 0) / kb))
            loop.run_until_complete(root.aclose())
    finally:
        if not loop.is_closed():
            loop.close()
    prose = statistics.median(r[0] for r in rows["prose"])
    for name, found in rows.items():
        total = statistics.median(r[0] for r in found)
        parts = {part: statistics.median(r[1].get(part, 0.0) for r in found) for part in PARTS}
        tokens_per_kb = len(answers[name]) / (sum(map(len, answers[name])) / 1000)
        print(f"{name:>13}: window thread CPU {total:.2f} ms/KB ({total / prose:.2f} x prose's), "
              + ", ".join(f"{part} {ms:.2f}" for part, ms in parts.items() if ms >= 0.005)
              + f", the rest {total - parts['view'] - parts['check'] - parts['paint']:.2f}"
              f" ({tokens_per_kb:.0f} tokens/KB, {statistics.median(t[0] for t in turns[name]):.2f} renders and "
              f"{statistics.median(t[1] for t in turns[name]):.2f} paints per KB); "
              f"{statistics.median(r[2] for r in found):.0f} KB/s; median of "
              f"{len(found)} rounds (load average " + ", ".join(f"{r[3]:.1f}" for r in found) + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
