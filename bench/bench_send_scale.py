"""A send at turn 100, 1,000 and 10,000: how long the caller's thread (the window's) is held.

Builds a robot thread of N turns (each: the user's message and an answer) in a fresh database,
opens it in a :class:`workspace.session.Workspace` with a scripted provider, and measures, in the
same process:

* ``baseline``: the session knows nothing of the conversation before each send (as before the
  session kept it: every send rebuilt the whole branch from the database on the caller's thread);
* ``kept``: the conversation read once when the thread opens (``load_conversation``, in a worker
  thread), then each send extends it with the turn it added (read alone, off the event loop).

Figures per length: the ``send()`` call itself (the stall a person feels at the click; wall and this thread's
CPU time, ``time.thread_time``) and the worst event-loop stall from the click until the run is recorded (a 1 ms
ticker; its CPU time beside it), medians of ``SENDS`` (7; ``SENDS`` in the environment sets another) sends, each
printed with the load average.
Targets (the exit status is 1 when one is missed): the 10,000-turn send's CPU within 1.5 x the 100-turn one's
(wall time is printed beside it; under load it is mostly waits for a core), the send under 16 ms, and the worst
loop stall at every length under a frame (16 ms) on a quiet machine (load average < 1), under 50 ms on a busy one.
Beside them, the CPU of recording one model request of the conversation (``RequestRecorder.record``, on the event
loop at every model call), and of the lean provider building that request and writing it as the bytes it posts
(the scripted provider here sends nothing), and of the litellm provider that runs litellm in a process of its own
writing the request's line of the pipe. ``--pipe [rounds] [lengths...]``: only that line, over threads built in
memory (and what litellm's process does to read it back).
Writes bench/results/send_scale.json. ``.venv/bin/python bench/bench_send_scale.py [lengths...]``
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LENGTHS = (100, 1_000, 10_000)
SENDS = int(os.environ.get("SENDS", "7"))
#: The worst loop stall allowed (ms): a frame on a quiet machine, 50 ms on a busy one (load average >= 1).
FRAME_MS, BUSY_MS = 16.0, 50.0


def build_thread(db_path: Path, turns: int) -> str:
    from workspace import events as ev
    from workspace.messages import TextMessage
    from workspace.persistence import Store
    from workspace.result import RobotResult

    store = Store(db_path)
    thread = store.create_thread(robot="assistant", title=f"{turns} turns")
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"Question {i}: what does file_{i}.py do?", parent_turn_id=parent)
        run = f"run{i}"
        answer = f"**file_{i}.py** defines `f`, which does nothing:\n\n```python\ndef f():\n    pass\n```"
        result = RobotResult(robot_name="assistant", output=[TextMessage(role="assistant", content=answer)])
        store.append_events(thread.id, turn.id, [
            ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"Question {i}", model="bench"),
            ev.Text(run_id=run, robot="assistant", seq=2, text=answer),
            ev.RunFinished(run_id=run, robot="assistant", seq=3, result=result),
        ])
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    store.close()
    return thread.id


class LoopStalls:
    """The longest gap between ticks of a 1 ms asyncio ticker (minus the interval), and the CPU time this thread
    (the loop's) spent in it."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.worst_cpu = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last, last_cpu = time.perf_counter(), time.thread_time()
        while True:
            await asyncio.sleep(0.001)
            now, cpu = time.perf_counter(), time.thread_time()
            if now - last - 0.001 > self.worst:
                self.worst, self.worst_cpu = now - last - 0.001, cpu - last_cpu
            last, last_cpu = now, cpu

    def start(self) -> None:
        self.worst = self.worst_cpu = 0.0
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def stop(self) -> float:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        return max(0.0, self.worst)


def _recording_cpu_ms(messages: list[Any]) -> float:
    """This thread's CPU (ms) to record one model request of ``messages`` after one of the same conversation
    (:class:`workspace.context.requests.RequestRecorder`, on the event loop at every model call; with a provider
    that builds no body of its own, as here, it converts every message too): where the worst stall goes."""
    from workspace.context.requests import RequestRecorder
    from workspace.providers.testing import ScriptedProvider

    recorder, provider = RequestRecorder(), ScriptedProvider(default="Fine.")
    recorder.record(provider, system="bench", messages=messages[:-1], tools=[], settings={})
    start = time.thread_time()
    recorder.record(provider, system="bench", messages=messages, tools=[], settings={})
    return (time.thread_time() - start) * 1000


def _request_bytes_cpu_ms(messages: list[Any]) -> float:
    """This thread's CPU (ms) for the lean provider (OpenAI-compatible servers) to build one request of
    ``messages`` and write it as the bytes it posts, after one of the same conversation: what the event loop does
    per model call before the request leaves (the openai SDK's JSON of the whole body when the provider hands it
    a dict; the provider's own bytes, each message written once, when it has a ``BodyEncoder``)."""
    from openai._utils._json import openapi_dumps

    from workspace.providers.openai_provider import OpenAICompatibleProvider

    provider = OpenAICompatibleProvider("openai/bench", api_base="http://127.0.0.1:9/v1")
    encoder = getattr(provider, "encoder", None)
    write = encoder.encode if encoder is not None else openapi_dumps
    write(provider.build_request(system="bench", messages=messages[:-1], tools=[], settings={}))
    start = time.thread_time()
    write(provider.build_request(system="bench", messages=messages, tools=[], settings={}))
    return (time.thread_time() - start) * 1000


def _pipe_line_ms(messages: list[Any]) -> dict[str, float]:
    """What the litellm provider that runs litellm in a process of its own (the window's) does on the event loop to
    write one request of ``messages`` as the line of the pipe, after one of the same conversation (the call before
    it, one turn shorter, its newest turn read back as new objects): this thread's CPU and the wall time (ms); and
    what litellm's process does with that line before litellm sees it (``json.loads`` and ``Message.from_dict`` of
    every message; it runs there, off the window's process: only its latency matters). Works with the provider
    before it kept each message's JSON (``[m.to_dict() ...]`` encoded whole at every call) for a comparison."""
    from workspace.messages import Message
    from workspace.providers import litellm_process as pipe
    from workspace.providers import wire

    provider = pipe.SeparateLiteLLMProvider("openai/bench", api_key="sk-bench")

    def line(sent: list[Any]) -> tuple[Any, ...]:
        fields: dict[str, Any] = {"op": "stream", "provider": provider._spec, "system": "bench", "tools": [],
                                  "settings": {}}
        if hasattr(provider, "_encode"):
            body = provider._encode({**fields, "messages": list(sent)})
        else:
            body = pipe.encode_request({**fields, "messages": [m.to_dict() for m in sent]})
        if hasattr(wire, "joined_parts"):  # the pieces the writer thread writes one after the other
            return wire.joined_parts({"id": 1}, body)
        return (wire.joined({"id": 1}, body),)

    line(messages[:-2])
    copied = [*messages[:-2], *(Message.from_dict(m.to_dict()) for m in messages[-2:])]  # read back: new objects
    start, start_cpu = time.perf_counter(), time.thread_time()
    pieces = line(copied)
    wall, cpu = time.perf_counter() - start, time.thread_time() - start_cpu
    written = b"".join(pieces)
    start = time.perf_counter()
    request = json.loads(written)
    [Message.from_dict(m) for m in request["messages"]]
    return {"pipe_line_ms": wall * 1000, "pipe_line_cpu_ms": cpu * 1000,
            "helper_decode_ms": (time.perf_counter() - start) * 1000, "line_kb": len(written) / 1024}


def pipe_only(lengths: tuple[int, ...], rounds: int) -> int:
    """Only the pipe line, over threads built in memory (the same turns as :func:`build_thread`'s): medians of
    ``rounds`` calls per length, each with the load average. ``bench_send_scale.py --pipe [rounds] [lengths...]``."""
    from workspace.messages import TextMessage

    print(f"{'turns':>7}  {'pipe line CPU':>13}  {'wall':>9}  {'helper decode':>13}  {'line':>9}  load")
    for turns in lengths:
        messages: list[Any] = []
        for i in range(turns):
            answer = f"**file_{i}.py** defines `f`, which does nothing:\n\n```python\ndef f():\n    pass\n```"
            messages += [TextMessage(role="user", content=f"Question {i}: what does file_{i}.py do?"),
                         TextMessage(role="assistant", content=answer)]
        rows = [_pipe_line_ms(messages) for _ in range(rounds)]
        row = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"{turns:>7,}  {row['pipe_line_cpu_ms']:>10.3f} ms  {row['pipe_line_ms']:>6.3f} ms  "
              f"{row['helper_decode_ms']:>10.2f} ms  {row['line_kb']:>6.0f} kB  {os.getloadavg()[0]:.2f}")
    return 0


