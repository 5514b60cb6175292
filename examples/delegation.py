"""Delegation: a manager has specialists work, one after the other and then in parallel (RobotLab's example 24).

``await manager.delegate(to=..., task=...)`` waits for the result, signed (``delegated_by``) and timed
(``duration``); ``background=True`` returns a ``DelegationFuture`` at once, collected with
``await future.value(timeout=...)``. Runs offline (scripted models that take a moment to answer).
For real models, give each robot ``model="..."`` instead of ``provider=...``.

    python examples/delegation.py
"""

from __future__ import annotations

import asyncio
import time

from workspace import DelegationTimeout, Robot
from workspace.providers.testing import ScriptedProvider

DOCUMENT = """Q4 revenue came in at $4.2M, up 18% year-over-year. Customer acquisition cost dropped to $120,
the lowest in three years. Churn held steady at 2.1%. Net promoter score improved from 42 to 58."""

SUMMARY = "Revenue grew 18% to $4.2M while acquisition got cheaper and churn held."
METRIC = "Net promoter score, up from 42 to 58."


def specialist(name: str, prompt: str, answer: str, *, delay: float = 0.0) -> Robot:
    return Robot(name, system_prompt=prompt, provider=ScriptedProvider([answer], delay=delay))


async def main() -> None:
    manager = Robot("manager", system_prompt="You are a project manager.", provider=ScriptedProvider())

    print("Synchronous (one after the other)")
    summarizer = specialist("summarizer", "Summarize in 1-2 sentences.", SUMMARY)
    analyst = specialist("analyst", "Name the key metric in one sentence.", METRIC)
    for robot, task in ((summarizer, f"Summarize this report:\n\n{DOCUMENT}"),
                        (analyst, f"What is the most important metric?\n\n{DOCUMENT}")):
        result = await manager.delegate(to=robot, task=task)
        print(f"  {result.robot_name} (delegated by {result.delegated_by}): {result.last_text_content}")

    print("Asynchronous (parallel fan-out)")
    started = time.monotonic()
    f_summary = await manager.delegate(to=specialist("summarizer", "Summarize.", SUMMARY, delay=0.01),
                                       task=f"Summarize this report:\n\n{DOCUMENT}", background=True)
    f_metric = await manager.delegate(to=specialist("analyst", "Key metric.", METRIC, delay=0.01),
                                      task=f"What is the most important metric?\n\n{DOCUMENT}", background=True)
    print(f"  both launched; done yet? summary={f_summary.done()} analysis={f_metric.done()}")
    summary = await f_summary.value(timeout=60)
    analysis = await f_metric.value(timeout=60)
    print(f"  {summary.robot_name}: {summary.last_text_content}")
    print(f"  {analysis.robot_name}: {analysis.last_text_content}")
    took = time.monotonic() - started
    both = (summary.duration or 0) + (analysis.duration or 0)
    print(f"  wall time {took:.2f}s for {both:.2f}s of delegated work")

    print("A time limit")
    slow = await manager.delegate(to=specialist("slowpoke", "Think slowly.", "Eventually: 42.", delay=0.5),
                                  task="What is the answer?", background=True)
    try:
        await slow.value(timeout=0.01)
    except DelegationTimeout as exc:
        print(f"  {exc}; the work goes on")
    print(f"  later: {(await slow.value(timeout=60)).last_text_content}")


if __name__ == "__main__":
    asyncio.run(main())
