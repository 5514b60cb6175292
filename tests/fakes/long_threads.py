"""Long stored threads for the tests of opening them (the chat's turn window, the transcript's first page)."""

from __future__ import annotations

from workspace import events as ev
from workspace.persistence import Store


def add_long_thread(store: Store, turns: int) -> tuple[str, list[str]]:
    """A thread of ``turns`` turns one after the other in ``store``: question i answered "answer i" by the
    assistant (its run's start, text and end), every turn finished. Its id and its turns' ids, oldest first."""
    thread = store.create_thread(robot="assistant", title="long")
    parent = None
    ids: list[str] = []
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"question {i}", parent_turn_id=parent)
        run = f"r{i}"
        store.append_events(thread.id, turn.id, [
            ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"question {i}"),
            ev.Text(run_id=run, robot="assistant", seq=2, text=f"answer {i}"),
            ev.RunFinished(run_id=run, robot="assistant", seq=3),
        ])
        store.finish_turn(turn.id, "finished")
        parent = turn.id
        ids.append(turn.id)
    return thread.id, ids
