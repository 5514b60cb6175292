"""The first reply after launch as quick as the second: time from Send to the first rendered token.

Each run is a fresh process (nothing imported yet): it opens the main window as ``robotlab`` does
(paint first, then the configuration, the database and the thread list), waits ``TYPING`` seconds (a
person typing the first message; the model library loads in the background meanwhile), submits a
message from the message box (what Enter does) and measures until the first token reaches the chat (the
bridge's ``text_appended``, which coalesces text on a 16 ms timer: figures move in steps of about that).
Then it waits ``TYPING`` seconds again (the person typing the second message) and sends the second one:
the target compares these two, sent under the same conditions, so the ratio is what launching costs.
Also measured: a third message sent the moment the second reply ends (no one types that fast: it shows
what a process that never went idle gives), and the first message of a new thread, sent at once too
(what a first message costs anyway: the thread's rows, the thread list).

Why the pause before the second message matters: on a machine that idles its CPUs (and, on some, pages
out code nobody ran for a few seconds) any work after a pause is slower than the same work right after
other work. The bench measures that in its own process first: a fixed piece of pure-Python work right
after other work and after ``TYPING`` seconds of sleep (no RobotLab code involved).

The model is ``openai/fake`` on the loopback server (tests/fakes/llm_server.py, in a process of its
own); ``PROVIDER`` picks the library:

* ``litellm`` (``llm.provider: litellm``): litellm and its model map, seconds to import, in a process of
  its own (the window's default, ``llm.litellm_process: auto``);
* ``litellm-same`` (also ``llm.litellm_process: same``): litellm imported in the window's process, the
  baseline the row above is compared with;
* ``auto``: the lean provider (the openai SDK) that serves OpenAI-compatible servers.

Also measured: the longest stall of the window's event loop (a 2 ms Qt timer) from the moment the
window is filled in until the first message is sent, i.e. while the library loads. Medians of ``RUNS``
runs per provider. Target: first <= 1.3 x second (the exit status is 1 when missed). Writes
bench/results/ui_first_reply.json. ``--turns N``: Send -> first rendered token at a thread's turn 1 and turn N
(the turns between sent at once; each measured after ``TYPING`` s, in a window whose first reply is behind it),
lean provider, medians of ``RUNS`` processes; target: turn N at most 1.5 x turn 1.
``FIRST_TOKEN_MS``: the server waits that long before its first token, as a real model does (a small
local model: 30-300 ms); by default it answers at once, the case where our own work weighs most.
Run offscreen: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_first_reply.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("RUNS", "5"))
TYPING = float(os.environ.get("TYPING", "6"))
FIRST_TOKEN_MS = float(os.environ.get("FIRST_TOKEN_MS", "0"))
#: ``--turns N``: turn N's Send -> first token at most this many times turn 1's.
LATER_TURN_RATIO = 1.5
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
text = "Hello from the local model, streamed in words."
delay = {delay!r} / 1000
server = FakeLLMServer(default_text=text, reply_fn=(lambda body: Reply(text, stall_before=delay)) if delay else None).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""

CHILD = r"""
import asyncio, json, os, sys, time
T0 = time.perf_counter()
sys.path.insert(0, ROOT)
from ui.app import Application, get_app, new_event_loop
import ui.controller

warmed = {}
_preload = ui.controller.Controller.preload_provider
def preload(self):
    started = time.perf_counter()
    warmed.setdefault("from", started)
    job = _preload(self)
    if job is not None and hasattr(job, "add_done_callback"):
        def done(_):
            warmed.setdefault("s", time.perf_counter() - started)
            warmed.setdefault("until", time.perf_counter())
        job.add_done_callback(done)
    return job
ui.controller.Controller.preload_provider = preload

app = get_app()
home = os.environ["ROBOTLAB_HOME"]
root = Application(db_path=os.path.join(home, "bench.db"), defer=True)
root.window.resize(1400, 900)
root.window.show()
app.processEvents()
shown = time.perf_counter() - T0
loop = new_event_loop(app)
root.finish_startup(staged=True)

