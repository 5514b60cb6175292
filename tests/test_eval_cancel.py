"""An eval cancelled while its cases' threads are being written: each case that was running is stopped, its
thread's turn recorded with its events and the status ``cancelled`` (none is left ``running``), the cases not begun
leave no thread, the database stays sound, and the same eval run again on the same database passes. The model is
the loopback OpenAI-compatible server (stalling until the cancel, then answering); the store is a SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fakes.echo_eval import CASES, EchoModel, echo_eval_file
from fakes.llm_server import FakeLLMServer

from workspace import events as ev
from workspace.evals import CaseResult, load_eval_file, run_eval
from workspace.evals.runner import CANCELLED_REASON
from workspace.persistence import Store

pytestmark = pytest.mark.timeout(300)  # bounds a hang only


async def until(predicate: Any, what: str) -> None:
    for _ in range(600):  # bounds a hang only (60 s)
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def eval_threads(store: Store) -> dict[str, list[Any]]:
    """Each eval run's threads (by ``eval_run``)."""
    found: dict[str, list[Any]] = {}
    for thread in store.list_threads(include_evals=True):
        found.setdefault(thread.metadata["eval_run"], []).append(thread)
    return found


async def test_a_cancelled_eval_leaves_its_running_cases_recorded_as_cancelled_and_runs_again(tmp_path: Path) -> None:
    model = EchoModel()
    db = tmp_path / "threads.db"
    store = Store.open(db)
    heard: list[CaseResult] = []
    with FakeLLMServer(reply_fn=model) as server:
        path = echo_eval_file(tmp_path, server)
        spec = load_eval_file(path)
        task = asyncio.create_task(run_eval(spec, base=tmp_path, store=store, eval_file=path, concurrency=2,
                                            on_result=heard.append))
        # Two cases running: their threads written, a request at the model (which stalls until they hang up).
        await until(lambda: len(store.list_threads(include_evals=True)) == 2 and server.requests,
                    "two cases to be running")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        model.stalling.clear()

        # The two cases that ran are threads whose one turn is cancelled, its events ending with the stop; the two
        # that waited for their turn left nothing.
        (first_run,) = eval_threads(store).values()
        assert sorted(t.metadata["eval_case"] for t in first_run) == ["alpha", "beta"]
        for thread in first_run:
            (turn,) = store.turns(thread.id)
            assert turn.status == "cancelled" and turn.finished_at is not None
            ((_, events),) = store.path_events(thread.id)
            assert isinstance(events[0], ev.RunStarted)
            assert isinstance(events[-1], ev.RunCancelled) and events[-1].reason == CANCELLED_REASON
            assert sum(e.terminal for e in events) == 1
        # Whoever listened heard each stopped case, marked so, naming its thread.
        assert sorted((r.case, r.cancelled, r.thread_id) for r in heard) == sorted(
            (t.metadata["eval_case"], True, t.id) for t in first_run)
        assert all(r.failures == [f"the run did not finish: stopped ({CANCELLED_REASON})"] for r in heard)
        assert store.integrity_problem() is None

        # The same eval again on the same database: every case passes, in threads of its own.
        report = await run_eval(spec, base=tmp_path, store=store, eval_file=path, concurrency=2)
    assert report.passed, [r.failures for r in report.results]
    runs = eval_threads(store)
    assert len(runs[report.run_id]) == len(CASES) and len(runs) == 2
    assert {store.turns(r.thread_id)[0].status for r in report.results if r.thread_id} == {"finished"}
    store.close()

    # Read again from the file by a new store: nothing is left running.
    with Store.open(db) as again:
        statuses = sorted(turn.status for thread in again.list_threads(include_evals=True)
                          for turn in again.turns(thread.id))
    assert statuses == ["cancelled"] * 2 + ["finished"] * len(CASES)
