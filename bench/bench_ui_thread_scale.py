"""The chat view's cost against the thread's length: threads of 100, 1,000 and 10,000 turns.

Each size runs in a process of its own (so its memory is its own): a thread is stored in a fresh
database (each turn: the user's message, an answer with a tool call and its result, a final answer
with a code block), shown in a chat view (``ChatView.show_thread`` over the window's ``LazyTranscript``,
1000×800 px), then:

- first paint: from ``show_thread`` to the chat's first frame rendered (``grab``: the offscreen
  platform paints nothing by itself);
- paging back to the top: the scroll bar is put at the top again and again, as a person dragging it
  up does, and at the top "Show earlier turns" is clicked, until every turn is loaded and the top is
  shown (or ``PAGING_LIMIT`` has passed); the longest stall is the longest turn of the event loop meanwhile, and the
  most message widgets alive at once is counted;
- RSS after opening, and RSS growth over 100 turns sent live (the presenter fed each run's events as
  the bridge feeds them: deltas, a tool call, its result, the end) against the same 100 turns reopened.

- at the end of the thread (every turn paged in): a message sent (the step adding its turn), the worst step
  while an answer of about 300 words streams (one delta and the event loop's turn after it), the worst run's
  end (its ``run_finished`` and the event loop's turn after it, over the turns added live), and 100 turns
  added live (the median time of a turn among the first ten and among the last ten).

RSS is read once the widgets given back are deleted (``deleteLater`` runs in an event loop, not in
``processEvents``) and the collector has run, as a window's event loop would have it.

Targets printed: the 10,000-turn first paint, send, streaming step, run's end and live turn within 1.5 × the 100-turn
ones; stalls < 16 ms on a quiet machine (< 50 ms busy: load average >= 1); the last live turn as fast as the first; live
growth no more than reopened; the exit status is 1 when the ratios or the stalls miss. Writes
bench/results/ui_thread_scale.json.

``--rss [ROUNDS]`` runs only the memory figures: ``LIVE_TURNS`` turns grown live, then as many more, against the same
turns reopened, each in a process of its own, medians of ROUNDS (3) with the load average (see ``rss_only``); writes
bench/results/ui_thread_rss.json.

``--paging N`` runs only the paging to the top of an N-turn thread and prints its worst, p95 and median step, wall
time and the window thread's CPU time (a busy machine's waits show in the first, not in the second), the total
time and the collector's full passes meanwhile (a pass of the event loop that changed nothing, the window waiting
for its next frame, is not a step: it is counted apart), then its longest steps (which step, its action, wall and CPU
time); ``--paging N --sample`` adds where the window's thread was during each (its stack sampled every 0.5 ms from
a thread of its own, which costs the window's thread a little: figures without it are the ones to compare);
``--paging N --blocked`` adds, for each of them, what the window's thread waited for (``BlockedProbe``): the store's
lock (held by a worker), its reads' time in SQLite beyond their CPU (the interpreter's lock taken back after each
row), and each other thread's CPU meanwhile (the interpreter shared with it);
``--paging N --files``: every tenth turn's call writes a file instead (``FILE_TEXT``, its card's arguments 6,000
characters of text).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scratch import leave, scratch_dir

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (100, 1000, 10000)
LIVE_TURNS = 100
#: Paging back to the top stops after this long (s) on a slow machine: the turns reached are printed (``PAGING_LIMIT``
#: in the environment sets another).
PAGING_LIMIT = float(os.environ.get("PAGING_LIMIT", "240"))
#: A pass of the paging that changed nothing and took less CPU than this (ms) is not a step: the window waited
#: for its next frame (a pass that changed nothing but took longer is one: Qt's work for the last one's widgets).
IDLE_CPU_MS = 1.0
#: The longest steps of the paging printed, each with its action, wall and CPU time.
WORST_SHOWN = 5
#: Memory grown live may exceed the same turns reopened by this factor (RSS moves in allocator-sized steps).
RSS_SLACK = 1.25


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


#: What every tenth turn's call writes with ``--files``: its card shows 6,000 characters of it (the most it shows).
FILE_TEXT = "def f():\n    pass\n" * 400


def _events(i: int, run: str, *, files: bool = False) -> list[object]:
    from workspace import events as ev
    from workspace.result import RobotResult

    def e(cls: type[ev.Event], seq: int, **fields: object) -> ev.Event:
        return cls(run_id=run, robot="assistant", seq=seq, **fields)

    return [
        e(ev.RunStarted, 1, message=f"Question {i}", model="bench"),
        e(ev.Text, 2, text=f"Let me read `file_{i}.py` first."),
        e(ev.ToolUse, 3, id=f"c{i}", name="write_file", input={"path": f"file_{i}.py", "content": FILE_TEXT})
        if files and i % 10 == 0 else e(ev.ToolUse, 3, id=f"c{i}", name="read_file", input={"path": f"file_{i}.py"}),
        e(ev.ToolResult, 4, id=f"c{i}", name="read_file", payload={"data": {"content": "def f():\n    pass\n" * 5}},
          duration=0.01),
        e(ev.Text, 5, text=f"**file_{i}.py** defines `f`, which does nothing:\n\n```python\ndef f():\n    pass\n```"),
        e(ev.RunFinished, 6, result=RobotResult(robot_name="assistant", output=[])),
    ]


def build_thread(db_path: Path, turns: int, *, files: bool = False) -> str:
    from workspace.persistence import Store

    store = Store(db_path)
    thread = store.create_thread(robot="assistant", title="A long conversation")
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"Question {i}: what does file_{i}.py do?", parent_turn_id=parent)
        store.append_events(thread.id, turn.id, _events(i, f"run{i}", files=files))  # type: ignore[arg-type]
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    store.close()
    return thread.id


def _chat() -> object:
    from ui.chat.view.chat import ChatView

    chat = ChatView()
    chat.resize(1000, 800)
    chat.show()
    return chat


def _median_cpu(steps: list[Step]) -> float:
    cpus = sorted(s.cpu_ms for s in steps)
    return round(cpus[len(cpus) // 2], 1)


def _progress(chat: Any) -> tuple[int, int, int, int]:
    """What a pass of the paging may change: the turns loaded, the widgets made, the turns released, the scroll
    position."""
    window = chat.turn_window
    return len(chat.presenter.state.turns), len(chat._widgets), window.released, chat.verticalScrollBar().value()


def _queued_ms() -> float:
    """How long (ms) this thread has waited, ready to run, for a core (Linux's scheduler statistics; 0 elsewhere)."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


@dataclass(frozen=True)
class Step:
    """One step of the paging: the action, the turns loaded after it, when it ran and its wall and CPU time."""

    index: int
    action: str
    turns: int
    start: float
    end: float
    wall_ms: float
    cpu_ms: float
    #: How long the thread waited for a core (ready to run, the machine's other work on both): the rest of the
    #: wall time not on a CPU is the thread blocked (a lock, the interpreter's lock, I/O).
    queued_ms: float

    def describe(self, sampler: StackSampler | None, probe: BlockedProbe | None = None) -> str:
        queued = min(self.queued_ms, self.wall_ms - self.cpu_ms)  # (the scheduler's count is coarser)
        blocked = max(0.0, self.wall_ms - self.cpu_ms - queued)
        line = (f"step {self.index} ({self.action}, {self.turns} turns loaded): wall {self.wall_ms:.0f} ms, "
                f"CPU {self.cpu_ms:.0f} ms, waiting for a core {queued:.0f} ms, blocked {blocked:.0f} ms")
        if sampler is not None:
            line += "".join(f"\n      {n:>3} samples  {where}" for where, n in sampler.between(self.start, self.end))
        if probe is not None:
            line += probe.between(self.start, self.end)
        return line


class BlockedProbe:
    """What the window's thread waits for (``--blocked``): each of its reads of the store (the time it waited for
    the store's lock, the read's wall and CPU time in SQLite: a read gives the interpreter up at each row and waits
    to take it back), and every thread's time on a CPU at each step's start and end (``/proc``, Linux only)."""

    def __init__(self) -> None:
        import threading

        from workspace.persistence.database import Database

        self._main = threading.main_thread().ident
        #: (start, waited for the lock, wall in SQLite, CPU in SQLite), ms but the start.
        self.reads: list[tuple[float, float, float, float]] = []
        self._marks: list[tuple[float, dict[int, float]]] = []
        self._original = Database._read
        probe, original = self, Database._read

        def _read(store: Database, sql: str, params: Any = ()) -> Any:
            if threading.get_ident() != probe._main or getattr(store._apart, "active", False):
                return original(store, sql, params)
            start = time.perf_counter()
            with store._lock:  # (re-entered by the read itself)
                got, cpu = time.perf_counter(), time.thread_time()
                rows = original(store, sql, params)
                end, cpu_end = time.perf_counter(), time.thread_time()
            probe.reads.append((start, (got - start) * 1000, (end - got) * 1000, (cpu_end - cpu) * 1000))
            return rows

        Database._read = _read  # type: ignore[method-assign]

    def mark(self) -> None:
        """Every thread's time on a CPU now (ms, by native id)."""
        times: dict[int, float] = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                times[int(tid)] = int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0]) / 1e6
            except (OSError, IndexError, ValueError):
                continue
        self._marks.append((time.perf_counter(), times))

    def stop(self) -> None:
        from workspace.persistence.database import Database

        Database._read = self._original  # type: ignore[method-assign]

    def between(self, start: float, end: float) -> str:
        import bisect
        import threading

        reads = [r for r in self.reads if start <= r[0] <= end]
        waited, wall, cpu = (sum(r[i] for r in reads) for i in (1, 2, 3))
        line = (f"\n      the window's {len(reads)} reads: waited for the store's lock {waited:.1f} ms, in SQLite "
                f"{wall:.1f} ms ({cpu:.1f} ms CPU: {max(0.0, wall - cpu):.1f} ms waiting for the interpreter)")
        starts = [t for t, _ in self._marks]
        if self._marks:
            before = self._marks[max(0, bisect.bisect_right(starts, start) - 1)][1]
            after = self._marks[min(len(starts) - 1, bisect.bisect_left(starts, end))][1]
            names = {t.native_id: t.name for t in threading.enumerate()}
            main = threading.main_thread().native_id
            others = [(names.get(tid, str(tid)), ms - before.get(tid, 0.0)) for tid, ms in after.items() if tid != main]
            busy = ", ".join(f"{name} {ms:.1f} ms" for name, ms in sorted(others, key=lambda o: -o[1]) if ms >= 0.1)
            line += f"\n      other threads on a CPU meanwhile: {busy or 'none'}"
        return line


