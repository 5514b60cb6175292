"""A run's writes to a shared memory that outlives it, reviewed like ``learn`` and ``record_knowledge``.

With ``review.memory: ask`` (or ``Robot(review_memory="ask")``) a robot's run works on its memory as always (the
run reads back what it wrote, ``wait_for`` wakes), and when the run ends each key it changed is put back as it was
before the run and proposed as a :class:`~workspace.knowledge.PendingMemoryWrite` of kind ``memory`` (the key,
old value → new value): accepted, the new value (as edited) is written; rejected, the key keeps its old value. So
the robot's next run sees only what was accepted. The memories reviewed are those that outlive the run: the
robot's own ``robot.memory``, a ``Memory`` given to the run, a network's kept across its runs. A memory marked
``scratch`` (one that lives only inside a run, like the network a window's thread builds afresh for each message)
is never reviewed, nor are the reserved keys (``results``, ``messages``, ...) and ``learnings`` (a learning is
reviewed as such).

The proposals come in the order of the tool calls that wrote them, as the model made them (its message's
order), not the order the calls finished in: calls of one message run at once, and ``/memory keep 1`` names the
same write whichever ends first. A key written again is placed by its last write; a write outside a tool call
by when it happened.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workspace.knowledge import PendingMemoryWrite, memory_text
from workspace.tools.base import current_call, next_call_order

if TYPE_CHECKING:
    from workspace.memory import Memory, MemoryChange

#: Keys never reviewed as memory writes: a learning is reviewed as a learning.
UNREVIEWED_KEYS = frozenset({"learnings"})
#: Who the memory says wrote a value put back or accepted in review.
REVIEW_WRITER = "memory review"


def reviewed(memory: Memory | None) -> bool:
    """Whether writes to ``memory`` outlive the run (not a scratch memory)."""
    return memory is not None and not getattr(memory, "scratch", False)


def review_writes(memory: Memory, *, robot: str, propose: Callable[[PendingMemoryWrite], None],
                  wants: Callable[[str], bool] | None = None) -> Callable[[Callable[[Any], Any]], Callable[[], None]]:
    """A run's watcher (``RunSpec.watchers``): from the run's start, the keys of ``memory`` the run changes are
    noted; when it ends each is put back and handed to ``propose`` (see the module), as proposed by its last
    writer (``robot`` when the memory does not say). ``wants(writer)``: whether that writer's writes are reviewed
    (a network's robots each say; default: all)."""

    def watch(emit: Callable[[Any], Any]) -> Callable[[], None]:
        del emit
        before = {key: copy.deepcopy(value) for key, value in memory.items()}
        changed: dict[str, tuple[int, str]] = {}  # key -> (the place of its last write, its last writer)

        def observe(change: MemoryChange) -> None:
            key = str(change.key)
            if key not in UNREVIEWED_KEYS and change.writer != REVIEW_WRITER:
                call = current_call()  # observers run in the writer's context: the tool call writing, if any
                place = call.order if call is not None and call.order is not None else next_call_order()
                changed.pop(key, None)
                changed[key] = (place, str(change.writer or robot))

        remove = memory.add_observer(observe)
        memory.reviewing += 1

        def stop() -> None:
            remove()
            memory.reviewing = max(0, memory.reviewing - 1)
            for key, (_place, writer) in sorted(changed.items(), key=lambda item: item[1][0]):
                if wants is not None and not wants(writer):
                    continue
                existed, old = key in before, before.get(key)
                deleted = not memory.has(key)
                new = memory.get(key)
                if (deleted and not existed) or (not deleted and existed and new == old):
                    continue  # back as it was
                if existed:
                    memory.set(key, old, writer=REVIEW_WRITER)
                else:
                    memory.delete(key)
                pending = PendingMemoryWrite(
                    "memory", writer, "" if deleted else memory_text(new), key=key, previous=old, existed=existed,
                    value=None if deleted else copy.deepcopy(new), deleted=deleted, _apply=lambda p: _apply(memory, p))
                propose(pending)

        return stop

    return watch


def _apply(memory: Memory, pending: PendingMemoryWrite) -> None:
    if pending.deleted:
        memory.delete(pending.key)
    else:
        memory.set(pending.key, pending.value, writer=REVIEW_WRITER)


__all__ = ["REVIEW_WRITER", "UNREVIEWED_KEYS", "review_writes", "reviewed"]
