"""Subscriptions to memory keys and glob patterns."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workspace.memory.change import MemoryChange

#: Called with each change of a subscribed key (sync or async; run off the writer's thread).
SubscriptionCallback = Callable[[MemoryChange], Any]


@dataclass(eq=False)
class _Subscription:
    id: str
    callback: SubscriptionCallback
    loop: asyncio.AbstractEventLoop | None
    pattern: re.Pattern[str] | None = None


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A compiled, fully anchored regex for a glob: ``*`` any characters, ``?`` exactly one;
    every other character is literal."""
    parts = []
    for ch in pattern:
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    return re.compile(r"\A" + "".join(parts) + r"\Z", re.DOTALL)


def _is_async_callable(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - we want the bound __call__
    return call is not None and inspect.iscoroutinefunction(call)
