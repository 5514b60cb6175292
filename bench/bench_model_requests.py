"""The store's growth from recording each model request as sent, on a 200-turn thread.

Each turn: a user message (~300 characters), a tool call, its result (~1,500 characters), an answer (~300
characters); two model calls a turn (the question; the tool's result), each sending the whole history and
ten tool schemas. Measures the bytes of the ``model_request`` rows as stored (``to_json``: what the store
writes) three ways:

- ``recorded``: what :class:`workspace.context.requests.RequestRecorder` keeps (what changed since the
  request before: the new messages; the tools and parameters once);
- ``copied``: every request copied whole (what a naive record would store: grows with the square of the
  thread's length);
- ``thread``: the thread's own messages once (the floor: a record cannot be smaller than what it adds).

Target: the record costs at most about twice the thread itself (``recorded / thread`` ≤ 2.5), not the
square. Also the time to put all 400 requests back together (:func:`workspace.context.requests.resolve`,
what the trace does when it opens) and the recorder's own time per call.

Run: ``.venv/bin/python bench/bench_model_requests.py``. Writes ``bench/results/model_requests.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TURNS = 200
TARGET_RATIO = 2.5


class _Provider:
    model_id = "openai/bench"

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools

    def build_request(self, *, system: str | None, messages: Any, tools: Any, settings: Any) -> dict[str, Any]:
        return {"model": "bench", "messages": [{"role": "system", "content": system}, *messages],
                "tools": self.tools, "temperature": 0.2, "stream": True}


def main() -> dict[str, Any]:
    from workspace import events as ev
    from workspace.context.requests import RequestRecorder, resolve

    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "Does a thing. " * 10,
                                               "parameters": {"type": "object", "properties": {
                                                   "query": {"type": "string", "description": "what " * 20}}}}}
             for i in range(10)]
    provider = _Provider(tools)
    recorder = RequestRecorder()
    history: list[dict[str, Any]] = []
    recorded = copied = thread = 0
    events: list[ev.Event] = []
    spent = 0.0
    system = "You are a careful assistant. " * 20
    for turn in range(TURNS):
        new = [{"role": "user", "content": f"Question {turn}: " + "please look this up " * 15}]
        for step in range(2):
            history.extend(new)
            thread += sum(len(json.dumps(m)) for m in new)
            started = time.perf_counter()
            event = recorder.record(provider, system=system, messages=list(history), tools=(),  # type: ignore[arg-type]
                                    settings={})
            spent += time.perf_counter() - started
            events.append(event)
            recorded += len(ev.to_json(event))
            copied += len(json.dumps(provider.build_request(system=system, messages=history, tools=(), settings={})))
            call = {"role": "assistant", "content": "", "tool_calls": [{"id": f"c{turn}", "type": "function", "function": {
                "name": "tool_1", "arguments": json.dumps({"query": f"item {turn}"})}}]}
            new = ([call, {"role": "tool", "tool_call_id": f"c{turn}", "content": "row data " * 170}] if step == 0
                   else [{"role": "assistant", "content": f"Answer {turn}: " + "here it is " * 25}])
        history.extend(new)
        thread += sum(len(json.dumps(m)) for m in new)
    started = time.perf_counter()
    whole = resolve(events)
    resolve_s = time.perf_counter() - started
    assert len(whole[events[-1].request_id]["messages"]) == len(history)
    result = {"turns": TURNS, "requests": len(events), "recorded_bytes": recorded, "copied_bytes": copied,
              "thread_bytes": thread, "recorded_over_thread": round(recorded / thread, 2),
              "copied_over_recorded": round(copied / recorded, 1), "target_ratio": TARGET_RATIO,
              "resolve_ms": round(resolve_s * 1000, 2), "record_ms_per_call": round(spent / len(events) * 1000, 3)}
    mb = 1024 * 1024
    print(f"model requests of a {TURNS}-turn thread ({len(events)} calls)")
    print(f"  recorded (what changed)   {recorded / mb:8.2f} MB   = {result['recorded_over_thread']}× the thread's own "
          f"{thread / mb:.2f} MB   target ≤ {TARGET_RATIO}×: "
          f"{'ok' if result['recorded_over_thread'] <= TARGET_RATIO else 'MISSED'}")
    print(f"  copied whole each call    {copied / mb:8.2f} MB   ({result['copied_over_recorded']}× the record)")
    print(f"  record, per call          {result['record_ms_per_call']:8.3f} ms")
    print(f"  resolve all {len(events)} requests  {result['resolve_ms']:8.2f} ms")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "model_requests.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
