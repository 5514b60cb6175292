"""Long stored threads for the tests of opening them (the chat's turn window, the transcript's first page, the
conversation a window reads in workers)."""

from __future__ import annotations

from pathlib import Path

from workspace import events as ev
from workspace.messages import TextMessage
from workspace.persistence import Store
from workspace.result import RobotResult


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


#: The events of each turn of :func:`add_tool_thread` (without its memory write).
TOOL_TURN_EVENTS = 7
#: What each turn's ``read_file`` of :func:`add_tool_thread` reads.
FILE_CONTENT = "def f():\n    pass\n" * 5


def question(i: int) -> str:
    """The message of turn ``i`` of :func:`add_tool_thread`."""
    return f"Question {i}: what does file_{i}.py do?"


def add_tool_thread(store: Store, turns: int, *, title: str = "A long conversation", same_call_id: bool = False,
                    memory_every: int = 0) -> str:
    """A thread of ``turns`` turns one after the other in ``store``, each a run ``r<i>`` with a tool call: the
    :func:`question`, a line of text, ``read_file`` of ``file_<i>.py`` and its result (:data:`FILE_CONTENT`), an
    answer in Markdown with a code block, its usage and its end (:data:`TOOL_TURN_EVENTS` events); every turn
    finished, the last one current.
    ``same_call_id``: every run numbers its call ``call_0`` (as local servers do), else ``c<i>``. ``memory_every``:
    every that many turns (from the first) the run also writes ``k<i % 3>`` = i to memory before answering. Its id."""
    from workspace.result import RobotResult

    thread = store.create_thread(robot="assistant", title=title)
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=question(i), parent_turn_id=parent)
        run, call = f"r{i}", "call_0" if same_call_id else f"c{i}"
        events: list[ev.Event] = [
            ev.RunStarted(message=question(i), model="fake"),
            ev.Text(text=f"Let me read `file_{i}.py` first."),
            ev.ToolUse(id=call, name="read_file", input={"path": f"file_{i}.py"}),
            ev.ToolResult(id=call, name="read_file", payload={"data": {"content": FILE_CONTENT}}, duration=0.01),
        ]
        if memory_every and i % memory_every == 0:
            events.append(ev.MemoryChanged(key=f"k{i % 3}", value=i))
        events += [
            ev.Text(text=f"**file_{i}.py** defines `f`, which does nothing:\n\n```python\ndef f():\n    pass\n```"),
            ev.Usage(input_tokens=120, output_tokens=40, cost=0.0001, total_input_tokens=120, total_output_tokens=40,
                     total_cost=0.0001),
            ev.RunFinished(result=RobotResult(robot_name="assistant", output=[])),
        ]
        store.append_events(thread.id, turn.id, [e.replace(run_id=run, robot="assistant", seq=seq)
                                                 for seq, e in enumerate(events, 1)])
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    if parent is not None:
        store.set_current(thread.id, parent)
    return thread.id


def build_thread(db: Path, turns: int, *, counted: set[int] | None = None) -> str:
    """A thread of ``turns`` turns (a question, an answer); the turns in ``counted`` (default: every one)
    have a count of the context window, its ``used`` the turn's number."""
    store = Store(db)
    thread = store.create_thread(robot="assistant", title=f"{turns} turns")
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"Question {i}", parent_turn_id=parent)
        run, answer = f"r{i}", f"Answer {i}"
        result = RobotResult(robot_name="assistant", output=[TextMessage(role="assistant", content=answer)])
        events: list[ev.Event] = [ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"Question {i}")]
        if counted is None or i in counted:
            events.append(ev.ContextUsage(run_id=run, robot="assistant", seq=2, used=i, window=100_000))
        events += [ev.Text(run_id=run, robot="assistant", seq=3, text=answer),
                   ev.RunFinished(run_id=run, robot="assistant", seq=4, result=result)]
        store.append_events(thread.id, turn.id, events)
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    store.close()
    return thread.id
