"""Where the agent loop's own CPU goes in a turn, its transport replayed in process (no server, no sockets).

``bench_agent_loop.py``'s turn (a streamed call that asks for a tool, the tool call, a streamed answer) with the lean
provider, the server's items recorded once and replayed (as that bench's replayed figure), ``TURNS`` turns a round,
``ROUNDS`` rounds. Prints, per turn (medians of the rounds, with the load average): the loop's CPU (``process_time``)
and the event-loop thread's (``thread_time``); the time inside each part (inclusive wall time of the named calls,
which nothing else interleaves with here; a part calls others: the record builds the provider's request): setting
the run up (``Robot.stream``), preparing the context (``ContextManager.prepare``), recording the request
(``RequestRecorder.record``), the tool call (``AgentRun._run_tools``), the result (``AgentRun._make_result``), the
events (``AgentRun.emit``, with how many); the replayed items and the passes of the event loop a turn takes beyond
one per item; the objects a turn leaves to the cycle collector; what an async generator layer costs a streamed item against a callback (the design the provider's
stream could take instead); the turn with its request records and its context manager knocked out (what cutting
them could save at most); the turn with its process idle four times (as a real turn is, waiting for its server), the
waits' own cost apart (the same work costs more with its code and data out of the CPU's caches); and what a streamed piece of a long answer costs read by hand, through the provider's
stream, and through the whole loop. ``.venv/bin/python bench/bench_loop_parts.py``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import itertools
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_agent_loop as bal  # noqa: E402

TURNS = int(os.environ.get("TURNS", "300"))
ROUNDS = int(os.environ.get("ROUNDS", "7"))


def timed(owner: Any, name: str, spent: dict[str, list[int]]) -> None:
    """Wrap ``owner.name`` to add its calls' nanoseconds and count to ``spent[name]``."""
    real = getattr(owner, name)
    spent[name] = [0, 0]

    if inspect.iscoroutinefunction(real):
        @functools.wraps(real)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return await real(*args, **kwargs)
            finally:
                spent[name][0] += time.perf_counter_ns() - started
                spent[name][1] += 1
    else:
        @functools.wraps(real)
        def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            started = time.perf_counter_ns()
            try:
                return real(*args, **kwargs)
            finally:
                spent[name][0] += time.perf_counter_ns() - started
                spent[name][1] += 1
    setattr(owner, name, wrapper)


async def generator_layer(items: int = 200_000) -> tuple[float, float]:
    """Microseconds an item costs read through one more async generator, and handed to a callback instead."""

    class Source:
        def __init__(self) -> None:
            self.left = items

        def __aiter__(self) -> Source:
            return self

        async def __anext__(self) -> int:
            self.left -= 1
            if self.left < 0:
                raise StopAsyncIteration
            return 1

    async def layer(source: Source) -> Any:
        async for item in source:
            yield item

    async def through_generator() -> None:
        async for _item in layer(Source()):
            pass

    async def through_callback(see: Any) -> None:
        async for item in Source():
            see(item)

    gen, call = [], []
    for _ in range(5):
        started = time.process_time()
        await through_generator()
        gen.append((time.process_time() - started) / items * 1e6)
        started = time.process_time()
        await through_callback(lambda item: None)
        call.append((time.process_time() - started) / items * 1e6)
    return min(gen), min(call)


