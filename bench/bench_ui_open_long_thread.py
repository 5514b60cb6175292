"""Opening a long thread in the window: what the window's thread pays before the first paint.

Threads of 100 and 10,000 turns (each: the user's message, an answer with a tool call and its result, a
final answer; built as ``bench_ui_thread_scale`` builds them) in fresh databases, then, several times each (``RUNS``,
7, and ``WINDOW_RUNS``, 3, in the environment)
(median and fastest printed, with the load average):

- the branch's ids read whole (``Store.path_ids``: one recursive query from the leaf to the root);
- a ``LazyTranscript`` made (what the window reads of the branch before showing it);
- first paint in a chat view (``ChatView.show_thread`` to the first frame rendered, as the scale bench
  measures it);
- in the window: the step that opens the thread (``Threads.open``, the click's handler: its wall time and the
  window's thread's CPU time in it) and the first paint of the chat after the click; the longest turn of the
  event loop after the click until the turns on screen are all widgets (wall, and the window's thread's CPU
  in it), how many turns of the event loop did work until then (over 1 ms of that CPU) and when it was done;
  then a search hit 2,000 turns up (turn 5 of a shorter thread) opened
  (``Threads.open_result``): the step of the click, the longest turn of the event loop until the hit
  shows (its wall time, and the window's thread's own CPU time in it: on a loaded machine the wall time is
  mostly waiting for a core), the time until it shows and the window's thread's CPU time until then.

Targets printed: the 10,000-turn first paint within 1.5 x the 100-turn one; opening a thread, and a search hit
far up, holds the window no longer than a frame at a time on a quiet machine (< 50 ms busy). Writes
bench/results/ui_open_long_thread.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scratch import leave, scratch_dir

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (100, 10000)
RUNS = int(os.environ.get("RUNS", "7"))
WINDOW_RUNS = int(os.environ.get("WINDOW_RUNS", "3"))
#: The search hit opened is this many turns above the branch's end (or turn 5 of a shorter one): every turn
#: below it is replayed to show it, a few ms each, so turn 5 of 10,000 would take minutes on a busy machine.
HIT_DEPTH = 2000


def _figures(times: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1)}


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def measure_reads(db: Path, thread_id: str) -> dict[str, dict[str, float]]:
    from ui.transcript import LazyTranscript
    from workspace.persistence import Store

    walks, lazies = [], []
    for _ in range(RUNS):
        store = Store(db)
        walks.append(_timed(lambda s=store: s.path_ids(thread_id)))  # type: ignore[misc]
        store.close()
        store = Store(db)
        lazies.append(_timed(lambda s=store: LazyTranscript(s, thread_id)))  # type: ignore[misc]
        store.close()
    return {"path_ids": _figures(walks), "lazy_transcript": _figures(lazies)}


def measure_chat_paint(app: object, db: Path, thread_id: str) -> dict[str, float]:
    from ui.chat.view.chat import ChatView
    from ui.transcript import LazyTranscript
    from workspace.persistence import Store

    process = app.processEvents  # type: ignore[attr-defined]
    times = []
    for run in range(RUNS + 1):  # the first one warms up (the window loads markdown-it and pygments at start-up)
        store = Store(db)
        chat = ChatView()
        chat.resize(1000, 800)
        chat.show()
        process()
        start = time.perf_counter()
        chat.show_thread(LazyTranscript(store, thread_id))
        process()
        chat.grab()  # the first frame, rendered (the offscreen platform paints nothing by itself)
        if run:
            times.append((time.perf_counter() - start) * 1000)
        for _ in range(10):
            process()
        chat.close()
        chat.deleteLater()
        process()
        store.close()
    return _figures(times)


def screen_made(chat: Any) -> bool:
    """Whether every turn reaching the chat's screen is widgets: none a placeholder, none still being made (the
    turns in the margin above the screen may still be coming)."""
    window = chat.turn_window
    top = chat.verticalScrollBar().value()
    bottom = top + chat.viewport().height()
    for turn, gap in window.placeholders.items():
        start, end = gap.span(turn)
        if end >= top and start <= bottom:
            return False
    making = window._making[0] if window._making is not None else None  # (the turn a widget at a time)
    for widget in chat._turn_widgets.get(making) or ():
        if widget.geometry().bottom() >= top and widget.geometry().top() <= bottom:
            return False
    return bool(chat.presenter.state.turns)


def paint_probe() -> Any:
    """An event filter noting when the chat (its ``chat``, set by the caller) is first painted, and when a widget of
    its branch's last turn is: any of its widgets painted counts, since its viewport is not repainted itself when
    only the turns' widgets inside it change. Also used by ``bench_ui_open_thread``."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QWidget

    class Probe(QObject):
        painted = 0.0
        #: When a widget of the branch's last turn was first painted.
        last_turn = 0.0

        chat: Any = None

        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if (event.type() == QEvent.Type.Paint and isinstance(obj, QWidget)
                    and self.chat is not None and (obj is self.chat or self.chat.isAncestorOf(obj))):
                if not self.painted:
                    self.painted = time.perf_counter()
                turns = self.chat.presenter.state.turns
                if not self.last_turn and turns and any(w is obj or w.isAncestorOf(obj)
                                                        for w in self.chat._turn_widgets.get(turns[-1]) or ()):
                    self.last_turn = time.perf_counter()
            return False

    return Probe()


