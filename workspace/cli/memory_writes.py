"""Memory writes proposed for review (``review.memory: ask``) in the terminal.

``robotlab chat`` keeps its robot between messages, so what a run proposed (a key of its memory changed, old value
→ new value; a learning; a knowledge entry) waits there: a line after the turn says how many, and ``/memory``
lists them, ``/memory keep N [TEXT]`` keeps one (as TEXT when given), ``/memory drop N [REASON]`` does not.
``robotlab run`` ends with its robot: each proposal is named on stderr as not kept (the window's Changes dock
reviews them; ``robotlab changes`` is for file changes only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

USAGE = "/memory  list the memory writes that wait for review; /memory keep N [TEXT] or /memory drop N [REASON]"


def describe(pending: Any) -> str:
    """One proposal in a line: who proposes what."""
    if pending.kind == "memory":
        return f"{pending.robot}: memory '{pending.key}': {pending.describe_change()}"
    what = "learn" if pending.kind == "learn" else "record"
    return f"{pending.robot}: {what} \"{pending.text}\""


def waiting_line(robot: Any) -> str | None:
    """The line after a chat turn when proposals wait (None when none do)."""
    count = len(getattr(robot, "pending_memory_writes", []) or [])
    if not count:
        return None
    return f"⧗ {count} memory write(s) wait for your review (review.memory: ask): /memory to see them"


def not_kept_lines(robot: Any) -> list[str]:
    """What ``robotlab run`` says of the proposals its run left: they end with it."""
    pending = list(getattr(robot, "pending_memory_writes", []) or [])
    if not pending:
        return []
    return [f"memory: {len(pending)} write(s) proposed for review (review.memory: ask) were not kept: a terminal "
            "run's robot ends with it. Review them in the window's Changes dock (Memory), or in robotlab chat "
            "(/memory); robotlab changes lists file changes only.",
            *(f"  · {describe(p)}" for p in pending)]


def memory_command(robot: Any, rest: str, say: Callable[[str, str], None]) -> None:
    """``/memory [keep|drop N [TEXT]]`` on ``robot``'s proposals."""
    pending = list(getattr(robot, "pending_memory_writes", []) or [])
    word, _, tail = rest.partition(" ")
    if not word:
        if not pending:
            say("No memory write waits for review.", "2")
        for index, item in enumerate(pending, 1):
            say(f"{index}. {describe(item)}", "0")
        if pending:
            say(USAGE, "2")
        return
    number, _, text = tail.strip().partition(" ")
    if word not in ("keep", "drop") or not number.isdigit() or not 1 <= int(number) <= len(pending):
        say(f"Give a number of the list: {USAGE}", "33")
        return
    item = pending[int(number) - 1]
    if word == "keep":
        item.accept(text.strip() or None)
    else:
        item.reject(text.strip())
    say(item.outcome(), "32" if word == "keep" else "33")