async def measure(db_path: Path, thread_id: str, *, kept: bool) -> dict[str, float]:
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    workspace = Workspace(db_path=db_path, provider=ScriptedProvider(default="Fine."))
    try:
        session = workspace.open_thread(thread_id)
        if kept:
            await session.load_conversation()
        calls: list[float] = []
        call_cpus: list[float] = []
        stalls: list[float] = []
        stall_cpus: list[float] = []
        for i in range(SENDS + 1):  # the first send builds the robot (templates): not counted
            if not kept:
                session._conversation = None  # what every send did before: rebuild the branch from the store
            meter = LoopStalls()
            meter.start()
            await asyncio.sleep(0.002)
            start, start_cpu = time.perf_counter(), time.thread_time()
            run = session.send(f"message {i}")
            call, call_cpu = time.perf_counter() - start, time.thread_time() - start_cpu
            await run.wait()
            while not run.done:
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.005)  # the turn read into the conversation, off the loop
            stall = await meter.stop()
            if i:
                calls.append(call)
                call_cpus.append(call_cpu)
                stalls.append(stall)
                stall_cpus.append(meter.worst_cpu)
        recorded = _recording_cpu_ms(list(session._conversation.messages)) if kept and session._conversation else 0.0
        written = (_request_bytes_cpu_ms(list(session._conversation.messages))
                   if kept and session._conversation else 0.0)
        piped = (_pipe_line_ms(list(session._conversation.messages))["pipe_line_cpu_ms"]
                 if kept and session._conversation else 0.0)
        return {"send_ms": statistics.median(calls) * 1000, "send_cpu_ms": statistics.median(call_cpus) * 1000,
                "recording_cpu_ms": recorded, "request_bytes_cpu_ms": written, "pipe_line_cpu_ms": piped,
                "worst_stall_ms": statistics.median(stalls) * 1000,
                "worst_stall_cpu_ms": statistics.median(stall_cpus) * 1000, "load": os.getloadavg()[0]}
    finally:
        await workspace.aclose()


