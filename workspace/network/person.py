"""A person in the network (RobotLab's cyborg): a task whose worker is a person, not a model.

``Person("approver", ask=fn, timeout=600)`` goes wherever a robot goes in a network
(``network.task("approve", person, depends_on=["draft"])``): when its task runs, the network waits for
``await fn(question, choices, default)`` (plain or ``async``, AskUser's signature) and the answer flows on
like a robot's. The question is the task's message (what the tasks before it said, as for a robot).
Without ``ask``, the terminal asks when stdin is one; with nobody to ask, the task fails saying so.
``timeout`` (seconds) bounds the wait: past it the task fails naming the person and the time, or, with
``default=``, goes on with that answer. ``choices`` are offered with every question.

A person is a :class:`~workspace.robot.Robot` whose "model" is the person (:class:`PersonProvider`):
its task has the same events, hooks, routing and result as any other, and a person can be
``delegate``\\ d to or put on a bus like a robot.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.ask_user import AskFn, resolve_answer
from workspace.errors import ProviderError
from workspace.providers.base import Chunk, FinishChunk, ProviderBase, TextChunk, ToolSpec
from workspace.robot import Robot

if TYPE_CHECKING:
    from workspace.messages import Message


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
                            "that asks the person (the window and the terminal each pass one)", provider=self.model_id)

    async def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        question = _last_user_text(messages)
        ask = self._asker()
        try:
            async with asyncio.timeout(self.timeout):
                value = ask(question, self.choices, self.default)
                if inspect.isawaitable(value):
                    value = await value
        except TimeoutError:
            if self.default is None:
                raise ProviderError(f"{self.name} did not answer within {self.timeout:g} s: give the person more "
                                    f"time (Person(timeout=...)), or a default= answer to go on with",
                                    provider=self.model_id) from None
            value = self.default
        answer = resolve_answer(value, self.choices, self.default)
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
                 **options: Any) -> None:
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise ValueError(f"Person '{name}': timeout must be a number of seconds above 0 (got {timeout!r})")
        provider = PersonProvider(str(name), ask, timeout=timeout, default=default, choices=choices)
        super().__init__(name, system_prompt=f"{name} is a person.", description=description or f"{name} (a person)",
                         provider=provider, tools="none", mcp="none", knowledge_store=False, **options)
        self.person = provider

    def stream(self, message: object, **options: Any) -> Any:
        """A run whose answer is the person's (a network's ``provider=`` for its robots is not the person)."""
        options.pop("provider", None)
        return super().stream(message, **options)

    @property
    def timeout(self) -> float | None:
        return self.person.timeout

    def __repr__(self) -> str:
        return f"<Person {self.name!r}>"


__all__ = ["Person", "PersonProvider"]
