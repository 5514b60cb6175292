"""What a network's bus messages cost: publishing and handling N messages on a :class:`MessageBus` with no
observer (a bus outside a network, as before), and with the observer a network run adds (each message built
into a ``bus_message`` event, stamped and queued, as :class:`NetworkRun` does), and the chat presenter taking
those events into the sender's lane of a network run.

Prints microseconds per message for each; target: the network's observer adds under 20 µs per message and the
presenter takes a ``bus_message`` in under 100 µs, so a chatty network's messages cost nothing a person sees
next to its model calls. ``.venv/bin/python bench/bench_bus.py [N]``
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000


async def publish(observe: bool) -> float:
    from workspace import events as ev
    from workspace.bus import MessageBus, RobotMessage

    bus = MessageBus()
    bus.add_channel("alice")
    bus.subscribe("bob", lambda delivery: delivery.ack())
    queue: asyncio.Queue[ev.Event] = asyncio.Queue()
    if observe:
        seq = iter(range(1, N + 1))

        def observer(delivery: object) -> None:
            message = delivery.message  # type: ignore[attr-defined]
            event = ev.BusMessage(sender=message.from_, to=delivery.to, content=message.content,  # type: ignore[attr-defined]
                                  message_id=message.key, in_reply_to=message.in_reply_to)
            queue.put_nowait(ev.stamp(event, run_id="net", robot=message.from_, seq=next(seq)))

        bus.add_observer(observer)
    start = time.perf_counter()
    for n in range(1, N + 1):
        bus.publish("bob", RobotMessage(id=n, from_="alice", content="What is 2 + 2?"))
    await bus.drain(timeout=120)
    return (time.perf_counter() - start) / N * 1e6


def presenter_cost() -> float:
    from ui.chat.model.presenter import ChatPresenter
    from workspace import events as ev

    presenter = ChatPresenter()
    presenter.add_user("go")
    presenter.feed_all([ev.RunStarted(run_id="net", robot="pair", seq=1, message="go"),
                        ev.TaskStarted(run_id="net", robot="alice", seq=2, task="ask", message="go")])
    events = [ev.BusMessage(run_id="net", robot="alice", seq=n + 2, sender="alice", to="bob",
                            content="What is 2 + 2?", message_id=f"alice:{n}") for n in range(1, N + 1)]
    start = time.perf_counter()
    presenter.feed_all(events)
    return (time.perf_counter() - start) / N * 1e6


def main() -> None:
    plain = min(asyncio.run(publish(False)) for _ in range(3))
    observed = min(asyncio.run(publish(True)) for _ in range(3))
    shown = presenter_cost()
    print(f"bus, {N:,} messages: {plain:.1f} µs per message without an observer, {observed:.1f} µs with the "
          f"network's (+{observed - plain:.1f} µs; target < 20 µs)")
    print(f"chat presenter: {shown:.1f} µs per bus_message (target < 100 µs)")


if __name__ == "__main__":
    main()