def measure_window(app: object, loop: asyncio.AbstractEventLoop, db: Path, thread_id: str) -> dict[str, object]:
    from PySide6.QtWidgets import QApplication

    from ui.app import Application
    from workspace.persistence import Store

    process = app.processEvents  # type: ignore[attr-defined]
    store = Store(db)
    path = store.path_ids(thread_id)
    hit = path[max(5, len(path) - HIT_DEPTH)]
    store.close()
    last_turn_paints: list[float] = []
    steps, step_cpus, paints, open_stalls, open_stall_cpus, open_counts, open_totals = [], [], [], [], [], [], []
    reveal_clicks, reveal_stalls, reveal_totals = [], [], []
    reveal_stall_cpus: list[float] = []
    reveal_cpus: list[float] = []

    async def click_and_wait(root: Application) -> None:
        """The clicks, as the window's event loop runs them: opening the thread, then a search hit far up."""
        # The probe a second ahead: the first events a Python filter of the application sees have PySide create the
        # Python types (and their enums) of the objects they are sent to, all of a module's at once (20-60 enums in
        # one step, 10-20 ms): a cost of the probe, not of the window, paid before the click.
        probe = paint_probe()
        QApplication.instance().installEventFilter(probe)
        await asyncio.sleep(1.0)  # a person looks at the window before clicking
        root.window.threads.new()  # (the thread open last time would reopen as a no-op)
        await asyncio.sleep(0.05)
        probe.chat = root.window.chat
        chat = root.window.chat
        start, start_cpu = time.perf_counter(), time.thread_time()
        root.window.threads.open(thread_id)
        last, last_cpu = time.perf_counter(), time.thread_time()
        steps.append((last - start) * 1000)
        step_cpus.append((last_cpu - start_cpu) * 1000)
        # Every turn of the event loop until the turns on screen are all widgets (and the chat painted).
        longest, longest_cpu, count = 0.0, 0.0, 0
        while not (probe.last_turn and screen_made(chat)) and time.perf_counter() < start + 30:
            await asyncio.sleep(0)
            now, cpu = time.perf_counter(), time.thread_time()
            longest, longest_cpu = max(longest, now - last), max(longest_cpu, cpu - last_cpu)
            count += cpu - last_cpu > 0.001
            last, last_cpu = now, cpu
        open_stalls.append(longest * 1000)
        open_stall_cpus.append(longest_cpu * 1000)
        open_counts.append(float(count))
        open_totals.append((last - start) * 1000 if screen_made(chat) else float("nan"))
        paints.append((probe.painted - start) * 1000 if probe.painted else float("nan"))
        last_turn_paints.append((probe.last_turn - start) * 1000 if probe.last_turn else float("nan"))
        QApplication.instance().removeEventFilter(probe)
        await asyncio.sleep(0.5)  # what opening leaves to do after the paint

        # A search hit far up: opened from the list as a click does (the thread is open already).
        root.window.sidebar.search.setText("Question")
        await asyncio.sleep(0.5)
        start, start_cpu = time.perf_counter(), time.thread_time()
        root.window.threads.open_result(thread_id, hit)
        reveal_clicks.append((time.perf_counter() - start) * 1000)
        longest, last = 0.0, time.perf_counter()
        # The window's thread's own CPU time per step too: on a loaded machine a step's wall time is mostly waiting.
        last_cpu = time.thread_time()
        longest_cpu = last_cpu - start_cpu
        while root.window.chat.found_flash is None and time.perf_counter() < start + 300:
            await asyncio.sleep(0)
            now, cpu = time.perf_counter(), time.thread_time()
            longest, last = max(longest, (now - last) * 1000), now
            longest_cpu, last_cpu = max(longest_cpu, cpu - last_cpu), cpu
        reveal_stalls.append(max(longest, reveal_clicks[-1]))
        reveal_stall_cpus.append(longest_cpu * 1000)
        reveal_totals.append((time.perf_counter() - start) * 1000 if root.window.chat.found_flash else float("nan"))
        reveal_cpus.append((time.thread_time() - start_cpu) * 1000)

    for _ in range(WINDOW_RUNS):
        root = Application(db_path=db)
        root.window.resize(1400, 900)
        root.window.show()
        loop.run_until_complete(click_and_wait(root))
        loop.run_until_complete(root.aclose())
        root.window.close()
        root.window.deleteLater()
        process()
    return {"open_step": _figures(steps), "open_step_cpu": _figures(step_cpus), "first_paint": _figures(paints),
            "last_turn_paint": _figures(last_turn_paints),
            "open_longest_step": _figures(open_stalls), "open_longest_step_cpu": _figures(open_stall_cpus),
            "open_steps": _figures(open_counts), "open_shown": _figures(open_totals), "reveal_click": _figures(reveal_clicks),
            "reveal_longest_step": _figures(reveal_stalls), "reveal_longest_step_cpu": _figures(reveal_stall_cpus),
            "reveal_total": _figures(reveal_totals), "reveal_cpu": _figures(reveal_cpus)}


