"""Stored turns as the chat's presenter reads them (``ui.chat.model.listener``'s ``StoredTurn`` and
``TranscriptSource``), made in memory from a list of events: what a test loads with ``ChatPresenter.load_turn`` or
``load_thread`` to compare a turn reopened with the same turn shown live."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workspace import events as ev


@dataclass
class FakeInfo:
    """A turn's summary (``workspace.persistence``'s turn row): its id and totals."""

    id: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


@dataclass
class FakeView:
    """A stored turn: its summary, its events and where it sits among its siblings."""

    turn: FakeInfo
    events: list[ev.Event]
    sibling_index: int = 0
    sibling_count: int = 1
    status: str = "finished"
    user_text: str = "go"

    @property
    def id(self) -> str:
        return self.turn.id


@dataclass
class FakeSource:
    """A stored thread's branch: its turns in order, each turn's view on demand."""

    views: dict[str, FakeView] = field(default_factory=dict)

    @property
    def turns(self) -> list[FakeInfo]:
        return [v.turn for v in self.views.values()]

    def view(self, turn: FakeInfo) -> Any:
        return self.views[turn.id]