class StackSampler:
    """Samples the window thread's stack every half millisecond from a thread of its own (``--sample``): where a
    long step spends its time, counted by the innermost frame of the project and the frame it is in."""

    def __init__(self) -> None:
        import threading

        self._main = threading.main_thread().ident
        self._samples: list[tuple[float, str]] = []
        self._running = True
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        root = str(ROOT)
        while self._running:
            frame = sys._current_frames().get(self._main)  # type: ignore[arg-type]
            leaf, ours = None, None
            while frame is not None:
                code = frame.f_code
                where = f"{Path(code.co_filename).name}:{frame.f_lineno} {code.co_name}"
                leaf = leaf or where
                if code.co_filename.startswith(root) and "/bench/" not in code.co_filename:
                    ours = where
                    break
                frame = frame.f_back
            self._samples.append((time.perf_counter(), f"{ours} <- in {leaf}" if ours != leaf else f"{ours}"))
            time.sleep(0.0005)

    def stop(self) -> None:
        self._running = False
        self._thread.join()

    def between(self, start: float, end: float, *, most: int = 6) -> list[tuple[str, int]]:
        """The places sampled between ``start`` and ``end``, most often first."""
        from collections import Counter

        return Counter(where for t, where in self._samples if start <= t <= end).most_common(most)