from PySide6.QtCore import QTimer

class Stalls:
    def __init__(self):
        self.last = time.perf_counter()
        self.worst = 0.0
        self.gaps = []
        self.timer = QTimer()
        self.timer.setInterval(2)
        self.timer.timeout.connect(self.tick)
        self.timer.start()
    def tick(self):
        now = time.perf_counter()
        gap = now - self.last - 0.002
        self.worst = max(self.worst, gap)
        if gap > 0.008:
            self.gaps.append((self.last, now))
        self.last = now

first_token = {}
first_token_cpu = {}
sent_cpu = []  # the window thread's CPU time (time.thread_time) from each Send to its first rendered token

def on_text(run_id, robot, text):
    first_token.setdefault(run_id, time.perf_counter())
    first_token_cpu.setdefault(run_id, time.thread_time())

root.bridge.text_appended.connect(on_text)

async def send(text):
    controller, composer = root.controller, root.window.composer
    before = set(first_token)
    composer.set_text(text)
    started, started_cpu = time.perf_counter(), time.thread_time()
    composer.submit()  # what Enter in the message box does
    assert not controller.idle, "send refused"
    while not (set(first_token) - before):
        await asyncio.sleep(0.001)
    run_id = next(iter(set(first_token) - before))
    got = first_token[run_id]
    sent_cpu.append(first_token_cpu[run_id] - started_cpu)
    while not controller.idle:
        await asyncio.sleep(0.005)
    return got - started

async def later_turn(turns):
    # Send -> first rendered token at a new thread's turn 1 and at its turn `turns` (the turns between sent at
    # once), each after TYPING s of typing, in a window already used (its first reply's costs paid).
    await asyncio.sleep(TYPING)
    await send("Warm up")
    root.controller.new_thread()
    await asyncio.sleep(TYPING)
    load_first = os.getloadavg()[0]
    first = await send("Turn 1")
    first_cpu = sent_cpu[-1]
    for i in range(2, turns):
        await send(f"Turn {i}")
    await asyncio.sleep(TYPING)
    load_last = os.getloadavg()[0]
    last = await send(f"Turn {turns}")
    print("RESULT " + json.dumps({"first": first, "last": last, "load_first": load_first, "load_last": load_last,
                                  "first_cpu": first_cpu, "last_cpu": sent_cpu[-1]}),
          flush=True)
    await root.aclose()

async def main():
    while not root.loaded:
        await asyncio.sleep(0.01)
    if LATER_TURN:
        await later_turn(LATER_TURN)
        return
    stalls = Stalls()  # from the filled-in window on: while the library loads in its thread
    await asyncio.sleep(TYPING)
    stall = stalls.worst
    stalls.timer.stop()
    start, end = warmed.get("from", 0.0), warmed.get("until", time.perf_counter())
    during = max([b - a - 0.002 for a, b in stalls.gaps if b > start and a < end] or [0.0])
    first = await send("Hello, who are you?")
    await asyncio.sleep(TYPING)  # the person types the second message
    second = await send("And again?")
    at_once = await send("And at once?")
    root.controller.new_thread()
    third = await send("A new thread, later")
    loaded = "litellm" in sys.modules, "openai" in sys.modules
    print("RESULT " + json.dumps({"shown": shown, "first": first, "second": second, "at_once": at_once, "third": third, "stall": stall,
                                  "during": during,
                                  "litellm": loaded[0], "openai": loaded[1], "warm_up": warmed.get("s", -1.0)}),
          flush=True)
    await root.aclose()

with loop:
    loop.run_until_complete(main())
