"""The token count of a model without a known tokenizer against the count of its server.

A llama.cpp-like server (tests/fakes/llm_server.py with ``tokenizer=True``: a deterministic tokenizer and
chat template, the usage it reports counted with them; ``tokenize=True`` also offers ``POST /tokenize``)
is sent the same conversation three ways, and for each the count the context manager made before the call
is printed against the server's ``prompt_tokens``:

* the safe estimate alone (what the first request of a model without a tokenizer is counted with);
* the estimate calibrated by the usage the server reported for the previous call (the second request);
* the server's own tokenizer (``/tokenize``).

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_token_estimate.py`` (EXCHANGES=20 by default); the figures
are also written to bench/results/token_estimate.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fakes.llm_server import FakeLLMServer  # noqa: E402

from workspace import events as ev  # noqa: E402
from workspace.config import load_config  # noqa: E402
from workspace.context import window  # noqa: E402
from workspace.messages import TextMessage  # noqa: E402
from workspace.robot import Robot  # noqa: E402

EXCHANGES = int(os.environ.get("EXCHANGES", "20"))
PROSE = ("The quick brown fox jumps over the lazy dog, and then it runs back into the forest where its friends "
         "are waiting for dinner. ")
CODE = "```python\ndef list_files(path='.'):\n    return sorted(os.listdir(path))\n```\n"


def conversation() -> list[TextMessage]:
    out: list[TextMessage] = []
    for i in range(EXCHANGES):
        out += [TextMessage("user", f"Question {i}: " + PROSE * 2),
                TextMessage("assistant", PROSE * 2 + (CODE if i % 4 == 0 else PROSE))]
    return out


async def counts(server: FakeLLMServer, messages: list[str]) -> list[tuple[int, int]]:
    """(the count before the call, the server's prompt tokens) for each message sent in turn."""
    robot = Robot("r", system_prompt="You help.", model="openai/local", api_base=server.base_url + "/v1",
                  config=load_config(env={}, overrides={"llm": {"max_retries": 1}}))
    robot.history = conversation()
    out: list[tuple[int, int]] = []
    for text in messages:
        found = [e async for e in robot.stream(text) if isinstance(e, ev.ContextUsage)]
        before = next(e.used for e in found if e.estimated)
        after = next(e.used for e in found if not e.estimated)
        out.append((before, after - 1))  # the server's count: the prompt and the answer's one token
    return out


def line(what: str, before: int, server: int) -> str:
    return f"{what:<44} {before:>8,} {server:>8,} {100 * (before - server) / server:>+8.1f} %"


async def main() -> dict[str, Any]:
    window.clear_cache()
    print(f"{'count before the call':<44} {'counted':>8} {'server':>8} {'off by':>10}")
    with FakeLLMServer(tokenizer=True, context_window=32_768) as server:
        (first, first_server), (second, second_server) = await counts(server, ["Go on.", "And then?"])
    print(line("estimate alone (first call)", first, first_server))
    print(line("estimate calibrated by the server's usage", second, second_server))
    window.clear_cache()
    with FakeLLMServer(tokenize=True, context_window=32_768) as server:
        ((tokenized, tokenized_server),) = await counts(server, ["Go on."])
    print(line("the server's /tokenize", tokenized, tokenized_server))
    return {"estimate": [first, first_server], "calibrated": [second, second_server],
            "tokenize": [tokenized, tokenized_server]}


if __name__ == "__main__":
    figures = asyncio.run(main())
    out = ROOT / "bench" / "results" / "token_estimate.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
