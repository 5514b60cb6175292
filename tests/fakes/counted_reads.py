"""A conversation that counts the messages read from it: what the tests of a long conversation's work (a send, a
request converted or recorded) check, that it reads the new messages, not the whole conversation again."""

from __future__ import annotations

from typing import Any


class CountedReads(list[Any]):
    """A list that counts, in :attr:`reads` (one count for every instance), the items read from it: by index, by
    slice or by walking it (a copy walks it)."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        CountedReads.reads += len(got) if isinstance(index, slice) else 1
        return got

    def __iter__(self) -> Any:
        for message in super().__iter__():
            CountedReads.reads += 1
            yield message
