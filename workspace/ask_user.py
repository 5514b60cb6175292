"""``AskUser`` (RobotLab's ``RobotLab::AskUser``): a tool the model calls to ask the person a question.

Who answers is pluggable: ``AskUser(ask=fn)`` with ``fn(question, choices, default)`` returning the
answer (or an awaitable of it), so a window or a test can answer. Without ``ask`` it asks the front end when
the run's approval gate has one that shows questions (the window: a question card in the chat), else the
terminal when the process has one (stdin is interactive: ``robotlab chat`` / ``run`` in a terminal);
when nobody can answer, the model gets an error result saying so, and the run goes on.

The answer follows RobotLab: an empty answer is the ``default``; a number with ``choices`` is that
choice (1-based) when it is in range, else the text as typed.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from workspace.tools.base import Tool, ToolContext, ToolOutput

AskFn = Callable[[str, list[str] | None, str | None], Awaitable[str] | str]

DESCRIPTION = "Ask the user a question and wait for their typed response"
NOBODY = ("Nobody can answer this question: the run has no one to ask (it is not in an interactive terminal and "
          "its AskUser tool was given no ask=). Go on without the answer, or say in your reply what you need.")

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question to ask the user"},
        "choices": {"type": "array", "items": {"type": "string"}, "description": "Optional choices to offer"},
        "default": {"type": "string", "description": "The answer when the user just presses Enter"},
    },
    "required": ["question"],
}


def resolve_answer(answer: Any, choices: Sequence[str] | None, default: str | None) -> str:
    """RobotLab's reading of a typed answer: blank -> ``default``; ``n`` -> ``choices[n-1]`` when in range."""
    text = "" if answer is None else str(answer).strip()
    if not text:
        return default or ""
    if choices and text.isdigit() and 1 <= int(text) <= len(choices):
        return str(choices[int(text) - 1])
    return text


def terminal_ask(robot: str | None = None) -> AskFn:
    """An ``ask`` that writes the question (and numbered choices) and reads one line from the terminal."""

    def read(question: str, choices: list[str] | None, default: str | None) -> str:
        out = sys.stdout
        out.write(f"\n[{robot or 'Robot'}] {question}\n")
        for i, choice in enumerate(choices or (), start=1):
            out.write(f"  {i}. {choice}\n")
        out.write(f"> [{default}] " if default else "> ")
        out.flush()
        line = sys.stdin.readline()  # EOF: "" (the default)
        return line.rstrip("\n")

    async def ask(question: str, choices: list[str] | None, default: str | None) -> str:
        return await asyncio.to_thread(read, question, choices, default)

    return ask


#: The tool name of a question the front end is asked (an AskUser call, a person's task).
QUESTION = "ask_user"


class NotAnswered(Exception):
    """The front end's person did not answer (they skipped the question); the message says why."""


def front_end_ask(gate: Any, *, call_id: str, robot: str, run_id: str = "", task: str | None = None,
                  thread_id: str | None = None, timeout: float | None = None, person: bool = False) -> AskFn | None:
    """An ``ask`` that asks through the run's approval gate when its front end shows questions (the window
    sets the gate's ``question_fn``), else None. The request is tool :data:`QUESTION`, its input the
    question, choices, default and ``timeout`` (seconds, for a countdown); an answer not given raises
    :class:`NotAnswered`."""
    fn = gate.answers_questions() if gate is not None and hasattr(gate, "answers_questions") else None
    if fn is None:
        return None

    async def ask(question: str, choices: list[str] | None, default: str | None) -> str:
        from workspace.approval import ApprovalRequest

        request = ApprovalRequest(
            call_id=call_id, robot=robot, tool=QUESTION, run_id=run_id, task=task, thread_id=thread_id,
            input={"question": question, "choices": list(choices or []), "default": default, "timeout": timeout},
            annotations={"askUser": True, "person": person},
        )
        decision = await fn(request)
        answer = decision.input.get("answer") if isinstance(decision.input, dict) else None
        if not decision.approved or answer is None:
            raise NotAnswered(decision.reason or "the user skipped the question")
        return str(answer)

    return ask


def _interactive() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


class AskUser(Tool):
    """The ``ask_user`` tool: ``question`` (required), ``choices`` (optional), ``default`` (optional)."""

    def __init__(self, ask: AskFn | None = None, *, name: str = "ask_user", timeout: float | None = None) -> None:
        super().__init__(name, DESCRIPTION, PARAMETERS, self._answer, annotations={"readOnlyHint": True},
                         timeout=timeout)
        #: Who answers (None: the terminal when there is one, else nobody).
        self.ask = ask

    async def _answer(self, arguments: dict[str, Any], context: ToolContext | None = None) -> Any:
        ask = self.ask
        if ask is None and context is not None:  # the window shows the question in its chat
            ask = front_end_ask(context.extras.get("approval"), call_id=context.call_id, robot=context.robot,
                                run_id=context.run_id, task=context.task, thread_id=context.extras.get("thread_id"))
        if ask is None:
            if not _interactive():
                return ToolOutput(NOBODY, is_error=True)
            ask = terminal_ask(context.robot if context is not None else None)
        question = str(arguments["question"])
        choices = [str(c) for c in arguments.get("choices") or []] or None
        default = arguments.get("default")
        try:
            answer = ask(question, choices, None if default is None else str(default))
            if inspect.isawaitable(answer):
                answer = await answer
        except NotAnswered as exc:
            return ToolOutput(f"The user did not answer ({exc}). Go on without the answer, or say in your reply "
                              "what you need.", is_error=True)
        return resolve_answer(answer, choices, None if default is None else str(default))
