"""Per-turn overhead of our agent loop against calling the model by hand.

One "turn" is what a user waits for: a streamed model call that asks for a tool, the tool
call, and a second streamed call that answers. Every path talks to the same loopback
OpenAI-compatible server (tests/fakes/llm_server.py, in its own process so it does not share
our GIL), in the same process, taking turns one turn at a time (in four rounds):

* our loop (``Robot.arun``) with the provider ``provider_for`` picks for ``openai/fake`` at a server
  address: the lean provider on the openai SDK (nobody reads the events: only the terminal one is built);
* the same with its events read (``Robot.stream`` iterated, as the window reads a run: every event built, every
  model request recorded), with no target of its own;
* our loop with ``LiteLLMProvider`` (every other model goes this way);
* the openai SDK by hand (``client.chat.completions.create``: pydantic models per chunk);
* the lean provider's own transport by hand (the SDK's raw ``client.post`` with chunks as plain dicts,
  what :class:`~workspace.providers.openai_provider.OpenAICompatibleProvider` sends and reads): the
  floor of what the loop adds;
* ``litellm.acompletion`` by hand.

200 turns each (``TURNS``), after a warm-up; prints the medians and the ratios. Targets: our loop on
the lean provider <= 1.2 x its own transport by hand (wall clock and this process's CPU), <= 1.3 x the
openai SDK by hand; on litellm <= 1.10 x litellm by hand. ``--lean-only``: the lean paths alone (no
litellm). Also our loop's own CPU per turn with the lean provider's transport replayed in this process
(no server, no sockets: the figure other load moves least), and the same with the process idle before each
turn (what the same work costs once its code and data left the CPU's caches, as between a server's replies). And
where a real turn's CPU goes on our loop and by hand: the SDK's posts, the reads of the streamed body, and the rest
(the loop's own work, run among the transport's: it costs more than replayed, and the transport's parts cost more
among it). Writes bench/results/agent_loop.json (with ``--lean-only``, the lean paths' figures alone).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TURNS = int(os.environ.get("TURNS", "200"))
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
def reply_fn(body):
    last = (body.get("messages") or [{{}}])[-1]
    if last.get("role") == "tool":
        return Reply.say("It is sunny in Oslo today, twenty degrees and light wind.")
    return Reply.tool("get_weather", {{"city": "Oslo"}})
server = FakeLLMServer(reply_fn=reply_fn).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.",
                                            "parameters": SCHEMA}}]


async def by_hand(litellm: Any, base: str) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."},
                                      {"role": "user", "content": "Weather in Oslo?"}]
    kw = {"model": "openai/fake", "api_base": base + "/v1", "api_key": "sk-test", "tools": TOOLS, "num_retries": 0,
          "timeout": 30, "stream": True, "stream_options": {"include_usage": True}}
    response = await litellm.acompletion(messages=messages, **kw)
    call: dict[str, str] = {"id": "", "name": "", "arguments": ""}
    async for chunk in response:
        if chunk.choices and chunk.choices[0].delta.tool_calls:
            for tc in chunk.choices[0].delta.tool_calls:
                call["id"] = tc.id or call["id"]
                if tc.function and tc.function.name:
                    call["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    call["arguments"] += tc.function.arguments
    result = json.dumps({"city": json.loads(call["arguments"])["city"], "sky": "sunny"})
    messages += [{"role": "assistant", "content": "", "tool_calls": [
        {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
                 {"role": "tool", "tool_call_id": call["id"], "content": result}]
    response = await litellm.acompletion(messages=messages, **kw)
    text = "".join([c.choices[0].delta.content or "" async for c in response if c.choices])
    assert text.startswith("It is"), text


async def openai_sdk(client: Any) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."},
                                      {"role": "user", "content": "Weather in Oslo?"}]
    kw = {"model": "fake", "tools": TOOLS, "stream": True, "stream_options": {"include_usage": True}}
    stream = await client.chat.completions.create(messages=messages, **kw)
    call = {"id": "", "name": "", "arguments": ""}
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.tool_calls:
            for tc in chunk.choices[0].delta.tool_calls:
                call["id"] = tc.id or call["id"]
                if tc.function and tc.function.name:
                    call["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    call["arguments"] += tc.function.arguments
    messages += [{"role": "assistant", "content": "", "tool_calls": [
        {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
                 {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}]
    stream = await client.chat.completions.create(messages=messages, **kw)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text.startswith("It is"), text


async def raw_transport(client: Any, openai: Any) -> None:
    """The lean provider's transport by hand: the same raw post, chunks as dicts, no loop around it."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."},
                                      {"role": "user", "content": "Weather in Oslo?"}]
    body = {"model": "fake", "tools": TOOLS, "stream": True, "stream_options": {"include_usage": True}}

    # The provider's stream class: the SDK's, reading the body to its end so the connection is reused.
    from workspace.providers.openai_provider import _stream_cls

    stream_cls = _stream_cls()

    async def post(msgs: list[dict[str, Any]]) -> Any:
        return await client.post("/chat/completions", body={**body, "messages": msgs}, cast_to=object, stream=True,
                                 stream_cls=stream_cls)

    call = {"id": "", "name": "", "arguments": ""}
    async for chunk in await post(messages):
        choices = chunk.get("choices") or ()
        for tc in (choices[0].get("delta") or {}).get("tool_calls") or () if choices else ():
            call["id"] = tc.get("id") or call["id"]
            function = tc.get("function") or {}
            if function.get("name"):
                call["name"] = function["name"]
            if function.get("arguments"):
                call["arguments"] += function["arguments"]
    messages += [{"role": "assistant", "content": "", "tool_calls": [
        {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
                 {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}]
    parts = []
    async for chunk in await post(messages):
        choices = chunk.get("choices") or ()
        if choices:
            parts.append((choices[0].get("delta") or {}).get("content") or "")
    assert "".join(parts).startswith("It is"), parts


CPU: dict[Any, list[float]] = {}
#: The pause before each turn of the replayed figure's second part (see :func:`replayed_cpu`).
IDLE_S = 0.002


async def measure(paths: dict[str, Any]) -> dict[str, list[float]]:
    """Wall-clock milliseconds per turn of each path, the paths taking turns one turn at a time (the first
    to go rotates): load that comes and goes on a busy machine falls on all of them alike, where a block of
    turns per path would catch it on one. The CPU milliseconds of this process per turn go to ``CPU[key]``
    (the server runs in its own process: CPU time is our work alone, whatever else loads the machine)."""
    for fn in paths.values():
        for _ in range(5):
            await fn()
    times: dict[str, list[float]] = {key: [] for key in paths}
    order = list(paths.items())
    for turn in range(TURNS):
        for key, fn in order[turn % len(order):] + order[:turn % len(order)]:
            start = time.perf_counter()
            started_cpu = time.process_time()
            await fn()
            CPU.setdefault(key, []).append((time.process_time() - started_cpu) * 1000)
            times[key].append((time.perf_counter() - start) * 1000)
    return times


class _Replayed:
    """A streamed response read back from what the server once sent (one pass of the event loop an item,
    as a socket read gives it)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    async def __aiter__(self) -> Any:
        for item in self.items:
            await asyncio.sleep(0)
            yield item


async def replayed_cpu(provider: Any, run_turn: Any, turns: int) -> tuple[float, float]:
    """Our loop's own CPU milliseconds per turn (median of rounds), the provider's transport replaced by the
    items the server sent for one turn, replayed in this process: no server, no sockets, so little that other
    load on the machine can move (the by-hand reading of the same items costs about 0.06 ms). Then the same
    with the process idle for :data:`IDLE_S` before each turn, as it is while a server answers: what the same
    work costs once other processes have run meanwhile (its code and data out of the CPU's caches), which is
    most of the gap between this figure and the real turn's CPU over its transport's."""
    sent: list[list[Any]] = []
    real_open = provider._open

    async def recording(request: dict[str, Any]) -> Any:
        items = [item async for item in await real_open(request)]
        sent.append(items)
        return _Replayed(items)

    provider._open = recording
    try:
        await run_turn()
        calls = itertools.count()

        async def replaying(request: dict[str, Any]) -> Any:
            return _Replayed(sent[next(calls) % len(sent)])

        provider._open = replaying
        for _ in range(20):
            await run_turn()
        rounds = []
        for _ in range(20):
            started = time.process_time()
            for _ in range(turns):
                await run_turn()
            rounds.append((time.process_time() - started) * 1000 / turns)
        idle = []
        for _ in range(max(20, turns)):
            await asyncio.sleep(IDLE_S)
            started = time.process_time()
            await run_turn()
            idle.append((time.process_time() - started) * 1000)
    finally:
        del provider._open  # the class's own again
    return statistics.median(rounds), statistics.median(idle)


class _TimedReads:
    """A stream's items read with the CPU of this thread inside each read added up (``spent[0]``)."""

    def __init__(self, stream: Any, spent: list[float]) -> None:
        self.items = stream.__aiter__()
        self.spent = spent

    def __aiter__(self) -> _TimedReads:
        return self

    async def __anext__(self) -> Any:
        started = time.thread_time()
        try:
            return await self.items.__anext__()
        finally:
            self.spent[0] += time.thread_time() - started


async def transport_split(openai: Any, provider: Any, paths: dict[str, Any], turns: int) -> dict[str, list[float]]:
    """Where each path's CPU goes in a real turn (this thread's, microseconds, median of ``turns`` turns taken in
    turn): the SDK's posts (until the response's headers), the reads of the streamed body (each item's), and the
    rest (for our loop: its own work, which the replayed figure measures warm). The transport's parts are the same
    code on both paths: what they cost more inside the loop is the caches the loop's code takes from them."""
    spent = {"post": [0.0], "reads": [0.0]}
    current = [""]
    real_post = openai.AsyncOpenAI.post
    real_source = provider._source

    async def post(client: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            stream = await real_post(client, *args, **kwargs)
        finally:
            spent["post"][0] += time.thread_time() - started
        # By hand the stream is read as the SDK gives it: its reads timed here (the loop's, by its provider's _source).
        return _TimedReads(stream, spent["reads"]) if current[0] == "raw" else stream

    openai.AsyncOpenAI.post = post
    provider._source = lambda response: (_TimedReads(response, spent["reads"]), response)
    split: dict[str, list[list[float]]] = {key: [[], [], []] for key in paths}
    try:
        for _ in range(turns):
            for key, fn in paths.items():
                spent["post"][0] = spent["reads"][0] = 0.0
                current[0] = key
                started = time.thread_time()
                await fn()
                whole = time.thread_time() - started
                parts = (spent["post"][0], spent["reads"][0], whole - spent["post"][0] - spent["reads"][0])
                for kept, part in zip(split[key], parts, strict=True):
                    kept.append(part * 1e6)
    finally:
        openai.AsyncOpenAI.post = real_post
        provider._source = real_source
    return {key: [statistics.median(part) for part in parts] for key, parts in split.items()}


async def main(lean_only: bool = False) -> int:
    from workspace.providers import provider_for
    from workspace.providers.litellm_provider import LiteLLMProvider, preload_litellm
    from workspace.robot import Robot
    from workspace.tools import tool

    litellm: Any = None
    if not lean_only:
        import litellm

        await preload_litellm()
        litellm.suppress_debug_info = True
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT))], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    base = proc.stdout.readline().strip()
    try:
        @tool
        async def get_weather(city: str) -> dict[str, str]:
            """Current weather for a city."""
            return {"city": city, "sky": "sunny"}

        provider = LiteLLMProvider("openai/fake", api_base=base + "/v1", api_key="sk-test")
        robot = Robot("bench", system_prompt="You are helpful.", tools=[get_weather], provider=provider)
        lean_provider = provider_for("openai/fake", api_base=base + "/v1", api_key="sk-test")
        assert type(lean_provider).__name__ == "OpenAICompatibleProvider", lean_provider
        lean_robot = Robot("bench", system_prompt="You are helpful.", tools=[get_weather], provider=lean_provider)

        async def ours() -> None:
            robot.reset()
            result = await robot.arun("Weather in Oslo?")
            assert str(result.last_text_content).startswith("It is"), result.to_json()

        async def ours_lean() -> None:
            lean_robot.reset()
            result = await lean_robot.arun("Weather in Oslo?")
            assert str(result.last_text_content).startswith("It is"), result.to_json()

        async def ours_read() -> None:
            # The same turn with its events read (as the window, the command line and tracing read them): every
            # event built and stamped, every model request recorded.
            lean_robot.reset()
            run = lean_robot.stream("Weather in Oslo?")
            async for _event in run:
                pass
            assert run.result is not None and str(run.result.last_text_content).startswith("It is")

        import openai

        client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
        # Interleaved turn by turn (see measure), in rounds.
        paths: dict[str, Any] = {"lean": ours_lean, "raw": lambda: raw_transport(client, openai),
                                 "sdk": lambda: openai_sdk(client), "read": ours_read}
        if not lean_only:
            paths |= {"litellm": ours, "by_hand": lambda: by_hand(litellm, base)}
        taken: dict[str, list[float]] = {key: [] for key in paths}
        for _ in range(4):
            for key, times in (await measure(paths)).items():
                taken[key] += times
        lean_t, raw_t, sdk_t = taken["lean"], taken["raw"], taken["sdk"]
        ours_t, hand_t = taken.get("litellm", []), taken.get("by_hand", [])
        split = await transport_split(openai, lean_provider, {"lean": ours_lean, "raw": paths["raw"]},
                                      max(100, TURNS))
        own_cpu, own_cpu_idle = await replayed_cpu(lean_provider, ours_lean, max(20, TURNS // 2))
    finally:
        proc.terminate()
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    lean_m, raw_m, sdk_m = (statistics.median(t) for t in (lean_t, raw_t, sdk_t))
    own_ratio, own_cpu_ratio = lean_m / raw_m, cpu["lean"] / cpu["raw"]
    met = own_ratio <= 1.2 and own_cpu_ratio <= 1.2
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} cores (the figures below were taken on a machine this busy)")
    print(f"our agent loop, lean provider:                median {lean_m:7.2f} ms, CPU {cpu['lean']:.2f} ms a turn")
    print(f"its own transport by hand (raw post, dicts):  median {raw_m:7.2f} ms, CPU {cpu['raw']:.2f} ms a turn")
    print(f"ratio ours (lean) / its own transport: {own_ratio:.3f} wall clock, {own_cpu_ratio:.3f} CPU "
          f"(target <= 1.2: {'met' if met else 'missed'})")
    read_m = statistics.median(taken["read"])
    print(f"the same turn with its events read (lean.stream iterated, as the window reads a run): median "
          f"{read_m:7.2f} ms, CPU {cpu['read']:.2f} ms a turn: {read_m / raw_m:.3f} wall clock, "
          f"{cpu['read'] / cpu['raw']:.3f} CPU of its own transport (no target: the events are the window's work)")
    print(f"our agent loop, its transport replayed in process (no server): CPU {own_cpu:.2f} ms a turn "
          "(the loop's own work, little moved by other load)")
    print(f"the same, the process idle {IDLE_S * 1000:g} ms before each turn (as while a server answers): CPU "
          f"{own_cpu_idle:.2f} ms a turn (the loop's work run with its code and data out of the CPU's caches)")
    for key, label in (("lean", "our agent loop"), ("raw", "its transport by hand")):
        post, reads, rest = split[key]
        print(f"  {label + ':':24s} CPU of the SDK's posts {post:6.0f} us, of the stream's reads {reads:6.0f} us, "
              f"the rest {rest:6.0f} us a turn (this thread; the transport's parts are the same code on both paths)")
    lean = {
        "our_loop_lean_provider_cpu_ms": round(cpu["lean"], 2),
        "own_transport_by_hand_median_ms": round(raw_m, 2),
        "ratio_lean_over_own_transport": round(own_ratio, 3),
        "cpu_ratio_lean_over_own_transport": round(own_cpu_ratio, 3),
        "cpu_ratio_events_read_over_own_transport": round(cpu["read"] / cpu["raw"], 3),
        "target_ratio_lean_over_own_transport": 1.2,
        "turns_each": len(lean_t),
        "our_loop_lean_provider_median_ms": round(lean_m, 2),
        "openai_sdk_by_hand_median_ms": round(sdk_m, 2),
        "ratio_lean_over_openai_sdk": round(lean_m / sdk_m, 3),
        "our_loop_replayed_transport_cpu_ms": round(own_cpu, 3),
        "our_loop_replayed_transport_after_idle_cpu_ms": round(own_cpu_idle, 3),
        "cpu_ratio_lean_over_openai_sdk": round(cpu["lean"] / cpu["sdk"], 3),
        "target_ratio_lean_over_openai_sdk": 1.3,
        "cpu_us_split_post_reads_rest": {key: [round(x) for x in parts] for key, parts in split.items()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    if lean_only:
        (out / "agent_loop.json").write_text(json.dumps({**lean, "lean_only": True}, indent=2) + "\n")
        return 0 if met else 1
    ours_m, hand_m = (statistics.median(t) for t in (ours_t, hand_t))
    result = {
        **lean,
        "our_loop_litellm_median_ms": round(ours_m, 2),
        "litellm_by_hand_median_ms": round(hand_m, 2),
        "ratio_litellm_ours_over_litellm": round(ours_m / hand_m, 3),
        "ratio_litellm_ours_over_openai_sdk": round(ours_m / sdk_m, 3),
        "cpu_ms_per_turn": {k: round(v, 2) for k, v in cpu.items()},
        "target_ratio_litellm": 1.10,
    }
    print(f"one turn = streamed tool call + tool + streamed answer, {len(ours_t)} turns each (interleaved turn by "
          "turn, 4 rounds)")
    print(f"our agent loop, lean provider (openai SDK):   median {lean_m:7.2f} ms")
    print(f"openai SDK by hand (the floor):               median {sdk_m:7.2f} ms")
    print(f"our agent loop, LiteLLMProvider:              median {ours_m:7.2f} ms")
    print(f"litellm.acompletion by hand:                  median {hand_m:7.2f} ms")
    print(f"ratio ours (lean) / openai SDK: {lean_m / sdk_m:.3f} (target <= 1.3); "
          f"ours (litellm) / litellm by hand: {ours_m / hand_m:.3f} (target <= 1.10); "
          f"ours (litellm) / openai SDK: {ours_m / sdk_m:.3f}")
    print(f"CPU of this process per turn (robust to other load): lean {cpu['lean']:.2f} ms, openai SDK by hand "
          f"{cpu['sdk']:.2f} ms (ratio {cpu['lean'] / cpu['sdk']:.3f}), litellm provider {cpu['litellm']:.2f} ms, "
          f"litellm by hand {cpu['by_hand']:.2f} ms")
    (out / "agent_loop.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(lean_only="--lean-only" in sys.argv[1:])))
