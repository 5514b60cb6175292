"""The window streaming four comparison columns at once, from the loopback model server.

"Compare with…" as a person uses it: the assistant with four models (``model-0`` .. ``model-3``) answer one
message side by side, each column its own chat view fed through its own bridge. The loopback OpenAI-compatible
server (tests/fakes/llm_server.py, in a process of its own so it does not share our GIL) streams each answer
in ``CHUNK``-character pieces ``CHUNK_DELAY`` seconds apart; ``llm.max_concurrent_requests`` is 4, so the four
stream at the same time. Measured: the tokens rendered per second in all four columns (the usage the server
reports, over the time from the message to the last column's end; the columns' text checked whole), and the
longest event-loop stall (a 2 ms Qt timer's longest late tick) against the target of one frame (16.7 ms); and,
less dependent on the machine's load, the CPU this process spent per 1,000 tokens, the CPU of the longest pass of
the event loop (between two ticks: what the load stretches into the stall), the CPU of the comparison's frame
ticks (each shows one column's waiting events: its Markdown rendered, its cards; median, p90, longest) and the
paint events and layout requests of the columns' widgets per second.
Writes bench/results/compare_window.json. Run offscreen:
``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_compare_window.py``. With ``--gc``, every collection of
Python's garbage collector is timed (bench/gc_watch.py) and each stall over a frame is printed with the
collections that fell in it (and the window thread's CPU in it: a stall with little CPU waited for another thread).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scratch import scratch_dir

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

#: Words in each column's answer (paragraphs of 60), the server's piece size and pace.
WORDS = int(os.environ.get("WORDS", "1500"))
CHUNK = int(os.environ.get("CHUNK", "12"))
CHUNK_DELAY = float(os.environ.get("CHUNK_DELAY", "0.002"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
FRAME_MS = 1000 / 60
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
def reply_fn(body):
    words = ("the", "robot", "streams", "**text**", "while", "`tools`", "run", "and", "columns", "render")
    text = "".join((body["model"] if i % 97 == 0 else words[i % len(words)]) + (".\\n\\n" if i % 60 == 59 else " ")
                   for i in range({words}))
    return Reply.say(text, chunk_size={chunk}, chunk_delay={delay})
server = FakeLLMServer(reply_fn=reply_fn, models=["model-0", "model-1", "model-2", "model-3"]).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""


def expected(model: str) -> str:
    words = ("the", "robot", "streams", "**text**", "while", "`tools`", "run", "and", "columns", "render")
    return "".join((model if i % 97 == 0 else words[i % len(words)]) + (".\n\n" if i % 60 == 59 else " ")
                   for i in range(WORDS))


#: The CPU of each tick of the comparison's frame clock in the current round (s), when :func:`time_ticks` is on.
TICKS: list[float] = []


def time_ticks() -> None:
    """Time the CPU of every tick of the comparisons' frame clock into :data:`TICKS` (before the window exists: its
    timer is connected to the method as the class has it then)."""
    from ui.window.compare import Comparisons

    tick = Comparisons._flush_columns

    def timed(self: Any, *, every: bool = False) -> None:
        start = time.thread_time()
        try:
            tick(self, every=every)
        finally:
            TICKS.append(time.thread_time() - start)

    Comparisons._flush_columns = timed  # type: ignore[method-assign]


def share(values: list[float], pct: float) -> float:
    """The value ``pct`` % of ``values`` stay under (0 for none)."""
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


async def one_round(root: Any, base: str, meter: Any, watch: Any = None) -> dict[str, Any]:
    from ui.compare.session import CandidateSpec

    window = root.window
    comparisons = window.comparisons
    assert comparisons.start([CandidateSpec("assistant", model=f"openai/model-{i}", api_base=base)
                              for i in (1, 2, 3)])
    await asyncio.sleep(0.2)  # the columns' first paint
    counter = EventCounter(comparisons.view)
    meter.start()
    TICKS.clear()
    if watch is not None:
        watch.clear()
        from gc_watch import thread_cpu

        watch.threads_before = thread_cpu()
    cpu = time.process_time()
    start = time.perf_counter()
    comparisons.send("Write a long answer.")
    await asyncio.sleep(0)
    while comparisons.running:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    stall = meter.stop()
    counter.stop()
    stats = comparisons.stats.columns
    for index, chat in enumerate(comparisons.chats):
        shown = "".join(w.text for w in chat.items() if hasattr(w, "append"))
        want = expected(f"model-{index}").strip()
        assert shown.strip() == want, f"column {index} shows {len(shown)} characters of {len(want)}"
    tokens = sum(c.output_tokens for c in stats)
    firsts = [c.ttft or 0.0 for c in stats]
    comparisons.close()
    return {"seconds": elapsed, "tokens": tokens, "tokens_per_s": tokens / elapsed, "longest_stall_ms": stall * 1000,
            "longest_pass_cpu_ms": meter.cpu_worst * 1000, "p99_pass_cpu_ms": meter.share(99) * 1000,
            "p90_pass_cpu_ms": meter.share(90) * 1000, "passes": len(meter.cpus),
            "passes_over_a_frame": sum(1 for gap in meter.gaps if gap > FRAME_MS / 1000),
            "load": os.getloadavg()[0],
            "slowest_ttft_s": max(firsts), "cpu_ms_per_1000_tokens": cpu * 1e6 / tokens,
            "paints_per_s": counter.paints / elapsed, "layouts_per_s": counter.layouts / elapsed,
            "ticks": len(TICKS), "tick_cpu_median_ms": share(TICKS, 50) * 1000, "tick_cpu_p90_ms": share(TICKS, 90) * 1000,
            "tick_cpu_max_ms": max(TICKS, default=0.0) * 1000, **({} if watch is None else gc_figures(meter, watch))}


def gc_figures(meter: Any, watch: Any) -> dict[str, Any]:
    """The round's collections and its stalls over a frame, each with the collections that fell in it."""
    late = [{"ms": round(gap * 1000, 1), "cpu_ms": round(cpu * 1000, 1),
             "collections": [c.describe() for c in watch.during(began, ended)]}
            for began, ended, gap, cpu in meter.late]
    from gc_watch import busiest, thread_cpu

    return {"collections": watch.summary(), "longest_gen2_ms": watch.longest(2), "late_ticks": late,
            "threads": busiest(watch.threads_before, thread_cpu())}