"""


NAMES = {"litellm": "litellm, own process", "litellm-same": "litellm, window's process",
         "auto": "lean provider (openai SDK)", "none": "no library (offline demo)"}


def run_once(base: str, provider: str, home: str, later_turn: int = 0) -> dict[str, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"), "ROBOTLAB_HOME": home,
           "ROBOT_LAB_LLM__MODEL": "openai/fake" if provider != "none" else "", "ROBOT_LAB_LLM__API_BASE": base + "/v1",
           "ROBOT_LAB_LLM__PROVIDER": {"none": "auto", "litellm-same": "litellm"}.get(provider, provider),
           "ROBOT_LAB_LLM__LITELLM_PROCESS": "same" if provider == "litellm-same" else "auto",
           "ROBOT_LAB_DEMO__DELAY": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: byte-code caches written and used
    code = CHILD.replace("ROOT)", repr(str(ROOT)) + ")").replace("TYPING)", f"{TYPING})").replace(
        "LATER_TURN", str(later_turn))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=180)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(f"no result:\n{proc.stdout}\n{proc.stderr[-3000:]}")


def fixed_work() -> float:
    """A fixed piece of pure-Python work (JSON out and back), in milliseconds: no RobotLab code."""
    data = {f"k{i}": [i, str(i), {"x": i}] for i in range(2000)}
    started = time.perf_counter()
    for _ in range(3):
        json.loads(json.dumps(data))
    return (time.perf_counter() - started) * 1000


def machine_after_pause() -> tuple[float, float]:
    """The same work right after other work and after ``TYPING`` seconds of sleep (medians of 3)."""
    hot, paused = [], []
    for _ in range(3):
        fixed_work()
        hot.append(fixed_work())
        time.sleep(TYPING)
        paused.append(fixed_work())
    return statistics.median(hot), statistics.median(paused)


def later_turn_only(turns: int) -> int:
    """``--turns N``: Send -> first rendered token at turn 1 and at turn N of a thread (lean provider), medians of
    ``RUNS`` processes, with the load average; exit status 1 when turn N takes more than 1.5 x turn 1."""
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), delay=FIRST_TOKEN_MS)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    base = server.stdout.readline().strip()
    runs = []
    try:
        with tempfile.TemporaryDirectory() as home:
            for i in range(RUNS):
                with tempfile.TemporaryDirectory(dir=home) as own:  # a fresh database each run
                    runs.append(run_once(base, "auto", own, later_turn=turns))
                r = runs[-1]
                print(f"run {i + 1}: turn 1 {r['first'] * 1000:.1f} ms (CPU {r['first_cpu'] * 1000:.1f} ms, load average "
                      f"{r['load_first']:.1f}), turn {turns} {r['last'] * 1000:.1f} ms (CPU {r['last_cpu'] * 1000:.1f} ms, "
                      f"load average {r['load_last']:.1f})", flush=True)
    finally:
        server.terminate()
    first = statistics.median(r["first"] for r in runs) * 1000
    last = statistics.median(r["last"] for r in runs) * 1000
    first_cpu = statistics.median(r["first_cpu"] for r in runs) * 1000
    last_cpu = statistics.median(r["last_cpu"] for r in runs) * 1000
    met = last <= LATER_TURN_RATIO * first
    print(f"Send -> first rendered token (lean provider, median of {RUNS}): turn 1 {first:.1f} ms, turn {turns} {last:.1f} ms, "
          f"{last / first:.2f} x (target <= {LATER_TURN_RATIO} x): {'met' if met else 'missed'}; the window thread's CPU "
          f"meanwhile {first_cpu:.1f} vs {last_cpu:.1f} ms ({last_cpu / max(first_cpu, 0.01):.2f} x); "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0 if met else 1


def main() -> int:
    if sys.argv[1:2] == ["--turns"]:
        return later_turn_only(int(sys.argv[2]))
    load = os.getloadavg()[0]
    hot, paused = machine_after_pause()
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), delay=FIRST_TOKEN_MS)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    base = server.stdout.readline().strip()
    results: dict[str, list[dict[str, float]]] = {"litellm": [], "litellm-same": [], "auto": [], "none": []}
    try:
        with tempfile.TemporaryDirectory() as home:
            for provider in results:
                run_once(base, provider, home)  # byte-code caches and the OS file cache
            for _ in range(RUNS):
                for provider, runs in results.items():
                    runs.append(run_once(base, provider, home))
    finally:
        server.terminate()
    summary: dict[str, dict[str, float]] = {}
    for provider, runs in results.items():
        first = statistics.median(r["first"] for r in runs)
        second = statistics.median(r["second"] for r in runs)
        third = statistics.median(r["third"] for r in runs)
        at_once = statistics.median(r["at_once"] for r in runs)
        summary[provider] = {
            "first_message_ms": round(first * 1000, 1), "second_message_ms": round(second * 1000, 1),
            "ratio_first_over_second": round(first / second, 2),
            "third_message_sent_at_once_ms": round(at_once * 1000, 1),
            "ratio_first_over_sent_at_once": round(first / at_once, 2),
            "first_message_of_a_new_thread_at_once_ms": round(third * 1000, 1),
            "ratio_first_over_new_thread_at_once": round(first / third, 2),
            "longest_stall_ms": round(statistics.median(r["stall"] for r in runs) * 1000, 1),
            "longest_stall_while_loading_ms": round(statistics.median(r["during"] for r in runs) * 1000, 1),
            "window_shown_ms": round(statistics.median(r["shown"] for r in runs) * 1000, 1),
            "library_loaded_in_background_ms": round(statistics.median(r["warm_up"] for r in runs) * 1000, 1),
            "litellm_imported_by_the_window": any(r["litellm"] for r in runs),
            "each_run_first_second_ms": [(round(r["first"] * 1000, 1), round(r["second"] * 1000, 1)) for r in runs],
        }
    result = {"runs_each": RUNS, "typing_s": TYPING,
              "machine_fixed_work_ms": {"right_after_other_work": round(hot, 1), "after_a_pause": round(paused, 1)}, "server_first_token_ms": FIRST_TOKEN_MS, "target_ratio": 1.3,
              **summary}
    server = f", a server that takes {FIRST_TOKEN_MS:g} ms to its first token" if FIRST_TOKEN_MS else ""
    print(f"Send -> first rendered token, window just opened, each message sent after {TYPING:g} s of typing{server} "
          f"(median of {RUNS}):")
    for provider, s in summary.items():
        if provider == "none":
            continue
        name = NAMES[provider]
        print(f"  {name:27} first {s['first_message_ms']:6.1f} ms, second {s['second_message_ms']:6.1f} ms: "
              f"ratio {s['ratio_first_over_second']:.2f} (target <= 1.3)")
        print(f"  {'':27} sent at once after a reply {s['third_message_sent_at_once_ms']:.1f} ms (ratio "
              f"{s['ratio_first_over_sent_at_once']:.2f}); a new thread's first message, at once: "
              f"{s['first_message_of_a_new_thread_at_once_ms']:.1f} ms")
    print(f"This machine after a pause: a fixed piece of pure-Python work takes {hot:.1f} ms right after other "
          f"work, {paused:.1f} ms after {TYPING:g} s of sleep ({paused / hot:.1f} x)")
    print("Longest stall of the window's event loop between the filled-in window and the first message:")
    for provider, s in summary.items():
        name = NAMES[provider]
        during = "" if provider == "none" else (f"; while the library loaded ({s['library_loaded_in_background_ms']:.0f} ms "
                                                f"in its thread): {s['longest_stall_while_loading_ms']:.1f} ms")
        print(f"  {name:27} {s['longest_stall_ms']:6.1f} ms{during}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    name = f"ui_first_reply_server_{FIRST_TOKEN_MS:g}ms.json" if FIRST_TOKEN_MS else "ui_first_reply.json"
    (out / name).write_text(json.dumps(result, indent=2) + "\n")
    missed = [NAMES[p] for p, s in summary.items() if p != "none" and s["ratio_first_over_second"] > 1.3]
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; target first <= 1.3 x second: "
          + (f"missed by {', '.join(missed)}" if missed else "met"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