def built_threads(keep: Path | None, sizes: tuple[int, ...] = SIZES) -> dict[int, tuple[Path, str]]:
    """A database and thread id per size: built in ``keep`` once and used again from there (building 10,000 turns
    takes a minute or two), or in a fresh folder (None). Sets ROBOTLAB_HOME to a fresh folder."""
    from bench_ui_thread_scale import build_thread

    home = scratch_dir("robotlab-bench-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    built = {}
    for turns in sizes:
        db, made = (keep or home) / f"t{turns}.db", (keep or home) / f"t{turns}.id"
        if keep is not None and made.exists():
            built[turns] = (db, made.read_text())
            continue
        started = time.perf_counter()
        built[turns] = (db, build_thread(db, turns))
        made.write_text(built[turns][1])
        print(f"built a thread of {turns} turns in {time.perf_counter() - started:.0f} s", flush=True)
    return built


def main() -> int:
    # ``--keep DIR``: the threads built there once are used again.
    built = built_threads(Path(sys.argv[2]) if len(sys.argv) == 3 and sys.argv[1] == "--keep" else None)

    from ui import theme
    from ui.app import get_app, new_event_loop

    app = get_app()
    theme.apply_theme(app, "light")
    loop = new_event_loop(app)
    results: dict[int, dict[str, object]] = {}
    with loop:
        for turns, (db, thread_id) in built.items():
            load = os.getloadavg()[0]
            row: dict[str, object] = {"load_before": round(load, 2)}
            row.update(measure_reads(db, thread_id))
            row["chat_first_paint"] = measure_chat_paint(app, db, thread_id)
            row["window"] = measure_window(app, loop, db, thread_id)
            row["load_after"] = round(os.getloadavg()[0], 2)
            results[turns] = row
            window = row["window"]
            assert isinstance(window, dict)
            print(f"{turns:>6} turns (load {row['load_before']} -> {row['load_after']}), median / fastest ms:")
            for name, figure in (("path_ids, whole branch", row["path_ids"]),
                                 ("LazyTranscript made", row["lazy_transcript"]),
                                 ("chat view first paint", row["chat_first_paint"]),
                                 ("window: open step", window["open_step"]),
                                 ("window: open step's CPU, the window's thread", window["open_step_cpu"]),
                                 ("window: first paint after the click", window["first_paint"]),
                                 ("window: ... the last turn's first paint", window["last_turn_paint"]),
                                 ("window: ... the longest step until on screen", window["open_longest_step"]),
                                 ("window: ... that step's CPU, the window's thread", window["open_longest_step_cpu"]),
                                 ("window: ... steps doing work (> 1 ms CPU)", window["open_steps"]),
                                 ("window: ... until the turns on screen show", window["open_shown"]),
                                 ("window: search hit far up, the click's step", window["reveal_click"]),
                                 ("window: ... the longest step until it shows", window["reveal_longest_step"]),
                                 ("window: ... that step's CPU, the window's thread", window["reveal_longest_step_cpu"]),
                                 ("window: ... until it shows", window["reveal_total"]),
                                 ("window: ... the window's thread's CPU until then", window["reveal_cpu"])):
                assert isinstance(figure, dict)
                print(f"    {name:<48} {figure['median_ms']:>8.1f} / {figure['min_ms']:.1f}")
            sys.stdout.flush()
    small, big = results[SIZES[0]], results[SIZES[-1]]

    def median(row: dict[str, object], *keys: str) -> float:
        value: object = row
        for key in keys:
            assert isinstance(value, dict)
            value = value[key]
        assert isinstance(value, dict)
        return float(value["median_ms"])

    ratio = median(big, "chat_first_paint") / max(median(small, "chat_first_paint"), 0.1)
    window_ratio = median(big, "window", "first_paint") / max(median(small, "window", "first_paint"), 0.1)
    print(f"chat view first paint {SIZES[-1]} vs {SIZES[0]} turns: {ratio:.2f}x; in the window: {window_ratio:.2f}x "
          "(target <= 1.5x)")
    for turns, row in results.items():
        print(f"opening {turns} turns: the click's step {median(row, 'window', 'open_step'):.0f} ms "
              f"({median(row, 'window', 'open_step_cpu'):.0f} ms CPU), the longest step after it until the turns on "
              f"screen show {median(row, 'window', 'open_longest_step'):.0f} ms "
              f"({median(row, 'window', 'open_longest_step_cpu'):.0f} ms CPU), "
              f"{median(row, 'window', 'open_steps'):.0f} steps (target < 16 ms each, quiet; < 50 ms busy)")
    print(f"search hit {HIT_DEPTH} turns up a branch of {SIZES[-1]}: longest step {median(big, 'window', 'reveal_longest_step'):.0f} ms, "
          f"its CPU on the window's thread {median(big, 'window', 'reveal_longest_step_cpu'):.0f} ms "
          "(target < 16 ms quiet, < 50 ms busy)")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_open_long_thread.json").write_text(json.dumps(
        {"sizes": {str(k): v for k, v in results.items()}, "first_paint_ratio": round(ratio, 2),
         "window_first_paint_ratio": round(window_ratio, 2), "targets": {"first_paint_ratio": 1.5}}, indent=2) + "\n")
    sys.stdout.flush()
    leave(0)  # skip interpreter teardown of the windows' Qt objects


if __name__ == "__main__":
    sys.exit(main())
