"""Counting a conversation's tokens before every model call: the per-turn cost on a 200-turn thread.

A thread of 200 turns, each a user message (~300 characters), a tool call, its result (~1,500
characters of file content) and an answer (~600 characters): 800 messages. Before every model call
the context manager builds the request (the summary in place of compacted messages, tool results cut
to the window) and counts it: system prompt, 5 tool schemas, every message. Messages are counted
once and the count kept; the rest is lookups.

Cases (median of 7 runs):

- ``per_turn_ms``: the thread grows turn by turn, two model calls per turn (as the loop makes
  them); the cost of the two ``prepare`` calls of a turn, averaged over the 200 turns, and the same for
  the last 20 turns (the longest conversation);
- ``reopen_ms``: a reopened 200-turn thread counted from nothing (every message new), once;
- the same with litellm's tokenizer for an OpenAI model (tiktoken) instead of the estimate.

Target: under 5 ms per turn. Run: ``.venv/bin/python bench/bench_context.py``. Prints the
figures and writes bench/results/context.json.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

TURNS = 200
RUNS = 7


class Counted:
    """A provider that is never called: only its window and tokenizer matter here."""

    is_language_model = True
    supports_tools = supports_streaming = True

    def __init__(self, model_id: str, encode: Any = None) -> None:
        self.model_id = self.label = model_id
        self._encode = encode

    def token_counter(self) -> Any:
        return self._encode


def turn(i: int) -> list[Any]:
    from workspace.messages import TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage

    call = ToolMessage(id=f"call_{i}", name="read_file", input={"path": f"src/module_{i}.py", "start_line": 1})
    content = "".join(f"    value_{n} = compute({n}, scale=0.{n % 9})  # step {n}\n" for n in range(30))
    return [
        TextMessage(role="user", content=f"Turn {i}: please look at module {i} and explain what it does. " * 5),
        ToolCallMessage(tools=[call]),
        ToolResultMessage(tool=call, content={"data": {"path": f"src/module_{i}.py", "content": content,
                                                       "start_line": 1, "end_line": 30, "total_lines": 30}}),
        TextMessage(role="assistant", content=f"Module {i} computes thirty scaled values. " * 15, stop_reason="stop"),
    ]


def tools() -> list[Any]:
    from workspace.tools import registry

    return [t.spec() for t in registry.lookup(["read_file", "list_files", "search_files", "remember", "recall"])]


async def grow(provider: Any) -> tuple[float, float]:
    """Per turn (ms): the average over 200 turns, and over the last 20."""
    from workspace.context import ContextManager

    manager = ContextManager(window=10_000_000)
    specs = tools()
    system = "You are a careful assistant. " * 40
    history: list[Any] = []
    costs: list[float] = []
    for i in range(TURNS):
        messages = turn(i)
        history.append(messages[0])
        start = time.perf_counter()
        await manager.prepare(provider, system=system, history=history, tools=specs)
        first = time.perf_counter() - start
        history += messages[1:3]
        start = time.perf_counter()
        await manager.prepare(provider, system=system, history=history, tools=specs)
        costs.append(first + time.perf_counter() - start)
        history.append(messages[3])
    return statistics.mean(costs) * 1e3, statistics.mean(costs[-20:]) * 1e3


async def reopen(provider: Any) -> float:
    from workspace.context import ContextManager

    manager = ContextManager(window=10_000_000)
    history = [m for i in range(TURNS) for m in turn(i)]
    specs = tools()
    await manager.prepare(provider, system="x", history=history[:1], tools=specs)  # resolve the window once
    start = time.perf_counter()
    await manager.prepare(provider, system="You are a careful assistant. " * 40, history=history, tools=specs)
    return (time.perf_counter() - start) * 1e3


def median(fn: Any, provider: Any) -> Any:
    results = [asyncio.run(fn(provider)) for _ in range(RUNS)]
    if isinstance(results[0], tuple):
        return tuple(statistics.median(r[k] for r in results) for k in range(len(results[0])))
    return statistics.median(results)


def main() -> None:
    from workspace.providers.base import with_defaults
    from workspace.providers.litellm_provider import token_counter

    # (with_defaults: what a provider does not say itself, its server, whether it is local, says "not known")
    estimate = with_defaults(Counted("local/model"))
    tiktoken = with_defaults(Counted("openai/gpt-4o-mini", token_counter("openai/gpt-4o-mini")))
    figures: dict[str, float] = {}
    for name, provider in (("estimate", estimate), ("tiktoken", tiktoken)):
        per_turn, last = median(grow, provider)
        figures[f"{name}_per_turn_ms"] = per_turn
        figures[f"{name}_per_turn_last20_ms"] = last
        figures[f"{name}_reopen_ms"] = median(reopen, provider)
    print(f"token counting, {TURNS}-turn thread (800 messages, 5 tool schemas), median of {RUNS} runs:")
    for name in ("estimate", "tiktoken"):
        print(f"  {name:9} per turn (2 model calls) {figures[f'{name}_per_turn_ms']:.3f} ms, "
              f"last 20 turns {figures[f'{name}_per_turn_last20_ms']:.3f} ms; "
              f"a reopened 200-turn thread counted from nothing {figures[f'{name}_reopen_ms']:.1f} ms")
    print("  target: < 5 ms per turn")
    out = ROOT / "bench" / "results" / "context.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