async def per_piece(pieces: int = 2000, rounds: int = 7) -> tuple[float, float, float]:
    """Microseconds of CPU a streamed piece of a long answer costs (``pieces`` pieces of text, the lean provider's
    items replayed with no pass of the event loop between them): read by hand (the item's delta read), through the
    provider's stream alone, and through the whole loop (``Robot.arun``, nobody reading the events)."""
    from workspace.providers.openai_provider import OpenAICompatibleProvider
    from workspace.robot import Robot

    items: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    items += [{"choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}]}
              for i in range(pieces)]
    items += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": pieces}}]

    class Source:
        def __init__(self) -> None:
            self.left = iter(items)

        def __aiter__(self) -> Source:
            return self

        async def __anext__(self) -> dict[str, Any]:
            for item in self.left:
                return item
            raise StopAsyncIteration

    async def replayed(request: dict[str, Any]) -> Source:
        return Source()

    provider: Any = OpenAICompatibleProvider("openai/fake", api_base="http://127.0.0.1:9/v1", api_key="sk-test")
    provider._open = replayed
    robot = Robot("bench", system_prompt="You are helpful.", provider=provider)

    async def by_hand() -> None:
        async for item in Source():
            choices = item.get("choices") or ()
            if choices:
                (choices[0].get("delta") or {}).get("content")

    async def provider_alone() -> None:
        async for _chunk in provider.stream(system="You are helpful.", messages=[], tools=[], settings={}):
            pass

    async def loop() -> None:
        robot.reset()
        await robot.arun("Say words.")

    paths = (by_hand, provider_alone, loop)
    spent: list[list[float]] = [[] for _ in paths]
    for fn in paths:
        await fn()
    for _ in range(rounds):
        for i, fn in enumerate(paths):
            started = time.thread_time()
            await fn()
            spent[i].append((time.thread_time() - started) * 1e6 / pieces)
    hand, alone, whole = (statistics.median(s) for s in spent)
    return hand, alone, whole


#: The wait before each model call's first two items in :func:`after_waits` (a real turn's four waits for its server).
WAIT_S = 0.0005


class _Waiting(bal._Replayed):
    """The items replayed with the waits a real call has: for the response, then for its first chunk."""

    async def __aiter__(self) -> Any:
        for index, item in enumerate(self.items):
            await asyncio.sleep(WAIT_S if index < 2 else 0)
            yield item


async def after_waits(turn: Any, waiting: list[bool], rounds: int, turns: int) -> tuple[float, float, float]:
    """The loop's CPU a turn (this thread's, microseconds, median of rounds taken in turn) with its items replayed
    at once, and with each call's first two items after a wait of :data:`WAIT_S` (the process idle four times a
    turn, as in a real turn: the CPU's caches lose the loop's code and data meanwhile); and the same passes of the
    event loop with the same waits and no work (what the waits cost alone)."""
    async def bare() -> None:
        for index in range(21):
            await asyncio.sleep(WAIT_S if index in (0, 1, 10, 11) else 0)

    spent: list[list[float]] = [[], [], []]
    try:
        for _ in range(rounds):
            for i, (wait, run) in enumerate(((False, turn), (True, turn), (True, bare))):
                waiting[0] = wait
                samples = []
                for _ in range(max(20, turns // 5)):
                    started = time.thread_time()
                    await run()
                    samples.append((time.thread_time() - started) * 1e6)
                spent[i].append(statistics.median(samples))
    finally:
        waiting[0] = False
    at_once, waited, waits = (statistics.median(s) for s in spent)
    return at_once, waited, waits


async def knocked_out(turn: Any, rounds: int, turns: int) -> tuple[float, float, float]:
    """The loop's CPU a turn (this thread's, microseconds, median of ``rounds`` rounds taken in turn): as it is, with
    its requests recorded as nothing (an empty ``model_request``; the provider's body still built once for the call),
    and with that and no context manager (the conversation sent as it is: no counts, no ``context_usage``). What
    the two would save at most: an upper bound of any cut of them, not a design (both are features)."""
    from workspace import events as ev
    from workspace import robot as robot_module
    from workspace.context.requests import RequestRecorder

    real_record, real_prepare = RequestRecorder.record, robot_module.prepare

    def nothing_recorded(self: Any, provider: Any, **request: Any) -> Any:
        provider.prepared_request(**request)
        return ev.ModelRequest()

    def without_context(robot: Any, message: Any, options: Any) -> Any:
        spec = real_prepare(robot, message, options)
        spec.context = None
        return spec

    def as_is() -> None:
        RequestRecorder.record, robot_module.prepare = real_record, real_prepare  # type: ignore[method-assign]

    def no_record() -> None:
        RequestRecorder.record = nothing_recorded  # type: ignore[method-assign]

    def no_record_no_context() -> None:
        no_record()
        robot_module.prepare = without_context

    spent: list[list[float]] = [[], [], []]
    try:
        for _ in range(rounds):
            for i, setup in enumerate((as_is, no_record, no_record_no_context)):
                setup()
                for _ in range(20):
                    await turn()
                started = time.thread_time()
                for _ in range(turns):
                    await turn()
                spent[i].append((time.thread_time() - started) * 1e6 / turns)
    finally:
        as_is()
    whole, unrecorded, bare = (statistics.median(s) for s in spent)
    return whole, unrecorded, bare


async def main() -> None:
    from workspace.agent.run import AgentRun
    from workspace.context.manager import ContextManager
    from workspace.context.requests import RequestRecorder
    from workspace.providers import provider_for
    from workspace.robot import Robot
    from workspace.tools import tool

    proc = subprocess.Popen([sys.executable, "-c", bal.SERVER.format(root=str(ROOT))], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    base = proc.stdout.readline().strip()

    @tool
    async def get_weather(city: str) -> dict[str, str]:
        """Current weather for a city."""
        return {"city": city, "sky": "sunny"}

    provider: Any = provider_for("openai/fake", api_base=base + "/v1", api_key="sk-test")
    robot = Robot("bench", system_prompt="You are helpful.", tools=[get_weather], provider=provider)

    async def turn() -> None:
        robot.reset()
        result = await robot.arun("Weather in Oslo?")
        assert str(result.last_text_content).startswith("It is"), result.to_json()

    sent: list[list[Any]] = []
    real_open = provider._open

    async def recording(request: dict[str, Any]) -> Any:
        items = [item async for item in await real_open(request)]
        sent.append(items)
        return bal._Replayed(items)

    try:
        provider._open = recording
        await turn()
    finally:
        proc.terminate()
    calls = itertools.count()

    waiting = [False]

    async def replaying(request: dict[str, Any]) -> Any:
        return (_Waiting if waiting[0] else bal._Replayed)(sent[next(calls) % len(sent)])

    provider._open = replaying
    for _ in range(50):
        await turn()
    loop = asyncio.get_running_loop()
    passes = [0]
    run_once = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:
        passes[0] += 1
        run_once()

    # The whole turn first, nothing wrapped.
    cpu, thread = [], []
    for _ in range(ROUNDS):
        started, started_thread = time.process_time(), time.thread_time()
        for _ in range(TURNS):
            await turn()
        cpu.append((time.process_time() - started) * 1e6 / TURNS)
        thread.append((time.thread_time() - started_thread) * 1e6 / TURNS)
    as_it_is, unrecorded, bare = await knocked_out(turn, ROUNDS, TURNS)
    at_once, waited, waits = await after_waits(turn, waiting, ROUNDS, TURNS)
    loop._run_once = counted  # type: ignore[attr-defined]
    for _ in range(TURNS):
        await turn()
    loop._run_once = run_once  # type: ignore[attr-defined]
    items = sum(len(s) for s in sent)
    spent: dict[str, list[int]] = {}
    for owner, name in ((Robot, "stream"), (ContextManager, "prepare"), (RequestRecorder, "record"),
                        (AgentRun, "_run_tools"), (AgentRun, "_make_result"), (AgentRun, "emit")):
        timed(owner, name, spent)
    parts: dict[str, list[float]] = {name: [] for name in spent}
    counts: dict[str, float] = {}
    for _ in range(ROUNDS):
        for value in spent.values():
            value[0] = value[1] = 0
        for _ in range(TURNS):
            await turn()
        for name, (ns, count) in spent.items():
            parts[name].append(ns / 1000 / TURNS)
            counts[name] = count / TURNS
    # What a turn leaves to the cycle collector (objects only a collection frees: kept alive by reference cycles).
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            await turn()
        cyclic = gc.collect() / 20
    finally:
        gc.enable()
    gen, call = await generator_layer()
    hand, alone, whole = await per_piece()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} cores; {TURNS} turns a round, {ROUNDS} rounds, medians")
    print(f"the loop's CPU a turn, its transport replayed: {statistics.median(cpu):6.1f} us "
          f"(the event loop's thread: {statistics.median(thread):6.1f} us)")
    labels = {"stream": "setting the run up (Robot.stream)", "prepare": "preparing the context (ContextManager.prepare)",
              "record": "recording the request (RequestRecorder.record, with the provider's build)",
              "_run_tools": "the tool call (AgentRun._run_tools)", "_make_result": "the result (AgentRun._make_result)",
              "emit": "emitting the events (AgentRun.emit)"}
    for name, label in labels.items():
        print(f"  {label:78s} {statistics.median(parts[name]):6.1f} us, {counts[name]:4.1f} calls")
    print(f"  replayed items a turn: {items}; passes of the event loop a turn: {passes[0] / TURNS:.1f} "
          f"({passes[0] / TURNS - items:+.1f} beyond one an item)")
    print(f"  objects a turn leaves to the cycle collector: {cyclic:.1f}")
    print(f"knocked out (an upper bound of what cutting them could save): the turn {as_it_is:6.1f} us; its requests "
          f"recorded as nothing {unrecorded:6.1f} us; and no context manager {bare:6.1f} us")
    print(f"after four waits a turn ({WAIT_S * 1e3:.1f} ms each, as a real turn waits for its server): the turn "
          f"{waited:6.1f} us against {at_once:6.1f} us at once ({waited / at_once:.2f} x); the waits alone, with no "
          f"work {waits:6.1f} us: the loop's work costs {(waited - waits) / at_once:.2f} x with its code and data out "
          "of the caches")
    print(f"an item read through one more async generator: {gen:.3f} us; handed to a callback instead: {call:.3f} us")
    print(f"a streamed piece of a long answer (CPU of the event loop's thread): read by hand {hand:.2f} us, through the "
          f"provider's stream {alone:.2f} us, through the whole loop {whole:.2f} us")


if __name__ == "__main__":
    asyncio.run(main())
