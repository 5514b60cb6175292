"""Reading a thread for the window: turn list first, each turn's events only when it is shown.

``ThreadSession.transcript()`` reads every event of the branch; for a thread of thousands of
messages that is most of the time to first paint. The window shows the last turns first, so
it reads the (cheap) turn list, and the events of a turn when the turn is rendered: a
:class:`LazyTranscript` is the chat presenter's :class:`~ui.chat.model.listener.TranscriptSource` (and
gives the inspector every event, read off the UI thread for long threads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspace import events as ev
    from workspace.persistence import Store, TurnInfo
    from workspace.session import TurnView


class LazyTranscript:
    """The current branch of a thread, events loaded per turn on demand."""

    def __init__(self, store: Store, thread_id: str, leaf_turn_id: str | None = None) -> None:
        self.store = store
        self.thread_id = thread_id
        self.turns: list[TurnInfo] = list(store.path(thread_id, leaf_turn_id))
        self._branches: dict[str | None, list[str]] = store.branch_map(thread_id) if self.turns else {}

    def __len__(self) -> int:
        return len(self.turns)

    def view(self, turn: TurnInfo) -> TurnView:
        """The TurnView of ``turn`` (a TurnInfo): its events (text coalesced) and siblings."""
        from workspace.persistence import coalesce_text
        from workspace.session import TurnView

        events = coalesce_text(self.store.turn_events(turn.id))
        siblings = self._branches.get(turn.parent_turn_id, [turn.id])
        index = siblings.index(turn.id) if turn.id in siblings else 0
        return TurnView(turn, events, index, len(siblings), tuple(siblings))

    def all_events(self) -> list[ev.Event]:
        """Every event of the branch, in order (for the inspector)."""
        from workspace.persistence import coalesce_text

        out: list[ev.Event] = []
        for _turn, events in self.store.path_events(self.thread_id, self.turns[-1].id if self.turns else None):
            out.extend(coalesce_text(events))
        return out
