"""Channels: the means by which a :class:`~workspace.network.person.Person` reaches the person (RobotLab's
cyborg ``Channel``).

A channel is a plain two-way pipe: :meth:`Channel.deliver` sends a :class:`ChannelMessage` out to the
person, :meth:`Channel.receive` gives the next message the person sent in (None when nothing came within
the time given). It knows nothing of questions and answers: matching them is the
:class:`~workspace.network.interviewer.Interviewer`'s work. A transport that can say which question a
message answers (a chat thread, an e-mail's In-Reply-To) sets ``in_reply_to`` to that question's id; one
that cannot (a terminal) leaves it None, and the oldest open question is taken.

- :class:`TerminalChannel`: the person at a keyboard (``input`` / ``output`` streams; stdin and stdout).
- :class:`ScriptedChannel`: answers given in advance, each paired with the question it is delivered with;
  :meth:`ScriptedChannel.say` adds a message of the person's own (for tests, automation, replays).
- Anything else (Slack, e-mail, a web form): subclass :class:`Channel` and write ``deliver`` and ``receive``.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

#: How often a waiting :meth:`Channel.receive` looks again (seconds).
POLL_INTERVAL = 0.02


@dataclass(frozen=True, slots=True)
class ChannelMessage:
    """A message crossing to or from the person: ``content``, the ``id`` of the question it carries (out),
    the ``in_reply_to`` id of the question it answers (in, when the transport knows)."""

    content: str
    id: int | None = None
    in_reply_to: int | None = None


class Channel:
    """Base class of channels (see the module): write :meth:`deliver` and :meth:`receive`."""

    def deliver(self, message: ChannelMessage) -> ChannelMessage:
        """Send ``message`` out to the person; returns it."""
        raise NotImplementedError(f"{type(self).__name__} must define deliver(message)")

    async def receive(self, timeout: float | None = None) -> ChannelMessage | None:
        """The next message from the person, waiting up to ``timeout`` seconds (None: until one comes); None
        when nothing came in that time ("not yet", not "closed")."""
        raise NotImplementedError(f"{type(self).__name__} must define async receive(timeout=None)")

    def close(self) -> None:
        """Release what the channel holds (nothing by default)."""


class _Inbox:
    """A thread-safe queue of messages from the person, awaited by polling (a channel may be fed from any
    thread: a terminal's reader, a web server's handler)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[ChannelMessage] = queue.SimpleQueue()

    def put(self, message: ChannelMessage) -> None:
        self._queue.put(message)

    async def get(self, timeout: float | None, *, ended: Callable[[], bool] | None = None) -> ChannelMessage | None:
        """The next message, waiting up to ``timeout``; None at the time limit, or when ``ended()`` says no
        more will come."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            try:
                return self._queue.get_nowait()
            except queue.Empty:
                pass
            if (deadline is not None and loop.time() >= deadline) or (ended is not None and ended()):
                return None
            await asyncio.sleep(POLL_INTERVAL if deadline is None else
                                max(0.0, min(POLL_INTERVAL, deadline - loop.time())))


class ScriptedChannel(Channel):
    """Answers given in advance (RobotLab's ``Channel::Scripted``): each delivered question takes the next
    answer, marked as answering that question's id. When they run out, questions go unanswered (a person who
    never replies) and the interviewer's time limit decides. :attr:`asked` lists what the person was shown;
    :meth:`say` adds something the person says unprompted."""

    def __init__(self, answers: str | Iterable[str] = ()) -> None:
        self._answers = [answers] if isinstance(answers, str) else [str(a) for a in answers]
        #: Every message delivered, in order (the questions as the person saw them).
        self.asked: list[str] = []
        self._inbox = _Inbox()
        self._lock = threading.Lock()

    def deliver(self, message: ChannelMessage) -> ChannelMessage:
        with self._lock:
            self.asked.append(message.content)
            if message.id is not None and self._answers:
                self._inbox.put(ChannelMessage(self._answers.pop(0), in_reply_to=message.id))
        return message

    def say(self, content: str, *, in_reply_to: int | None = None) -> None:
        """A message from the person that is not a scripted answer (None ``in_reply_to``: the oldest open
        question takes it, else it is initiative)."""
        self._inbox.put(ChannelMessage(str(content), in_reply_to=in_reply_to))

    async def receive(self, timeout: float | None = None) -> ChannelMessage | None:
        return await self._inbox.get(timeout)

    @property
    def remaining(self) -> int:
        """Answers not used yet."""
        with self._lock:
            return len(self._answers)


class TerminalChannel(Channel):
    """The person at a keyboard (RobotLab's ``Channel::Terminal``): a message is written to ``output`` as
    ``[name] content`` followed by a ``> `` prompt, and each line read from ``input`` is a message with no
    ``in_reply_to`` (a terminal cannot say which question a line answers). At the end of ``input``,
    :attr:`closed` becomes True and :meth:`receive` gives None."""

    def __init__(self, *, input: IO[str] | None = None, output: IO[str] | None = None, name: str = "person") -> None:
        self.input = input if input is not None else sys.stdin
        self.output = output if output is not None else sys.stdout
        self.name = name
        self.closed = False
        self._inbox = _Inbox()
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()

    def deliver(self, message: ChannelMessage) -> ChannelMessage:
        self.output.write(f"\n[{self.name}] {message.content}\n> ")
        self.output.flush()
        return message

    def _read(self) -> None:
        """Read lines until the end of input (a daemon thread: a blocked read never holds the loop)."""
        while True:
            try:
                line = self.input.readline()
            except (OSError, ValueError):
                line = ""
            if not line:
                self.closed = True
                return
            self._inbox.put(ChannelMessage(line.rstrip("\r\n")))

    async def receive(self, timeout: float | None = None) -> ChannelMessage | None:
        with self._lock:
            if self._reader is None:
                self._reader = threading.Thread(target=self._read, name=f"terminal-channel:{self.name}", daemon=True)
                self._reader.start()
        message = await self._inbox.get(timeout, ended=lambda: self.closed)
        if message is None and self.closed:
            return await self._inbox.get(0.0)  # a line read just before the end
        return message


__all__ = ["POLL_INTERVAL", "Channel", "ChannelMessage", "ScriptedChannel", "TerminalChannel"]
