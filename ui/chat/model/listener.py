"""What the chat's presenter tells a view (:class:`ChatListener`), and where it reads a stored
thread from (:class:`TranscriptSource`, whose turns are :class:`StoredTurn`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ui.chat.model.state import Item, RunState, TextItem, TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from workspace import events as ev


class ChatListener(Protocol):
    """What the presenter tells the view. Every item reaches ``item_added`` once, then
    ``item_changed`` when its state changes; text grows through ``text_appended``."""

    def chat_reset(self) -> None: ...

    def turn_added(self, turn: TurnState) -> None:
        """A turn joined ``state.turns`` (at its index there: loading earlier turns inserts)."""

    def turn_removed(self, turn: TurnState) -> None: ...

    def user_changed(self, turn: TurnState) -> None:
        """The turn's user message got its stored turn, its branch position or its review note."""

    def item_added(self, item: Item) -> None:
        """A new item at the end of ``item.parent`` (its turn, or its lane)."""

    def item_changed(self, item: Item) -> None: ...

    def text_appended(self, item: TextItem, delta: str) -> None: ...

    def tool_output(self, item: ToolCallItem, text: str) -> None:
        """A running tool printed ``text`` (ANSI codes stripped; ``item.output`` has all that is kept)."""

    def run_changed(self, run: RunState) -> None:
        """A run's footer: its usage, how it ended (``run.footer`` says whether it shows)."""

    def hidden_changed(self) -> None:
        """The number of earlier turns not loaded yet changed."""


class Silent:
    """The listener of a presenter nobody watches (tests, dumps)."""

    def chat_reset(self) -> None:
        pass

    def turn_added(self, turn: TurnState) -> None:
        pass

    def turn_removed(self, turn: TurnState) -> None:
        pass

    def user_changed(self, turn: TurnState) -> None:
        pass

    def item_added(self, item: Item) -> None:
        pass

    def item_changed(self, item: Item) -> None:
        pass

    def text_appended(self, item: TextItem, delta: str) -> None:
        pass

    def tool_output(self, item: ToolCallItem, text: str) -> None:
        pass

    def run_changed(self, run: RunState) -> None:
        pass

    def hidden_changed(self) -> None:
        pass


class TranscriptSource(Protocol):
    """A stored thread's branch: its turns (cheap) and each turn's events on demand
    (:class:`ui.transcript.LazyTranscript`)."""

    @property
    def turns(self) -> Sequence[Any]: ...

    def view(self, turn: Any) -> StoredTurn: ...


class StoredTurn(Protocol):
    """A stored turn as the presenter reads it (:class:`workspace.session.TurnView`)."""

    @property
    def id(self) -> str: ...

    @property
    def user_text(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def events(self) -> list[ev.Event]: ...

    @property
    def sibling_index(self) -> int: ...

    @property
    def sibling_count(self) -> int: ...


__all__ = ["ChatListener", "Silent", "StoredTurn", "TranscriptSource"]