async def run_all(lengths: tuple[int, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for turns in lengths:
        db_path = scratch_dir("robotlab-send-") / "bench.db"
        thread_id = build_thread(db_path, turns)
        out[str(turns)] = {"baseline": await measure(db_path, thread_id, kept=False),
                           "kept": await measure(db_path, thread_id, kept=True)}
    return out


def main(argv: list[str]) -> int:
    os.environ["ROBOTLAB_HOME"] = str(scratch_dir("robotlab-bench-"))
    if argv[:1] == ["--pipe"]:
        rounds = int(argv[1]) if len(argv) > 1 else SENDS
        return pipe_only(tuple(int(a) for a in argv[2:]) or LENGTHS, rounds)
    lengths = tuple(int(a) for a in argv) or LENGTHS
    result = asyncio.run(run_all(lengths))
    print(f"{'turns':>7}  {'send() before':>14} {'after (CPU)':>17}   {'worst loop stall before':>24} "
          f"{'after (CPU)':>17}  {'recording a request (CPU)':>25}  {'lean request bytes (CPU)':>24}  "
          f"{'litellm pipe line (CPU)':>23}  load")
    for turns, row in result.items():
        b, k = row["baseline"], row["kept"]
        print(f"{int(turns):>7,}  {b['send_ms']:>11.2f} ms {k['send_ms']:>5.2f} ms ({k['send_cpu_ms']:.2f})   "
              f"{b['worst_stall_ms']:>21.2f} ms {k['worst_stall_ms']:>5.2f} ms ({k['worst_stall_cpu_ms']:.2f})  "
              f"{k['recording_cpu_ms']:>22.2f} ms  {k['request_bytes_cpu_ms']:>21.2f} ms  "
              f"{k['pipe_line_cpu_ms']:>20.2f} ms  {k['load']:.1f}")
    first, last = result[str(lengths[0])]["kept"], result[str(lengths[-1])]["kept"]
    growth = last["send_cpu_ms"] / max(first["send_cpu_ms"], 0.001)
    stall = max(row["kept"]["worst_stall_ms"] for row in result.values())
    load = max(row["kept"]["load"] for row in result.values())
    limit = FRAME_MS if load < 1 else BUSY_MS
    checks = {
        f"send() CPU at {lengths[-1]:,} turns within 1.5 x at {lengths[0]:,} ({growth:.2f} x; wall "
        f"{last['send_ms'] / max(first['send_ms'], 0.001):.2f} x)": growth <= 1.5,
        f"send() under 16 ms ({last['send_ms']:.2f} ms)": last["send_ms"] < 16,
        f"worst loop stall under {limit:.0f} ms at load {load:.1f} ({stall:.2f} ms; curve "
        + " / ".join(f"{row['kept']['worst_stall_ms']:.1f}" for row in result.values()) + " ms)": stall < limit,
    }
    for name, met in checks.items():
        print(f"  target {name}: {'met' if met else 'missed'}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "send_scale.json").write_text(json.dumps({"lengths": result, "growth": round(growth, 2),
                                                     "targets": {"growth": 1.5, "send_ms": 16, "stall_ms": FRAME_MS,
                                                                 "stall_busy_ms": BUSY_MS},
                                                     "met": all(checks.values())}, indent=2) + "\n")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