def page_to_top(app: object, chat: object, *, sample: bool = False, blocked: bool = False) -> dict[str, Any]:
    """Paging back to the top: the scroll bar put at the top again and again (a person dragging it up), and at
    the top "Show earlier turns" clicked, until every turn is loaded and the top is shown (or ``PAGING_LIMIT``).
    Each step is the action and the event loop's turn after it: its wall time (the stall a person sees) and the
    window thread's CPU time (what the step did, without the waits a busy machine adds); the collector's passes
    over its oldest generation meanwhile are counted."""
    import gc

    from ui.chat.view.chat import ChatView

    assert isinstance(chat, ChatView)
    process = app.processEvents  # type: ignore[attr-defined]
    full_passes = [0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            full_passes[0] += 1

    gc.callbacks.append(count)
    bar = chat.verticalScrollBar()
    steps: list[Step] = []
    most_widgets = len(chat.items())
    settled = 0
    sampler = StackSampler() if sample else None
    probe = BlockedProbe() if blocked else None
    paging = time.perf_counter()
    deadline = paging + PAGING_LIMIT
    idle = 0
    try:
        while settled < 30 and time.perf_counter() < deadline:
            before = _progress(chat)
            if probe is not None:
                probe.mark()
            t, cpu, queued = time.perf_counter(), time.thread_time(), _queued_ms()
            if bar.value() == 0 and chat.hidden_turns:
                action = "load_earlier"
                chat.load_earlier()  # at the top: "Show earlier turns"
            else:
                action = "scroll to top"
                bar.setValue(0)
            process()
            end = time.perf_counter()
            cpu_ms = (time.thread_time() - cpu) * 1000
            if probe is not None:
                probe.mark()
            settled = settled + 1 if not chat.hidden_turns and not chat.turn_window.busy else 0
            if _progress(chat) == before and cpu_ms < IDLE_CPU_MS:  # nothing to do: the window waits for a frame
                idle += 1
                continue
            steps.append(Step(len(steps), action, len(chat.presenter.state.turns), t, end, (end - t) * 1000,
                              cpu_ms, _queued_ms() - queued))
            most_widgets = max(most_widgets, len(chat.items()))
    finally:
        gc.callbacks.remove(count)
        if sampler is not None:
            sampler.stop()
        if probe is not None:
            probe.stop()
    paged = time.perf_counter() - paging
    walls = sorted(s.wall_ms for s in steps)
    cpus = sorted(s.cpu_ms for s in steps)
    worst = sorted(steps, key=lambda s: s.wall_ms, reverse=True)[:WORST_SHOWN]
    loaded = next((i for i, s in enumerate(steps) if s.turns == len(chat.presenter.state.turns)), len(steps))
    paging_steps = steps[:loaded + 1]  # (not the steps after every turn was loaded)
    return {"longest_stall_ms": round(walls[-1], 1), "p95_stall_ms": round(walls[int(len(walls) * 0.95)], 1),
            "median_stall_ms": round(walls[len(walls) // 2], 1), "steps": len(steps),
            "longest_step_cpu_ms": round(cpus[-1], 1), "p95_step_cpu_ms": round(cpus[int(len(cpus) * 0.95)], 1),
            "median_step_cpu_ms": round(cpus[len(cpus) // 2], 1),
            # (per-step work that grows with the turns loaded shows as the last tenth's median above the first's)
            "first_tenth_cpu_ms": _median_cpu(paging_steps[:max(1, len(paging_steps) // 10)]),
            "last_tenth_cpu_ms": _median_cpu(paging_steps[-max(1, len(paging_steps) // 10):]),
            "idle_passes": idle, "full_gc_passes": full_passes[0], "turns_paged": len(chat.presenter.state.turns),
            "paging_s": round(paged, 1), "most_widgets_alive": most_widgets,
            "worst_steps": [s.describe(sampler, probe) for s in worst],
            "most_cpu_steps": [s.describe(sampler, probe)
                               for s in sorted(steps, key=lambda s: s.cpu_ms, reverse=True)[:3]]}


def open_thread(turns: int, *, files: bool = False) -> tuple[object, object, Path, float, float]:
    """A thread of ``turns`` turns stored and shown, as the window has it after start-up: the app, the chat,
    the bench's folder, RSS before opening and the first paint (ms)."""
    import gc

    from ui import theme
    from ui.app import get_app
    from ui.chat.view.chat import ChatView
    from ui.transcript import LazyTranscript
    from workspace.persistence import Store

    home = scratch_dir("robotlab-bench-")
    db = home / "long.db"
    thread_id = build_thread(db, turns, files=files)
    app = get_app()
    theme.apply_theme(app, "light")  # the window's style sheet: every new widget is polished with it
    store = Store(db)

    # Warm up (the window loads markdown-it and pygments at start-up, and makes its first cards early).
    warm_id = build_thread(home / "warm.db", 3)
    warm_store = Store(home / "warm.db")
    warm = _chat()
    assert isinstance(warm, ChatView)
    warm.show_thread(LazyTranscript(warm_store, warm_id))
    for _ in range(10):
        app.processEvents()
    warm.grab()
    warm.close()
    warm.deleteLater()
    app.processEvents()
    # The window's start-up ends by freezing what it loaded (the libraries, its widgets) out of the collector's
    # walks (``workspace.shared_imports.resume_gc``): so here, or every full pass would walk Qt's and
    # the libraries' objects too, which the window's do not.
    gc.collect()
    gc.freeze()
    rss_before = _rss_mb()

    chat = _chat()
    assert isinstance(chat, ChatView)
    app.processEvents()
    start = time.perf_counter()
    chat.show_thread(LazyTranscript(store, thread_id))
    app.processEvents()
    chat.grab()  # the first frame, rendered (the offscreen platform paints nothing by itself)
    first_paint = (time.perf_counter() - start) * 1000
    for _ in range(20):
        app.processEvents()
    return app, chat, home, rss_before, first_paint


def measure(turns: int) -> dict[str, Any]:
    from ui.chat.view.chat import ChatView

    app, chat, home, rss_before, first_paint = open_thread(turns)
    assert isinstance(chat, ChatView)
    rss_open = _rss_mb()

    paging = page_to_top(app, chat)
    loaded, paged = paging["turns_paged"], paging["paging_s"]
    print(f"paged {loaded} turns in {paged:.1f} s", file=sys.stderr, flush=True)
    top_text = chat.user_messages()[0].text if chat.user_messages() else ""
    live_end = at_the_end(app, chat)
    chat.close()
    chat.deleteLater()
    app.processEvents()

    reopened = reopened_growth(app, home)
    live = live_growth(app)[0]
    return {"turns": turns, "load": os.getloadavg()[0], "first_paint_ms": round(first_paint, 1), **paging,
            "top_reached": top_text.startswith("Question 0:"),
            "rss_open_mb": round(rss_open, 1), "rss_open_growth_mb": round(rss_open - rss_before, 1),
            "live_100_turns_mb": round(live, 1), "reopened_100_turns_mb": round(reopened, 1), **live_end}


def live_growth(app: Any, rounds: int = 1) -> list[float]:
    """RSS growth (MB) over each of ``rounds`` runs of ``LIVE_TURNS`` turns sent live in a new chat view (each run's
    events fed as the bridge feeds them, the widgets given back deleted after each turn, as the window's event loop
    does between two turns: ``processEvents`` alone left a hundred turns' widgets to be deleted at the end, which
    the allocator kept as RSS), once the view has settled."""
    from ui.chat.view.chat import ChatView
    from workspace import events as ev

    view = _chat()
    assert isinstance(view, ChatView)
    app.processEvents()
    growths = []
    for r in range(rounds):
        base = _rss_mb()
        for i in range(r * LIVE_TURNS, (r + 1) * LIVE_TURNS):
            run = f"live{i}"
            view.presenter.add_user(f"Question {i}: what does file_{i}.py do?")
            for event in _events(i, run):
                if isinstance(event, ev.Text):  # streamed: deltas, then the text
                    for word in event.text.split(" "):
                        view.presenter.feed(ev.TextDelta(run_id=run, robot="assistant", seq=event.seq, text=word + " "))
                        app.processEvents()
                view.presenter.feed(event)  # type: ignore[arg-type]
                app.processEvents()
            _deferred_deletes()
        for _ in range(20):
            app.processEvents()
        while view.turn_window.busy:  # the turns scrolled far off given back, a few a frame, as the window does
            app.processEvents()
        _settle(app)
        growths.append(_rss_mb() - base)
        print(f"live: +{growths[-1]:.1f} MB, {len(view._widgets)} widgets, {len(view.turn_window.live_turns())} turns as "
              "widgets", file=sys.stderr, flush=True)
    view.close()
    view.deleteLater()
    app.processEvents()
    return growths


def reopened_growth(app: Any, home: Path) -> float:
    """RSS growth (MB) over the same ``LIVE_TURNS`` turns stored and reopened in a new chat view, all paged in."""
    from ui.chat.view.chat import ChatView
    from ui.transcript import LazyTranscript
    from workspace.persistence import Store

    small = build_thread(home / "small.db", LIVE_TURNS)
    small_store = Store(home / "small.db")
    view = _chat()
    assert isinstance(view, ChatView)
    app.processEvents()
    base = _rss_mb()
    view.show_thread(LazyTranscript(small_store, small))
    deadline = time.monotonic() + 60
    while len(view.presenter.state.turns) < LIVE_TURNS or view.turn_window.busy:  # page it all in, as the live
        view.verticalScrollBar().setValue(0)  # view had it all (a few setValue(0) alone left half the turns out)
        app.processEvents()
        if time.monotonic() > deadline:
            raise RuntimeError(f"reopened: {len(view.presenter.state.turns)} of {LIVE_TURNS} turns paged in after 60 s")
    view.scroll_to_bottom()  # where the live view is
    for _ in range(20):
        app.processEvents()
    while view.turn_window.busy:
        app.processEvents()
    _settle(app)
    grown = _rss_mb() - base
    print(f"reopened: +{grown:.1f} MB, {len(view._widgets)} widgets, {len(view.turn_window.live_turns())} turns as widgets",
          file=sys.stderr, flush=True)
    view.close()
    view.deleteLater()
    app.processEvents()
    return grown


def _deferred_deletes() -> None:
    """The widgets given back deleted (``deleteLater``), which ``processEvents`` does not do."""
    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _settle(app: object) -> None:
    """What the event loop does between two turns of its own: widgets given back are deleted (``deleteLater``),
    which ``processEvents`` alone does not do, and the collector runs; so RSS is what a window would hold."""
    import gc

    for _ in range(3):
        _deferred_deletes()
        gc.collect()
        app.processEvents()  # type: ignore[attr-defined]


def at_the_end(app: object, chat: object) -> dict[str, float]:
    """At the end of the thread (every turn loaded, the screen at the bottom): an answer streamed (the worst step:
    a delta and the turn of the event loop after it, with its CPU), then ``LIVE_TURNS`` turns added live, each its
    message, a streamed answer with a tool call and its end (the mean step of the first ten against the last ten:
    per-turn work that grows shows as a ratio > 1). A message sent (the step that adds its turn): the median of
    every turn's send, with its CPU, and the worst (one send alone is at the mercy of a busy machine)."""
    from ui.chat.view.chat import ChatView
    from workspace import events as ev

    assert isinstance(chat, ChatView)
    process = app.processEvents  # type: ignore[attr-defined]
    chat.scroll_to_bottom()
    while chat.turn_window.busy:
        process()

    cpus: list[float] = []  # each step's CPU (ms), in step with the wall times the turns give back

    def step(action: object) -> float:
        start, start_cpu = time.perf_counter(), time.thread_time()
        action()  # type: ignore[operator]
        process()
        cpus.append((time.thread_time() - start_cpu) * 1000)
        return (time.perf_counter() - start) * 1000

    ends: list[float] = []
    sends: list[tuple[float, float]] = []  # each turn's send: wall and CPU (ms)

    def turn(i: int, *, words: int = 0) -> list[float]:
        run = f"end{i}"
        cpus.clear()
        steps = [step(lambda: chat.presenter.add_user(f"Question {i} sent at the end"))]
        sends.append((steps[0], cpus[0]))
        for event in _events(i, run):
            if isinstance(event, ev.Text):
                text = event.text + (" and more" * (words // 2))
                for word in text.split(" "):
                    delta = ev.TextDelta(run_id=run, robot="assistant", seq=event.seq, text=word + " ")
                    steps.append(step(lambda d=delta: chat.presenter.feed(d)))
            steps.append(step(lambda e=event: chat.presenter.feed(e)))  # type: ignore[arg-type]
        ends.append(steps[-1])  # (the run's end: its last event)
        return steps

    turn(-1)  # warm up
    ends.clear()
    sends.clear()
    first = turn(0, words=300)
    stream_ms = max(first[1:])
    stream_cpu = cpus[first.index(stream_ms)]
    per_turn: list[float] = []
    for i in range(1, LIVE_TURNS + 1):
        start = time.perf_counter()
        turn(i)
        per_turn.append((time.perf_counter() - start) * 1000)
    head, tail = per_turn[:10], per_turn[-10:]
    walls, send_cpus = sorted(w for w, _ in sends), sorted(c for _, c in sends)
    return {"send_ms": round(walls[len(walls) // 2], 1), "send_cpu_ms": round(send_cpus[len(send_cpus) // 2], 2),
            "send_worst_ms": round(walls[-1], 1), "stream_worst_ms": round(stream_ms, 1),
            "stream_worst_cpu_ms": round(stream_cpu, 1), "run_end_worst_ms": round(max(ends), 1),
            "turn_first_ms": round(sorted(head)[len(head) // 2], 1), "turn_last_ms": round(sorted(tail)[len(tail) // 2], 1)}


def paging_only(turns: int, *, sample: bool, files: bool = False, blocked: bool = False) -> None:
    """``--paging N``: only the paging to the top of an N-turn thread, its figures printed with the load average,
    then its longest steps (with ``--sample``, where the window's thread was in each)."""
    from ui.chat.view.chat import ChatView

    load = os.getloadavg()
    app, chat, _home, _rss, _paint = open_thread(turns, files=files)
    assert isinstance(chat, ChatView)
    row = page_to_top(app, chat, sample=sample, blocked=blocked)
    print(f"{turns} turns{' (a file written every tenth)' if files else ''}, paging to the top (load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after): "
          f"worst step {row['longest_stall_ms']:.0f} ms (CPU {row['longest_step_cpu_ms']:.0f} ms), p95 "
          f"{row['p95_stall_ms']:.0f} ms (CPU {row['p95_step_cpu_ms']:.0f} ms), median {row['median_stall_ms']:.0f} ms, "
          f"{row['turns_paged']} turns in {row['paging_s']:.1f} s over {row['steps']} steps "
          f"(and {row['idle_passes']} passes with nothing to do, not counted), "
          f"{row['full_gc_passes']} full collections (target: worst step < 16 ms quiet, < 50 ms busy)", flush=True)
    print(f"  median step CPU {row['median_step_cpu_ms']:.1f} ms (the first tenth of the steps "
          f"{row['first_tenth_cpu_ms']:.1f} ms, the last {row['last_tenth_cpu_ms']:.1f} ms); the longest steps:", flush=True)
    for line in row["worst_steps"]:
        print(f"    {line}", flush=True)
    print("  the steps with the most CPU:", flush=True)
    for line in row["most_cpu_steps"]:
        print(f"    {line}", flush=True)


def rss_only(rounds: int) -> int:
    """``--rss [ROUNDS]``: RSS growth over ``LIVE_TURNS`` turns grown live, then over ``LIVE_TURNS`` more, against the
    same number of turns reopened (all paged in, the screen at the bottom), each in a process of its own (one after
    the other in the same period, alternating which goes first); the medians printed with the load average.

    Both views keep as widgets the turns on screen and a screen above it (the live one gives a turn back a quarter
    of a screen further up); each round prints, on the standard error, the widgets and turns as widgets each holds.
    The target is the curve's: the next hundred live turns grow no more than ``RSS_SLACK`` x a reopened hundred (the
    exit status is 1 when missed); a leak per live turn shows there."""
    grown: dict[str, list[list[float]]] = {"live": [], "reopened": []}
    for i in range(rounds):
        for kind in (("live", "reopened") if i % 2 else ("reopened", "live")):
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, __file__, "--rss-round", kind], capture_output=True, text=True,
                                  check=False)
            if done.returncode != 0:
                print(done.stderr[-2000:])
                return 1
            mbs = json.loads(done.stdout.strip().splitlines()[-1])
            grown[kind].append(mbs)
            print(f"round {i + 1}: {kind} " + ", then ".join(f"+{mb:.1f} MB" for mb in mbs)
                  + f" over {LIVE_TURNS} turns (load average {load:.1f})", flush=True)

    def median(kind: str, index: int) -> float:
        return sorted(mbs[index] for mbs in grown[kind])[rounds // 2]

    first, then, reopened = median("live", 0), median("live", 1), median("reopened", 0)
    met = then <= RSS_SLACK * reopened
    print(f"medians of {rounds}: {LIVE_TURNS} turns live +{first:.1f} MB ({first / max(reopened, 0.1):.2f} x reopened), "
          f"the next {LIVE_TURNS} +{then:.1f} MB ({then / max(reopened, 0.1):.2f} x), reopened +{reopened:.1f} MB "
          f"(target: the next {LIVE_TURNS} live <= {RSS_SLACK} x reopened): {'met' if met else 'missed'}; "
          f"load average {os.getloadavg()[0]:.1f}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_thread_rss.json").write_text(json.dumps({
        "turns": LIVE_TURNS, "rounds": rounds, "live_first_mb": round(first, 1), "live_then_mb": round(then, 1),
        "reopened_mb": round(reopened, 1), "slack": RSS_SLACK, "grown": grown, "met": met}, indent=2) + "\n")
    return 0 if met else 1


def rss_round(kind: str) -> list[float]:
    """One process of ``--rss``: a warmed-up chat (as ``open_thread`` leaves it), then the growths (MB)."""
    app, chat, home, _rss, _paint = open_thread(3)
    chat.close()  # type: ignore[attr-defined]
    chat.deleteLater()  # type: ignore[attr-defined]
    _settle(app)
    return live_growth(app, 2) if kind == "live" else [reopened_growth(app, home)]


def main() -> int:
    if len(sys.argv) in (2, 3) and sys.argv[1] == "--rss":
        return rss_only(int(sys.argv[2]) if len(sys.argv) == 3 else 3)
    if len(sys.argv) == 3 and sys.argv[1] == "--rss-round":
        print(json.dumps(rss_round(sys.argv[2])))
        sys.stdout.flush()
        leave(0)
    if len(sys.argv) >= 3 and sys.argv[1] == "--paging" and set(sys.argv[3:]) <= {"--sample", "--files", "--blocked"}:
        paging_only(int(sys.argv[2]), sample="--sample" in sys.argv[3:], files="--files" in sys.argv[3:],
                    blocked="--blocked" in sys.argv[3:])
        leave(0)
    if len(sys.argv) == 3 and sys.argv[1] == "--turns":
        print(json.dumps(measure(int(sys.argv[2]))))
        sys.stdout.flush()
        leave(0)
    results = []
    for turns in SIZES:
        done = subprocess.run([sys.executable, __file__, "--turns", str(turns)], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            print(done.stderr[-2000:])
            return 1
        row = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(row)
        print(f"{turns:>6} turns (load average {row['load']:.1f}): first paint {row['first_paint_ms']:.0f} ms, longest stall paging to the top "
              f"{row['longest_stall_ms']:.0f} ms (its CPU {row['longest_step_cpu_ms']:.0f} ms; p95 {row['p95_stall_ms']:.0f} ms, "
              f"median {row['median_stall_ms']:.0f} ms; {row['full_gc_passes']} full collections; "
              f"{row['turns_paged']} turns in {row['paging_s']:.0f} s, top reached: {row['top_reached']}), at most "
              f"{row['most_widgets_alive']} widgets alive, RSS after opening {row['rss_open_mb']:.0f} MB; "
              f"100 turns live +{row['live_100_turns_mb']:.1f} MB vs reopened +{row['reopened_100_turns_mb']:.1f} MB")
        print(f"{'':>13} at the end: send {row['send_ms']:.1f} ms (CPU {row['send_cpu_ms']:.2f} ms; the median of "
              f"{LIVE_TURNS + 1}, the worst {row['send_worst_ms']:.1f} ms), worst step streaming an answer "
              f"{row['stream_worst_ms']:.1f} ms (CPU {row['stream_worst_cpu_ms']:.1f} ms), worst run's end {row['run_end_worst_ms']:.1f} ms, {LIVE_TURNS} turns added live: {row['turn_first_ms']:.0f} ms a turn "
              f"at the first, {row['turn_last_ms']:.0f} ms at the last")
    small, big = results[0], results[-1]
    ratio = big["first_paint_ms"] / max(small["first_paint_ms"], 0.1)
    load = max(r["load"] for r in results)
    limit = 16 if load < 1 else 50
    checks: dict[str, bool] = {}
    print(f"first paint {big['turns']} vs {small['turns']} turns: {ratio:.2f}x (target <= 1.5x)")
    checks["first paint"] = ratio <= 1.5
    stall = max(r["longest_stall_ms"] for r in results)
    print(f"longest stall: {stall:.0f} ms (target < 16 ms quiet, < 50 ms busy; load average up to {load:.1f})")
    checks["longest stall"] = stall < limit
    for key, name in (("send_ms", "send"), ("stream_worst_ms", "worst streaming step"), ("run_end_worst_ms", "worst run's end"),
                      ("turn_last_ms", "a turn added live")):
        print(f"{name} at {big['turns']} vs {small['turns']} turns: {big[key]:.1f} vs {small[key]:.1f} ms, "
              f"{big[key] / max(small[key], 0.1):.2f}x (target <= 1.5x; < 16 ms quiet, < 50 ms busy)")
        checks[name] = big[key] <= 1.5 * small[key] and (key == "turn_last_ms" or big[key] < limit)
    print(f"send's CPU at {big['turns']} vs {small['turns']} turns: {big['send_cpu_ms']:.2f} vs {small['send_cpu_ms']:.2f} ms, "
          f"{big['send_cpu_ms'] / max(small['send_cpu_ms'], 0.01):.2f}x (target <= 1.5x); the send curve "
          + " / ".join(f"{r['send_ms']:.1f} ms (CPU {r['send_cpu_ms']:.2f})" for r in results))
    checks["send's CPU"] = big["send_cpu_ms"] <= 1.5 * small["send_cpu_ms"]
    print("a turn added live, at the last vs the first: "
          + ", ".join(f"{r['turns']}: {r['turn_last_ms'] / max(r['turn_first_ms'], 0.1):.2f}x" for r in results)
          + " (target: ~1x, the per-turn cost does not grow)")
    print("live growth vs reopened (target: live <= reopened): "
          + ", ".join(f"+{r['live_100_turns_mb']:.1f} vs +{r['reopened_100_turns_mb']:.1f} MB" for r in results))
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_thread_scale.json").write_text(json.dumps({"sizes": results, "first_paint_ratio": round(ratio, 2),
                                                          "targets": {"first_paint_ratio": 1.5, "stall_ms": 16,
                                                                      "stall_busy_ms": 50}}, indent=2) + "\n")
    missed = [name for name, met in checks.items() if not met]
    print("targets: " + (f"missed: {', '.join(missed)}" if missed else "all met") + f" (load average {load:.1f})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