class EventCounter:
    """Counts the paint events and layout requests of the columns' widgets (every widget under the compare
    view): the window's own work per frame, which the machine's load does not change the way it does time."""

    def __init__(self, view: Any) -> None:
        from PySide6.QtCore import QEvent, QObject
        from PySide6.QtWidgets import QWidget

        counter = self
        self.paints = self.layouts = 0

        class Filter(QObject):
            def eventFilter(self, _obj: Any, event: Any) -> bool:
                kind = event.type()
                if kind == QEvent.Type.Paint:
                    counter.paints += 1
                elif kind == QEvent.Type.LayoutRequest:
                    counter.layouts += 1
                return False

        self.filter = Filter()
        self.widgets = [view, *view.findChildren(QWidget)]
        for widget in self.widgets:
            widget.installEventFilter(self.filter)

    def stop(self) -> None:
        for widget in self.widgets:
            widget.removeEventFilter(self.filter)


def cpu_meter() -> Any:
    """The bench's stall meter, also counting the CPU this thread spent between two ticks (the longest): the
    work one pass of the event loop did, which the machine's load does not stretch the way it does the gap."""
    from bench_ui_streaming import StallMeter

    class CpuStallMeter(StallMeter):
        def start(self) -> None:
            self.cpu_last = time.thread_time()
            self.cpu_worst = 0.0
            self.cpus: list[float] = []
            self.gaps: list[float] = []
            #: The ticks over a frame late: (previous tick, this tick, gap, this thread's CPU between them).
            self.late: list[tuple[float, float, float, float]] = []
            super().start()

        def _tick(self) -> None:
            now = time.thread_time()
            self.cpu_worst = max(self.cpu_worst, now - self.cpu_last)
            self.cpus.append(now - self.cpu_last)
            self.gaps.append(time.perf_counter() - self.last - 0.002)
            if self.gaps[-1] > FRAME_MS / 1000:
                self.late.append((self.last, time.perf_counter(), self.gaps[-1], self.cpus[-1]))
            self.cpu_last = now
            super()._tick()

        def share(self, pct: float) -> float:
            """The pass CPU that ``pct`` % of the passes stay under (s)."""
            return share(self.cpus, pct)

    return CpuStallMeter()


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The loopback server in a process of its own (its stdin closed ends it) and its OpenAI-style base URL."""
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), words=WORDS, chunk=CHUNK,
                                                                  delay=CHUNK_DELAY)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    return proc, proc.stdout.readline().strip() + "/v1"


def main() -> int:

    watch = None
    if "--gc" in sys.argv[1:]:
        from gc_watch import GcWatch

        watch = GcWatch().install()
    proc, base = start_server()
    assert proc.stdin is not None
    home = scratch_dir("bench-compare-window-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    from ui.app import Application, get_app, new_event_loop
    from workspace.config import load_config

    app = get_app()
    time_ticks()
    loop = new_event_loop(app)
    asyncio.set_event_loop(loop)
    config = load_config(env={}, overrides={"llm": {"model": "openai/model-0", "api_base": base, "max_retries": 1,
                                                    "max_concurrent_requests": 4}})
    root = Application(db_path=home / "bench.db", config=config, theme_name="light")
    root.window.resize(1920, 1080)
    root.window.show()
    rounds: list[dict[str, Any]] = []
    try:
        with loop:
            loop.run_until_complete(asyncio.sleep(float(os.environ.get("START_WAIT", "1.0"))))
            meter = cpu_meter()
            loop.run_until_complete(one_round(root, base, meter))  # warm-up
            for _ in range(ROUNDS):
                rounds.append(loop.run_until_complete(one_round(root, base, meter, watch)))
            loop.run_until_complete(root.aclose())
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    best = max(r["tokens_per_s"] for r in rounds)
    worst_stall = max(r["longest_stall_ms"] for r in rounds)
    median_stall = sorted(r["longest_stall_ms"] for r in rounds)[len(rounds) // 2]
    median_cpu = sorted(r["longest_pass_cpu_ms"] for r in rounds)[len(rounds) // 2]
    median_tick = sorted(r["tick_cpu_max_ms"] for r in rounds)[len(rounds) // 2]
    met = "met" if median_stall <= FRAME_MS else "missed"
    print(f"4 columns streaming {WORDS} words each ({CHUNK}-character pieces {CHUNK_DELAY * 1000:.0f} ms apart), "
          f"{ROUNDS} rounds after a warm-up:")
    for r in rounds:
        print(f"  {r['tokens']:,} tokens in {r['seconds']:.2f} s: {r['tokens_per_s']:,.0f} tokens/s rendered, "
              f"longest stall {r['longest_stall_ms']:.1f} ms ({r['passes_over_a_frame']} of {r['passes']} passes over a "
              f"frame), CPU of a pass: longest {r['longest_pass_cpu_ms']:.1f} ms, p99 {r['p99_pass_cpu_ms']:.1f} ms, "
              f"p90 {r['p90_pass_cpu_ms']:.1f} ms; slowest first token {r['slowest_ttft_s'] * 1000:.0f} ms; "
              f"{r['cpu_ms_per_1000_tokens']:.0f} ms of CPU per 1,000 tokens; CPU of a frame tick (of {r['ticks']}): "
              f"median {r['tick_cpu_median_ms']:.1f} ms, p90 {r['tick_cpu_p90_ms']:.1f} ms, longest "
              f"{r['tick_cpu_max_ms']:.1f} ms; {r['paints_per_s']:.0f} paints and "
              f"{r['layouts_per_s']:.0f} layout requests a second in the columns; load average {r['load']:.1f}")
        if watch is not None:
            print(f"    collections: {r['collections']}; CPU by thread: {r['threads']}")
            for tick in sorted(r["late_ticks"], key=lambda t: -t["ms"])[:5]:
                print(f"    stall {tick['ms']:.1f} ms (window thread CPU {tick['cpu_ms']:.1f} ms): "
                      f"{', '.join(tick['collections']) or 'no collection'}")
    print(f"best {best:,.0f} tokens/s; longest stall: median {median_stall:.1f} ms, worst {worst_stall:.1f} ms "
          f"(target: one frame, {FRAME_MS:.1f} ms): {met}; CPU of the longest pass of the event loop: median "
          f"{median_cpu:.1f} ms; of the longest frame tick: median {median_tick:.1f} ms")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "compare_window.json").write_text(json.dumps({
        "words": WORDS, "chunk": CHUNK, "chunk_delay": CHUNK_DELAY, "rounds": rounds, "best_tokens_per_s": best,
        "median_longest_stall_ms": median_stall, "median_longest_pass_cpu_ms": median_cpu,
        "median_longest_tick_cpu_ms": median_tick, "target_stall_ms": FRAME_MS, "target": met}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
