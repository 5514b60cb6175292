"""The interviewer: asking a person questions over a :class:`~workspace.network.channels.Channel` (RobotLab's
cyborg ``Interviewer``).

Asking never waits for the answer: ``question = await interviewer.ask("Ship it?", choices=["yes", "no"])``
delivers the question and returns a :class:`Question`; ``await question.answer(timeout=60)`` waits for
the answer when the caller is ready (the default, None without one, when none came in time: the question
is then withdrawn, so a late reply cannot claim it). A person may answer at once, after saying other
things, or never.

While questions are open, a task of the interviewer's reads the channel. A message that names the
question it answers (``in_reply_to``) resolves that one; a message that names none resolves the oldest
open question (all a terminal can do). A message that answers nothing open — it names a question no longer
open, or none is open — is the person's *initiative*: it is kept in :attr:`Interviewer.initiative` and
given to the ``on_initiative`` handler. :meth:`Interviewer.listen` keeps reading when no question is open,
so what the person says unprompted is heard too.

Answers are interpreted as RobotLab does: an empty answer is the question's ``default`` (when it has one),
and a number picks that choice (``"2"`` -> the second of ``choices``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from workspace.network.channels import Channel, ChannelMessage

log = logging.getLogger(__name__)

InitiativeHandler = Callable[[ChannelMessage], Any]


class Question:
    """A question delivered to the person: ``id`` (its correlation id), ``content``, ``choices``, ``default``;
    :meth:`answer` waits for the answer."""

    def __init__(self, *, id: int, content: str, choices: Sequence[str] | None, default: str | None,
                 interviewer: Interviewer) -> None:
        self.id = id
        self.content = content
        self.choices = list(choices) if choices else None
        self.default = default
        self._interviewer = interviewer
        self._answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def _resolve(self, answer: str) -> None:
        if not self._answer.done():
            self._answer.set_result(answer)

    def done(self) -> bool:
        """Whether the person has answered."""
        return self._answer.done()

    async def answer(self, timeout: float | None = None) -> str | None:
        """The person's answer, waiting up to ``timeout`` seconds (None: as long as it takes). With no answer
        in time the question is withdrawn and its ``default`` returned (None when it has none)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._answer), timeout)
        except asyncio.CancelledError:  # the caller gave up (its own time limit): withdraw the question
            self._interviewer.expire(self)
            raise
        except TimeoutError:
            self._interviewer.expire(self)
            if self._answer.done():  # answered just as the time ran out
                return self._answer.result()
            return self.default

    def __repr__(self) -> str:
        state = f"answered {self._answer.result()!r}" if self.done() else "open"
        return f"<Question {self.id} {self.content[:40]!r} {state}>"


class Interviewer:
    """Asks a person questions over ``channel`` and matches the answers (see the module)."""

    def __init__(self, channel: Channel, *, default_timeout: float | None = None) -> None:
        if not isinstance(channel, Channel):
            raise TypeError(f"Interviewer(channel=...) must be a workspace Channel (TerminalChannel, ScriptedChannel "
                            f"or a subclass of Channel), got {type(channel).__name__}")
        self.channel = channel
        self.default_timeout = default_timeout
        #: What the person said that answered no open question, in order.
        self.initiative: list[ChannelMessage] = []
        self._open: dict[int, Question] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._handler: InitiativeHandler | None = None
        self._reader: asyncio.Task[None] | None = None
        self._listening = False
        self._closed = False

    @property
    def outstanding(self) -> list[Question]:
        """The open questions, oldest first."""
        with self._lock:
            return [self._open[key] for key in sorted(self._open)]

    async def ask(self, content: str, *, choices: Sequence[str] | None = None,
                  default: str | None = None) -> Question:
        """Deliver ``content`` (with its ``choices`` numbered under it) and return the :class:`Question` at once."""
        if self._closed:
            raise RuntimeError("This interviewer is closed: make a new Interviewer(channel) to ask again")
        with self._lock:
            question = Question(id=next(self._ids), content=str(content), choices=choices, default=default,
                                interviewer=self)
            self._open[question.id] = question
        try:
            delivered = self.channel.deliver(ChannelMessage(_render(question), id=question.id))
            if inspect.isawaitable(delivered):
                await delivered
        except BaseException:
            self.expire(question)  # never shown: nothing may answer it
            raise
        self._ensure_reader()
        return question

    async def ask_and_wait(self, content: str, *, timeout: float | None = None, choices: Sequence[str] | None = None,
                           default: str | None = None) -> str | None:
        """:meth:`ask`, then wait for the answer (``timeout``: else :attr:`default_timeout`)."""
        question = await self.ask(content, choices=choices, default=default)
        return await question.answer(timeout if timeout is not None else self.default_timeout)

    def on_initiative(self, handler: InitiativeHandler | None) -> Interviewer:
        """Call ``handler(message)`` (plain or ``async``) for each message that answers no open question."""
        self._handler = handler
        return self

    def listen(self) -> Interviewer:
        """Keep reading the channel when no question is open (until :meth:`close`)."""
        self._listening = True
        self._ensure_reader()
        return self

    def expire(self, question: Question) -> None:
        """Withdraw ``question``: a later answer cannot claim it (it becomes initiative)."""
        with self._lock:
            self._open.pop(question.id, None)

    async def close(self) -> None:
        """Stop reading and close the channel; open questions get no answer."""
        self._closed = True
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        self.channel.close()

    # -- the reader ------------------------------------------------------------------------------------------
    def _ensure_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read(), name="interviewer-reader")

    def _keep_reading(self) -> bool:
        with self._lock:
            return not self._closed and (self._listening or bool(self._open))

    async def _read(self) -> None:
        while self._keep_reading():
            try:
                message = await self.channel.receive(timeout=0.1)
            except Exception as exc:
                log.warning("Interviewer: the channel failed to receive (%s); asking again", exc)
                await asyncio.sleep(0.1)
                continue
            if message is not None:
                await self._dispatch(message)

    async def _dispatch(self, message: ChannelMessage) -> None:
        question = self._claim(message)
        if question is not None:
            question._resolve(_interpret(message.content, question))
            return
        self.initiative.append(message)
        if self._handler is not None:
            try:
                outcome = self._handler(message)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("Interviewer: the on_initiative handler failed")

    def _claim(self, message: ChannelMessage) -> Question | None:
        with self._lock:
            if message.in_reply_to is None:
                key = min(self._open, default=None)
            else:
                key = message.in_reply_to if message.in_reply_to in self._open else None
            return self._open.pop(key) if key is not None else None


def _render(question: Question) -> str:
    if not question.choices:
        return question.content
    return "\n".join([question.content, *(f"  {i}. {choice}" for i, choice in enumerate(question.choices, 1))])


def _interpret(text: str, question: Question) -> str:
    if not text and question.default is not None:
        text = question.default
    if question.choices and text.strip().isdigit():
        index = int(text.strip()) - 1
        if 0 <= index < len(question.choices):
            return question.choices[index]
    return text


__all__ = ["Interviewer", "Question"]
