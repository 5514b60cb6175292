"""The rubric's judge: a model asked whether an answer meets a rubric, its tokens and cost counted apart from
the robot's (:class:`JudgeUsage`).

The judge must answer exactly ``{"pass": true|false, "reason": "..."}``; anything else fails the assertion and
says what it answered. A judge that cannot be reached (its server down, a refused key) fails the assertion with
a message naming the judge's model and why; the other cases go on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace.evals.spec import Rubric
    from workspace.providers.base import Provider

__all__ = ["JUDGE_PROMPT", "JudgeUsage", "judge_answer"]

#: What the rubric's judge is told; its answer must be exactly this JSON object.
JUDGE_PROMPT = (
    "You judge an assistant's answer against a rubric. Reply with one JSON object and nothing else: "
    '{"pass": true or false, "reason": "one sentence"}.'
)


@dataclass(slots=True)
class JudgeUsage:
    """The judge's model calls of one case: tokens and cost (None: no call reported a price), kept apart from
    the robot's own."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def add(self, *, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost": self.cost}


async def judge_answer(judge: Provider, rubric: Rubric, *, model: str, message: str, answer: str,
                       usage: JudgeUsage) -> str | None:
    """None when ``judge`` (the provider of ``model``) says ``answer`` to ``message`` meets ``rubric``, else why
    not; the call's tokens and cost are added to ``usage``."""
    from workspace.messages import TextMessage
    from workspace.providers.base import TextChunk, UsageChunk

    question = f"Rubric: {rubric.text}\n\nThe user's message: {message}\n\nThe assistant's answer:\n{answer}"
    reply = ""
    usage.calls += 1
    try:
        async for chunk in judge.stream(system=JUDGE_PROMPT, messages=[TextMessage("user", question)], tools=[],
                                        settings={"temperature": 0}):
            if isinstance(chunk, TextChunk):
                reply += chunk.text
            elif isinstance(chunk, UsageChunk):
                usage.add(input_tokens=chunk.input_tokens, output_tokens=chunk.output_tokens, cost=chunk.cost)
    except Exception as exc:
        return f"the judge ({model}) could not answer: {exc}"
    try:
        verdict = json.loads(reply.strip())
    except ValueError:
        verdict = None
    if not (isinstance(verdict, dict) and isinstance(verdict.get("pass"), bool)
            and isinstance(verdict.get("reason", ""), str) and set(verdict) <= {"pass", "reason"}):
        shown = reply.strip()[:200]
        return (f"the judge ({model}) did not answer with the JSON asked for ({{\"pass\": true|false, \"reason\": "
                f"\"...\"}}); it said {shown!r}")
    if verdict["pass"]:
        return None
    return f"the judge ({model}) failed it: {verdict.get('reason') or 'no reason given'}"
