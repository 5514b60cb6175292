"""A person in the network (RobotLab's cyborg): a task whose worker is a person, not a model.

``Person("approver", ask=fn, timeout=600)`` goes wherever a robot goes in a network
(``network.task("approve", person, depends_on=["draft"])``): when its task runs, the network waits for
``await fn(question, choices, default)`` (plain or ``async``, AskUser's signature) and the answer flows on
like a robot's. The question is the task's message (what the tasks before it said, as for a robot).
Without ``ask``, the window asks when the network runs in one (the network's approval gate shows
questions: a card in the task's lane, the time limit counting down), else the terminal when stdin is one; with nobody to ask, the task fails saying so.
``timeout`` (seconds) bounds the wait: past it the task fails naming the person and the time, or, with
``default=``, goes on with that answer. ``choices`` are offered with every question.

A person is a :class:`~workspace.robot.Robot` whose "model" is the person (:class:`PersonProvider`):
its task has the same events, hooks, routing and result as any other, and a person can be
``delegate``\\ d to or put on a bus like a robot.

RobotLab's cyborg: ``Person("ada", channel=TerminalChannel())`` asks through a
:class:`~workspace.network.channels.Channel` and an :class:`~workspace.network.interviewer.Interviewer`
(:attr:`Person.interviewer`) instead of ``ask``. On a bus (``person.with_bus(bus).serve()``) the person
answers the tasks sent to them through it, and is shown the replies to what they sent; ``say(text)`` sends
to the peers ``@name``\\ d in it (``@editor @analyst look at this``), or to every peer when it names none;
``listen()`` does that for whatever the person types unprompted. ``assign(to=, task=)`` sends one peer a
task; ``remember(key, value)`` and ``await recall(key, wait=30)`` use the person's memory,
:attr:`~workspace.robot.Robot.memory`: ``Person(..., memory=network.memory)`` (or any ``Memory`` given to the
robots too) makes it the one the robots share.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.ask_user import AskFn, resolve_answer
from workspace.bus import BusError, RobotMessage
from workspace.errors import AwaitTimeout, ProviderError
from workspace.network.channels import Channel, ChannelMessage
from workspace.network.interviewer import Interviewer
from workspace.providers.base import Chunk, FinishChunk, ProviderBase, TextChunk, ToolSpec
from workspace.robot import Robot

if TYPE_CHECKING:
    from workspace.messages import Message


log = logging.getLogger(__name__)

#: Numbers the questions asked of people through the window (their cards' ids).
_questions = itertools.count(1)

#: ``@name`` in a message (not inside a word or an e-mail address).
MENTION = re.compile(r"(?<![\w@])@(\w[\w-]*)")


def mentions(text: str) -> list[str]:
    """The names ``@``-mentioned in ``text``, in order of first appearance."""
    return list(dict.fromkeys(match.rstrip("-") for match in MENTION.findall(text)))


class PersonProvider(ProviderBase):
    """The "model" of a :class:`Person`: asks the person the last message and streams the answer."""

    is_language_model = False
    supports_tools = False

    def __init__(self, name: str, ask: AskFn | None, *, timeout: float | None, default: str | None,
                 choices: Sequence[str] | None) -> None:
        self.name = name
        self.ask = ask
        self.timeout = timeout
        self.default = default
        self.choices = list(choices) if choices else None
        self.model_id = f"person:{name}"
        self.label = f"{name} (a person)"

    def _asker(self) -> AskFn:
        if self.ask is not None:
            return self.ask
        from workspace.ask_user import _interactive, terminal_ask

        if _interactive():
            return terminal_ask(self.name)
        raise ProviderError(f"Nobody can answer for {self.name}: give Person('{self.name}', ask=...) a function "
                            "that asks the person (the window and the terminal each pass one); stdin is not a "
                            "terminal, so nobody can type the answer here: run it in a terminal, or in the window",
                            provider=self.model_id)

    def _front_end(self) -> tuple[AskFn, Any, str] | None:
        """The window's way of asking, when this person's task runs in a network whose approval gate has one:
        the ask, the task's run (its events show the question as a card) and the question's id."""
        from workspace.ask_user import front_end_ask
        from workspace.network.scheduler import _CURRENT

        current = _CURRENT.get()
        if self.ask is not None or current is None:
            return None
        network_run, state = current
        if state.robot != self.name:
            return None  # asked from inside another robot's task (delegated to): not this task's lane
        call_id = f"person-{state.name}-{next(_questions)}"
        ask = front_end_ask(network_run.options.get("approval"), call_id=call_id, robot=self.name,
                            run_id=state.run_id or "", task=state.name,
                            thread_id=network_run.options.get("thread_id"), timeout=self.timeout, person=True)
        return None if ask is None else (ask, state.agent_run, call_id)

    async def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        from workspace import events as ev
        from workspace.ask_user import QUESTION, NotAnswered

        question = _last_user_text(messages)
        front = self._front_end()
        ask = front[0] if front is not None else self._asker()
        run = front[1] if front is not None else None
        call_id = front[2] if front is not None else ""
        if run is not None:  # the question shows in the task's lane as a card to answer
            run.emit(ev.ToolUse(id=call_id, name=QUESTION, input={
                "question": question, "choices": self.choices or [], "default": self.default,
                "timeout": self.timeout, "person": True}))
        try:
            async with asyncio.timeout(self.timeout):
                value = ask(question, self.choices, self.default)
                if inspect.isawaitable(value):
                    value = await value
        except NotAnswered as exc:
            if run is not None:
                run.emit(ev.ToolError(id=call_id, name=QUESTION, error=f"Not answered: {exc}"))
            raise ProviderError(f"{self.name} did not answer ({exc})", provider=self.model_id) from None
        except TimeoutError:
            if run is not None:
                run.emit(ev.ToolError(id=call_id, name=QUESTION, error=f"No answer within {self.timeout:g} s"))
            if self.default is None:
                raise ProviderError(f"{self.name} did not answer within {self.timeout:g} s: give the person more "
                                    f"time (Person(timeout=...)), or a default= answer to go on with",
                                    provider=self.model_id) from None
            value = self.default
        answer = resolve_answer(value, self.choices, self.default)
        if run is not None:
            run.emit(ev.ToolResult(id=call_id, name=QUESTION, payload={"data": answer}))
        if not answer:
            raise ProviderError(f"{self.name} gave no answer", provider=self.model_id)
        yield TextChunk(answer)
        yield FinishChunk("stop")


def _last_user_text(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            content = message.content
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text"))
    return ""


class Person(Robot):
    """A person as a network worker (see the module)."""

    def __init__(self, name: str, *, ask: AskFn | None = None, timeout: float | None = None,
                 default: str | None = None, choices: Sequence[str] | None = None, description: str | None = None,
                 channel: Channel | None = None, **options: Any) -> None:
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise ValueError(f"Person '{name}': timeout must be a number of seconds above 0 (got {timeout!r})")
        #: The interviewer asking through ``channel`` (None: the person is asked through ``ask``).
        self.interviewer: Interviewer | None = None
        if channel is not None:
            if ask is not None:
                raise ValueError(f"Person '{name}': give ask= or channel=, not both (a channel is asked through its "
                                 "interviewer)")
            self.interviewer = Interviewer(channel, default_timeout=timeout)
            ask = self._ask_through_channel
        provider = PersonProvider(str(name), ask, timeout=timeout, default=default, choices=choices)
        super().__init__(name, system_prompt=f"{name} is a person.", description=description or f"{name} (a person)",
                         provider=provider, tools="none", mcp="none", knowledge_store=False, **options)
        self.person = provider

    @property
    def channel(self) -> Channel | None:
        return self.interviewer.channel if self.interviewer is not None else None

    async def _ask_through_channel(self, question: str, choices: Sequence[str] | None, default: str | None) -> Any:
        assert self.interviewer is not None
        return await self.interviewer.ask_and_wait(question, choices=choices, default=default)

    # -- on a bus (RobotLab's cyborg) ---------------------------------------------------------------------
    def assign(self, *, to: Any, task: Any) -> RobotMessage:
        """Send ``task`` to the peer ``to`` (a name or a robot) on this person's bus; the reply, when it comes,
        is in :attr:`outbox` under the message's key (and shown on the person's channel when serving)."""
        return self.send_message(to=to, content=task)

    def say(self, text: str) -> dict[str, RobotMessage]:
        """Send ``text`` to each peer it ``@``-mentions, or to every peer on the bus when it mentions none; the
        messages sent, by peer. A mentioned name no peer has is told to the person (on their channel) and
        logged; when none of the names is a peer, :class:`~workspace.bus.BusError` names the peers."""
        bus = self._need_bus()
        peers = [name for name in bus.channels if name != self.name]
        named = mentions(text)
        unknown = [name for name in named if name not in peers]
        recipients = [name for name in named if name in peers] if named else peers
        if unknown:
            self._tell(f"(no such peer: {', '.join('@' + n for n in unknown)})")
            log.info("%s mentioned %s, who are not on the bus", self.name, ", ".join(unknown))
        if not recipients:
            known = ", ".join("@" + n for n in peers) or "nobody"
            why = f"no peer named {', '.join('@' + n for n in unknown)}" if unknown else "nobody else is on the bus"
            raise BusError(f"{self.name}: no peer to send to ({why}); the peers on the bus: {known}")
        return {name: self.assign(to=name, task=text) for name in recipients}

    def remember(self, key: Any, value: Any) -> Person:
        """Set ``key`` to ``value`` in the person's memory (written by the person); returns the person."""
        self.memory.set(key, value, writer=self.name)
        return self

    async def recall(self, key: Any, wait: float | None = 30) -> Any:
        """The value of ``key`` in the person's memory, waiting up to ``wait`` seconds for one to be set (0 or
        None: not waiting); None when none was set in that time."""
        value = self.memory.get(key)
        if value is not None or not wait:
            return value
        try:
            return await self.memory.wait_for(key, timeout=wait)
        except AwaitTimeout:
            return None

    def serve(self, *, auto_reply: bool = True) -> Person:
        """Answer each task sent to the person on the bus (asked as ``@sender: task``) and reply with the answer;
        replies to what the person sent are shown on their channel as ``@sender: reply``."""
        async def handle(message: RobotMessage) -> None:
            if message.reply:
                self._tell(f"@{message.from_}: {_text(message.content)}")
                return
            result = await self.arun(f"@{message.from_}: {_text(message.content)}")
            answer = result.last_text_content
            if auto_reply and answer is not None:
                self.send_reply(to=message.from_, content=answer, in_reply_to=message.key)

        return self.on_message(handle)

    def listen(self) -> Person:
        """Hear what the person says unprompted on their channel and :meth:`say` it (by mentions); needs a
        channel and a bus."""
        if self.interviewer is None:
            raise ValueError(f"Person '{self.name}' has no channel to listen on: Person('{self.name}', channel=...)")
        self._need_bus()

        def route(message: ChannelMessage) -> None:
            try:
                self.say(message.content)
            except BusError as exc:
                self._tell(str(exc))

        self.interviewer.on_initiative(route).listen()
        return self

    def _tell(self, text: str) -> None:
        """Show ``text`` to the person on their channel (nothing without one)."""
        channel = self.channel
        if channel is not None:
            try:
                channel.deliver(ChannelMessage(text))
            except Exception as exc:
                log.warning("%s's channel could not show a message: %s", self.name, exc)

    def stream(self, message: object, **options: Any) -> Any:
        """A run whose answer is the person's (a network's ``provider=`` for its robots is not the person)."""
        options.pop("provider", None)
        return super().stream(message, **options)

    @property
    def timeout(self) -> float | None:
        return self.person.timeout

    def __repr__(self) -> str:
        return f"<Person {self.name!r}>"


def _text(content: Any) -> str:
    if isinstance(content, Mapping):
        return "\n".join(f"{key}: {value}" for key, value in content.items())
    return str(content)


__all__ = ["MENTION", "Person", "PersonProvider", "mentions"]
