"""The assertions of an eval case, checked on what its run produced (:class:`Outcome`).

Each check returns None when the assertion holds, else the reason it failed, in words that name what was
expected and what was found. ``verify`` and ``rubric`` need the sandbox and a model: the runner checks them
(:mod:`workspace.evals.runner`); the rest are pure functions of the outcome.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workspace.evals.spec import Expect

__all__ = ["Outcome", "check", "describe", "subset"]

_SHOWN = 200


@dataclass(slots=True)
class Outcome:
    """What one case's run produced."""

    answer: str = ""
    #: Each tool call: ``{"name", "args"}``, in order.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: The proposed (pending) changes: path -> its new text (None: deleted, or not text).
    changes: dict[str, str | None] = field(default_factory=dict)
    seconds: float = 0.0
    #: USD, None when the provider did not know the price.
    cost: float | None = None
    #: Why the run did not finish (a failure, a stop, the time limit); None: it finished.
    error: str | None = None


def _short(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def subset(expected: Any, actual: Any) -> bool:
    """Whether ``expected`` is found in ``actual``: mappings key by key (extra keys allowed), anything else equal.
    A number and its text form match (``1`` and ``"1"``), as the model's arguments are often either."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            subset(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if expected == actual:
        return True
    scalars = int | float | str
    return isinstance(expected, scalars) and isinstance(actual, scalars) and str(expected) == str(actual)


def describe(expect: Expect) -> str:
    """The assertion as written (``contains: 'refund'``), for reports."""
    kind = expect.kind
    value = getattr(expect, kind)
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_none=True)
    return f"{kind}: {json.dumps(value, ensure_ascii=False, default=str)}"


def check(expect: Expect, outcome: Outcome) -> str | None:
    """None when ``expect`` holds for ``outcome``, else why not (``verify`` and ``rubric``: see the runner)."""
    kind = expect.kind
    answer = outcome.answer
    if expect.contains is not None:
        if expect.contains in answer:
            return None
        return f"the answer does not contain {expect.contains!r}; it was {_short(answer)}"
    if expect.regex is not None:
        if re.search(expect.regex, answer):
            return None
        return f"the answer does not match the regex {expect.regex!r}; it was {_short(answer)}"
    if expect.equals is not None:
        if answer.strip() == expect.equals.strip():
            return None
        return f"the answer is not equal to {expect.equals!r}; it was {_short(answer)}"
    if expect.json_schema is not None:
        return _json_problem(expect.json_schema, answer)
    if expect.tool_called is not None:
        want = expect.tool_called
        calls = [c for c in outcome.tool_calls if c["name"] == want.name]
        if not calls:
            made = ", ".join(dict.fromkeys(c["name"] for c in outcome.tool_calls)) or "none"
            return f"the tool {want.name!r} was not called (tools called: {made})"
        if want.args is None or any(subset(want.args, c["args"]) for c in calls):
            return None
        seen = "; ".join(json.dumps(c["args"], ensure_ascii=False, default=str) for c in calls[:3])
        return (f"the tool {want.name!r} was called, but never with arguments matching "
                f"{json.dumps(want.args, ensure_ascii=False)} (its calls: {seen})")
    if expect.change_proposed is not None:
        change = expect.change_proposed
        path = change.path.strip("/")
        if path not in outcome.changes:
            proposed = ", ".join(outcome.changes) or "none"
            return f"no change was proposed to {path} (changes proposed: {proposed})"
        text = outcome.changes[path]
        if change.contains is None or (text is not None and change.contains in text):
            return None
        return f"the change proposed to {path} does not contain {change.contains!r}"
    if expect.max_seconds is not None:
        if outcome.seconds <= expect.max_seconds:
            return None
        return f"the case took {outcome.seconds:.2f} s, more than max_seconds {expect.max_seconds:g}"
    if expect.max_cost is not None:
        if outcome.cost is None:
            return ("the cost is not known (the provider reported no price for this model), so max_cost cannot "
                    "hold; leave max_cost out for this model")
        if outcome.cost <= expect.max_cost:
            return None
        return f"the case cost ${outcome.cost:.6f}, more than max_cost ${expect.max_cost:g}"
    raise ValueError(f"{kind} is checked by the runner, not by check()")


def _json_problem(schema: Mapping[str, Any], answer: str) -> str | None:
    from jsonschema import Draft202012Validator

    text = answer.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        return f"the answer is not JSON ({exc.args[0] if exc.args else exc}); it was {_short(answer)}"
    errors = sorted(Draft202012Validator(dict(schema)).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path) or "the top level"
    return f"the answer's JSON does not match json_schema at {where}: {first.message}"
