"""Robots that make robots: a dispatcher spawns the specialist each question needs (RobotLab's example 13).

The dispatcher asks its model which specialist to make; ``spawn`` makes it on the dispatcher's bus
with the dispatcher's model; the specialist answers the question and sends the answer back over the
bus. Runs offline (one scripted model shared by all, as ``spawn`` shares it). For a real model, give
the dispatcher ``model="..."`` instead of ``provider=...``.

    python examples/spawn.py
"""

from __future__ import annotations

import asyncio

from workspace import Robot, RobotMessage
from workspace.providers.testing import ScriptedProvider

QUESTIONS = [
    ("Why did the Roman Empire fall?",
     "historian\nYou are a historian. Answer in one sentence.",
     "Overstretch, money troubles and pressure on its borders, over centuries."),
    ("Write a haiku about recursion.",
     "poet\nYou are a poet who writes haiku.",
     "A function calls itself / smaller and smaller it grows / until it returns"),
    ("Who was the last emperor of the West?",
     "historian\nYou are a historian. Answer in one sentence.",
     "Romulus Augustulus, deposed in 476."),
]


async def main() -> None:
    script: list[str] = []
    for _question, plan, answer in QUESTIONS:
        script += [plan, answer]
    dispatcher = Robot("dispatcher", system_prompt="Name the specialist a question needs on the first line, "
                       "then its instructions.", provider=ScriptedProvider(script)).with_bus()
    waiting: dict[str, str] = {}

    @dispatcher.on_message()
    def collect(message: RobotMessage) -> None:
        print(f"  dispatcher <- {message.from_}: {str(message.content).splitlines()[0]}")
        waiting.pop(message.from_, None)

    for number, (question, _plan, _answer) in enumerate(QUESTIONS, start=1):
        print(f"Question {number}: {question}")
        plan = (await dispatcher.arun(question)).last_text_content or ""
        role, _, instruction = plan.partition("\n")
        role = "_".join(role.strip().lower().split())
        specialist = dispatcher.children.get(role)
        if specialist is None:
            print(f"  dispatcher -> spawn {role}: {instruction.strip()}")
            specialist = dispatcher.spawn(name=role, system_prompt=instruction.strip())
        else:
            print(f"  dispatcher -> reuse {role}")
        waiting[role] = question
        answer = (await specialist.arun(question)).last_text_content
        specialist.send_message(to="dispatcher", content=answer)
        assert dispatcher.bus is not None
        await dispatcher.bus.drain(timeout=60)

    assert dispatcher.bus is not None
    print(f"Specialists spawned: {', '.join(dispatcher.children)}")
    print(f"Robots on the bus: {len(dispatcher.bus.channels)}")
    print(f"Unanswered: {len(waiting)}")


if __name__ == "__main__":
    asyncio.run(main())
