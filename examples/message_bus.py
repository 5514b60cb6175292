"""Robots that talk: Alice asks Bob for a robot joke until she finds one funny (RobotLab's example 12).

Runs offline: both robots answer from scripts. For real models, give each robot ``model="..."``
instead of ``provider=...``.

    python examples/message_bus.py
"""

from __future__ import annotations

import asyncio

from workspace import Robot, RobotMessage
from workspace.bus import MessageBus
from workspace.providers.testing import ScriptedProvider

MAX_ATTEMPTS = 5


async def main() -> None:
    bus = MessageBus()
    bob = Robot("bob", system_prompt="You are a comedian. Tell one short robot joke.", provider=ScriptedProvider([
        "Why did the robot go on holiday? It needed to recharge.",
        "I asked a robot to tell me a joke. It said: 'Error 404: humour not found'.",
        "A robot walks into a bar. The bartender says 'we don't serve robots'. The robot says 'someday you will'.",
    ])).with_bus(bus)
    alice = Robot("alice", system_prompt="You judge jokes. Answer FUNNY or MEH, then why.", provider=ScriptedProvider([
        "MEH - the recharge pun is old.",
        "MEH - error codes are not a punchline.",
        "FUNNY - dark, short and about robots.",
    ])).with_bus(bus)
    state = {"attempts": 0, "rounds": 0, "accepted": False}

    @bob.on_message()
    async def tell_a_joke(message: RobotMessage) -> None:
        state["attempts"] += 1
        joke = (await bob.arun(str(message.content))).last_text_content
        print(f"  Bob   [#{state['attempts']}]: {joke}")
        bob.send_reply(to=message.from_, content=joke, in_reply_to=message.key)

    @alice.on_message()
    async def judge(message: RobotMessage) -> None:
        state["rounds"] += 1
        verdict = (await alice.arun(f"Evaluate this joke:\n\n{message.content}")).last_text_content
        print(f"  Alice: {verdict}")
        state["accepted"] = verdict.startswith("FUNNY")
        if not state["accepted"] and state["rounds"] < MAX_ATTEMPTS:
            alice.send_message(to="bob", content="Not funny enough. Try again.")

    print("Alice: Tell me a funny robot joke.")
    first = alice.send_message(to="bob", content="Tell me a funny robot joke.")
    await bus.drain(timeout=60)
    print(f"Attempts: {state['attempts']} / {MAX_ATTEMPTS}")
    print(f"Accepted: {state['accepted']}")
    print(f"Alice's outbox: {len(alice.outbox)} messages, the first {alice.outbox[first.key].status}")


if __name__ == "__main__":
    asyncio.run(main())
