"""SQLite thread stores for the tests of finding damage: a store filled with enough threads to span many pages, and
a page in its middle overwritten with garbage (as a disk or a copy gone wrong would)."""

from __future__ import annotations

import random
from pathlib import Path

from workspace import events as ev
from workspace.persistence import Store

#: SQLite's page size (the store's default).
PAGE = 4096


def filled(db: Path, threads: int = 60) -> list[str]:
    """``threads`` threads of one long answer each (enough pages to damage one in the middle) in the store at
    ``db``, closed; their ids."""
    ids = []
    with Store(db) as store:
        for t in range(threads):
            thread = store.create_thread(robot="helper", title=f"Thread {t}")
            turn = store.add_turn(thread.id, user_text=f"question {t} about pelicans", parent_turn_id=None)
            store.append_events(thread.id, turn.id, [
                ev.Text(run_id="r", robot="helper", seq=1, text=f"answer {t}: " + "pelicans fly in lines " * 40),
                ev.RunFinished(run_id="r", robot="helper", seq=2),
            ])
            ids.append(thread.id)
    return ids


def garbage_page(db: Path) -> None:
    """The page in the middle of the file at ``db`` overwritten with random bytes (the same each time)."""
    pages = db.stat().st_size // PAGE
    rng = random.Random(16)
    with db.open("r+b") as fh:
        fh.seek((pages // 2) * PAGE)
        fh.write(bytes(rng.randrange(256) for _ in range(PAGE)))
