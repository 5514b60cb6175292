"""Threads become tests: replay a recorded thread against another model, robot or prompt, and run one
recorded tool call again without the model.

:func:`replay` sends a thread's user messages (its current branch) again, one turn after the other, to the
robot it was held with (or another one, another model, another system prompt). A tool call the model makes
that matches one recorded in the thread (the same tool with the same arguments, compared as canonical JSON)
is answered from the record: nothing runs, no MCP server is started. A new or different call is reported
and, by default, not run: the model is told, as the call's error, that it was not run during the replay.
With ``run_new_calls=True`` it runs through the approval gate as any call does (the robot's MCP servers
start then, so that a new call of theirs can run; recorded calls are still answered from the record).

The result (:class:`ReplayResult`) compares the two runs turn by turn and names where the replay diverged:
another tool, other arguments, a different answer, a different change proposed, a run that ended
otherwise; with the diffs of the answers, the arguments and the proposed changes. Whether a divergence
counts is the tolerance's call (:data:`TOLERANCES`): ``exact`` (everything must be the same), ``tools``
(the same tools with the same arguments in the same order; the answers may differ) or ``judged`` (as
``tools``, and a model says whether two different answers mean the same).

The replay is recorded as a new thread of the store, linked to the original (its metadata:
``replay_of``, ``replay`` with the options), so it can be read beside it.

:func:`rerun_call` runs one recorded tool call again (the same or edited arguments) through the approval
gate, without the model, and returns the new result with its diff against the recorded one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.approval import Action, ApprovalDecision, ApprovalGate, ApprovalRequest, FileEffect
from workspace.diffing import split_lines, unified_diff
from workspace.persistence import Store
from workspace.readlimits import ROBOT_FILE_BYTES, FileLimitError, read_text_bounded
from workspace.result import RobotResult, last_text
from workspace.session.recording import RecordedRun
from workspace.tools.base import Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from workspace.messages import Message
    from workspace.providers.base import Provider
    from workspace.robot import Robot

#: How far a replay may differ from the record and still pass.
TOLERANCES: tuple[str, ...] = ("exact", "tools", "judged")
#: What the model is told when it makes a call the record does not hold (and new calls are not run).
NOT_RUN = ("The tool call {name}({args}) was not run: this is a replay of a recorded conversation, and the "
           "record holds no call of '{name}' with these arguments. Answer with what you have.")

#: A judge: ``await judge(question, recorded_answer, replayed_answer)`` is True when the two answers mean
#: the same (:func:`model_judge` asks a model).
Judge = Callable[[str, str, str], Awaitable[bool]]


class ReplayError(Exception):
    """A thread that cannot be replayed (no messages, a network's thread, a bad tolerance): the message says why."""


def canonical(name: str, arguments: Any) -> str:
    """The key a call is matched by: the tool's name and its arguments as canonical JSON (sorted keys)."""
    return json.dumps([name, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _pretty(value: Any) -> list[str]:
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, default=str)
    return split_lines(text + "\n")


def _text_lines(text: str) -> list[str]:
    return split_lines(text if text.endswith("\n") or not text else text + "\n")


# -- the record ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of a turn: its id, the tool's name and the arguments."""

    id: str
    name: str
    input: Any

    def label(self) -> str:
        return f"{self.name}({json.dumps(self.input, sort_keys=True, ensure_ascii=False, default=str)})"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "input": self.input}


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """What a recorded call returned: the data the model saw (or the error), the raw payload, its changes."""

    call: Call
    data: Any
    raw: Any
    is_error: bool
    #: The files of the ``change_proposed`` events the call made.
    changes: tuple[dict[str, Any], ...] = ()

    def output(self) -> ToolOutput:
        return ToolOutput(self.data, raw=self.raw, is_error=self.is_error)

    def value(self) -> Any:
        return {"error": self.data} if self.is_error else {"data": self.data}


@dataclass(slots=True)
class TurnRecord:
    """One turn as it ran: the user's message, the tool calls in order, the answer, the changes proposed."""

    user_text: str
    calls: list[Call] = field(default_factory=list)
    #: The stored turn (its attachments are sent again with its message).
    turn_id: str | None = None
    answer: str = ""
    changes: list[dict[str, Any]] = field(default_factory=list)
    status: str = "finished"

    def to_dict(self) -> dict[str, Any]:
        return {"calls": [c.to_dict() for c in self.calls], "answer": self.answer, "changes": self.changes,
                "status": self.status}


def _change_files(event: ev.ChangeProposed) -> list[dict[str, Any]]:
    return [dict(f) for f in event.files]


def turn_record(user_text: str, events: Sequence[ev.Event], *, run_id: str | None = None) -> TurnRecord:
    """A turn's calls, answer, proposed changes and end, from its events (the run's own, not runs inside it)."""
    record = TurnRecord(user_text=user_text)
    for event in events:
        if event.nested or (run_id is not None and event.run_id != run_id):
            continue
        if isinstance(event, ev.ToolUse):
            record.calls.append(Call(event.id, event.name, event.input))
        elif isinstance(event, ev.ChangeProposed):
            record.changes += _change_files(event)
        elif isinstance(event, ev.RunFinished | ev.RunFailed | ev.RunCancelled):
            result = event.result if isinstance(event, ev.RunFinished) else event.partial
            record.answer = last_text(result) if isinstance(result, RobotResult) else ""
            record.status = {"run_finished": "finished", "run_failed": "failed"}.get(event.kind, "cancelled")
    return record


class Recording:
    """A thread's recorded tool calls, answered in the order they were made: the same call made again
    gets the next recorded answer, and the last one once they are used up."""

    def __init__(self, outcomes: Sequence[RecordedOutcome]) -> None:
        self._by_key: dict[str, deque[RecordedOutcome]] = {}
        for outcome in outcomes:
            self._by_key.setdefault(canonical(outcome.call.name, outcome.call.input), deque()).append(outcome)

    def has(self, name: str, arguments: Any) -> bool:
        return canonical(name, arguments) in self._by_key

    def take(self, name: str, arguments: Any) -> RecordedOutcome | None:
        queue = self._by_key.get(canonical(name, arguments))
        if not queue:
            return None
        return queue.popleft() if len(queue) > 1 else queue[0]

    @property
    def tool_names(self) -> set[str]:
        return {queue[0].call.name for queue in self._by_key.values() if queue}


def read_thread(store: Store, thread_id: str) -> tuple[list[TurnRecord], list[RecordedOutcome], dict[str, str | None]]:
    """The turns of the thread's current branch, every recorded call's outcome (in order), and each
    tool's MCP server as recorded (None for a local tool)."""
    turns: list[TurnRecord] = []
    outcomes: list[RecordedOutcome] = []
    servers: dict[str, str | None] = {}
    for turn, events in store.path_events(thread_id):
        terminal_run = next((e.run_id for e in events if isinstance(e, ev.RunStarted) and not e.nested), None)
        turns.append(turn_record(turn.user_text, events, run_id=terminal_run))
        turns[-1].turn_id = turn.id
        calls: dict[str, Call] = {}
        changes: dict[str, list[dict[str, Any]]] = {}
        for event in events:
            if event.nested:
                continue
            if isinstance(event, ev.ToolUse):
                calls[event.id] = Call(event.id, event.name, event.input)
                servers.setdefault(event.name, event.server)
            elif isinstance(event, ev.ChangeProposed) and event.tool_id:
                changes.setdefault(event.tool_id, []).extend(_change_files(event))
        for event in events:
            if event.nested or not isinstance(event, ev.ToolResult | ev.ToolError) or event.id not in calls:
                continue
            if isinstance(event, ev.ToolResult):
                payload = event.payload
                data = payload.get("data") if isinstance(payload, dict) else payload
                outcomes.append(RecordedOutcome(calls[event.id], data, event.raw, False,
                                                tuple(changes.get(event.id, ()))))
            else:
                outcomes.append(RecordedOutcome(calls[event.id], event.error, event.raw, True))
    return turns, outcomes, servers


def _compactions_seen(store: Store, thread_id: str) -> list[list[ev.Event]]:
    """For each turn of the current branch, the compactions the original run had made when it first asked the
    model in that turn (those of the turns before it, and one its first request was compacted by)."""
    seen: list[ev.Event] = []
    out: list[list[ev.Event]] = []
    for _turn, events in store.path_events(thread_id):
        asked = False
        before_asking: list[ev.Event] = []
        for event in events:
            if event.nested:
                continue
            if isinstance(event, ev.ModelRequest | ev.Usage | ev.TextDelta | ev.Text | ev.ToolUse):
                asked = True
            elif isinstance(event, ev.ContextCompacted) and not asked:
                before_asking.append(event)
        out.append(seen + before_asking)
        seen = seen + [e for e in events if isinstance(e, ev.ContextCompacted) and not e.nested]
    return out


def _restore_compaction(robot: Robot, compactions: Sequence[ev.Event], recorded_robot: str,
                        restored: ev.ContextCompacted | None) -> ev.ContextCompacted | None:
    """``robot`` takes up the latest of ``compactions`` (the recorded robot's) unless it is ``restored`` already;
    the one in use. None recorded yet: the replay's own context manager decides, as it would."""
    from workspace.context import Compaction
    from workspace.persistence import latest_compaction

    latest = latest_compaction(list(compactions), recorded_robot)
    if latest is None or latest is restored:
        return restored
    robot.context_manager.restore(Compaction(latest.summary, latest.replaced_count))
    return latest


# -- the comparison ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a replayed turn differs from the record. ``kind``: ``tool`` (another tool, a call more or
    less), ``arguments``, ``answer``, ``change`` (another change proposed) or ``run`` (it ended otherwise).
    ``counts``: whether it is past the tolerance (it fails the replay)."""

    turn: int
    kind: str
    detail: str
    diff: str = ""
    counts: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "kind": self.kind, "detail": self.detail, "diff": self.diff,
                "counts": self.counts}


@dataclass(slots=True)
class NewCall:
    """A call the record does not hold: ``ran`` when it was run (``run_new_calls``)."""

    turn: int
    call: Call
    ran: bool

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, **self.call.to_dict(), "ran": self.ran}


@dataclass(slots=True)
class TurnComparison:
    """One turn: the record, the replay and where they differ."""

    index: int
    recorded: TurnRecord
    replayed: TurnRecord
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return any(d.counts for d in self.divergences)

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.index, "message": self.recorded.user_text, "recorded": self.recorded.to_dict(),
                "replayed": self.replayed.to_dict(), "diverged": self.diverged,
                "divergences": [d.to_dict() for d in self.divergences]}


@dataclass(slots=True)
class ReplayResult:
    """A replay compared with its record, turn by turn."""

    original_thread_id: str
    thread_id: str
    tolerance: str
    turns: list[TurnComparison]
    new_calls: list[NewCall]
    #: Calls answered from the record, and tool executions (new calls run: 0 unless ``run_new_calls``).
    served: int = 0
    executed: int = 0
    duration: float = 0.0

    @property
    def divergences(self) -> list[Divergence]:
        return [d for t in self.turns for d in t.divergences]

    @property
    def diverged(self) -> bool:
        """True when some divergence is past the tolerance."""
        return any(t.diverged for t in self.turns)

    def first_divergence(self) -> Divergence | None:
        return next((d for d in self.divergences if d.counts), None)

    def to_dict(self) -> dict[str, Any]:
        return {"original_thread_id": self.original_thread_id, "thread_id": self.thread_id,
                "tolerance": self.tolerance, "diverged": self.diverged, "served": self.served,
                "executed": self.executed, "duration": round(self.duration, 3),
                "new_calls": [c.to_dict() for c in self.new_calls], "turns": [t.to_dict() for t in self.turns]}


def compare_calls(index: int, recorded: Sequence[Call], replayed: Sequence[Call]) -> list[Divergence]:
    """The tool divergences of a turn, call by call in order."""
    out: list[Divergence] = []
    for i in range(max(len(recorded), len(replayed))):
        old = recorded[i] if i < len(recorded) else None
        new = replayed[i] if i < len(replayed) else None
        where = f"call {i + 1}"
        if old is None and new is not None:
            out.append(Divergence(index, "tool", f"{where}: the replay called {new.label()}, the record has no "
                                                 "more calls"))
        elif new is None and old is not None:
            out.append(Divergence(index, "tool", f"{where}: the record called {old.label()}, the replay made no "
                                                 "more calls"))
        elif old is not None and new is not None and old.name != new.name:
            out.append(Divergence(index, "tool", f"{where}: the replay called '{new.name}' where the record "
                                                 f"called '{old.name}'",
                                  unified_diff(_pretty(old.to_dict() | {"id": None}),
                                               _pretty(new.to_dict() | {"id": None}),
                                               old_name="recorded", new_name="replayed")))
        elif old is not None and new is not None and canonical(old.name, old.input) != canonical(new.name, new.input):
            out.append(Divergence(index, "arguments", f"{where}: '{new.name}' was called with other arguments",
                                  unified_diff(_pretty(old.input), _pretty(new.input),
                                               old_name="recorded", new_name="replayed")))
    return out


def compare_turn(index: int, recorded: TurnRecord, replayed: TurnRecord, tolerance: str) -> TurnComparison:
    """The divergences of one turn (the answer's is counted under ``exact`` only: ``judged`` decides it
    afterwards, see :func:`replay`)."""
    out = compare_calls(index, recorded.calls, replayed.calls)
    if recorded.status != replayed.status:
        out.append(Divergence(index, "run", f"the record's run {recorded.status}, the replay's {replayed.status}"))
    if recorded.changes != replayed.changes:
        out.append(Divergence(index, "change", "another change was proposed",
                              unified_diff(_pretty(recorded.changes), _pretty(replayed.changes),
                                           old_name="recorded", new_name="replayed")))
    if recorded.answer != replayed.answer:
        out.append(Divergence(index, "answer", "the answer differs",
                              unified_diff(_text_lines(recorded.answer), _text_lines(replayed.answer),
                                           old_name="recorded", new_name="replayed"),
                              counts=tolerance == "exact"))
    return TurnComparison(index, recorded, replayed, out)


# -- serving the record --------------------------------------------------------------------------------------
class _ReplayGate(ApprovalGate):
    """Recorded calls (and calls that will not run) need no approval; a new call that runs goes through the
    gate the replay was given."""

    def __init__(self, inner: ApprovalGate | None, recording: Recording, run_new_calls: bool) -> None:
        super().__init__(inner.policy if inner is not None else None, inner.ask_fn if inner is not None else None)
        self._inner = inner
        self._recording = recording
        self._run_new = run_new_calls

    async def adecide(self, request: ApprovalRequest) -> Action | ApprovalDecision:
        if self._inner is None or not self._run_new or self._recording.has(request.tool, request.input):
            return "allow"
        return await self._inner.adecide(request)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        assert self._inner is not None
        return await self._inner.ask(request)


class _Server:
    """The replay's tools: each answers from the record, refuses a new call, or (``run_new_calls``) runs it."""

    def __init__(self, recording: Recording, *, run_new_calls: bool) -> None:
        self.recording = recording
        self.run_new_calls = run_new_calls
        self.served = 0
        self.executed = 0
        #: The changes of the recorded calls served in the current turn (their ``change_proposed``).
        self.turn_changes: list[dict[str, Any]] = []
        self.turn_new: list[tuple[Call, bool]] = []

    def wrap(self, original: Tool | None, name: str, *, server: str | None = None) -> Tool:
        async def handler(arguments: Any, context: ToolContext) -> ToolOutput:
            call = Call(context.call_id, name, arguments)
            served = self.recording.take(name, arguments)
            if served is not None:
                self.served += 1
                self.turn_changes += [dict(c) for c in served.changes]
                return served.output()
            if not self.run_new_calls or original is None:
                self.turn_new.append((call, False))
                args = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
                return ToolOutput(NOT_RUN.format(name=name, args=args), is_error=True)
            self.turn_new.append((call, True))
            self.executed += 1
            return await original.invoke(arguments, context)

        if original is None:  # a tool of an MCP server: its schema is not known without starting the server
            return Tool(name, f"Replayed from the record ({server or 'a tool'} is not started during a replay).",
                        {"type": "object"}, handler, mcp=server)
        tool = Tool(original.name, original.description, original.parameters, handler, mcp=original.mcp,
                    strict=original.strict, annotations=original.annotations, title=original.title)
        return tool


# -- the replay ----------------------------------------------------------------------------------------------
def prompt_from_file(path: str | Path) -> str:
    """A system prompt from a file (its text, as it is)."""
    file = Path(path)
    try:
        text = read_text_bounded(file, ROBOT_FILE_BYTES, "prompt file")
    except FileLimitError as exc:
        raise ReplayError(str(exc)) from None
    except OSError as exc:
        raise ReplayError(f"Cannot read the prompt file {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ReplayError(f"The prompt file {file} is not UTF-8 text ({exc})") from exc
    if not text.strip():
        raise ReplayError(f"The prompt file {file} is empty: write the system prompt in it")
    return text


def use_prompt(robot: Robot, prompt: str) -> None:
    """Give ``robot`` this system prompt in place of its template and prompt."""
    robot.template = None
    robot.template_name = None
    robot.system_prompt = prompt


async def model_judge_answer(provider: Provider, question: str, recorded: str, replayed: str) -> bool:
    """Ask ``provider``'s model whether two answers to ``question`` mean the same (it answers SAME or DIFFERENT)."""
    from workspace.messages import TextMessage
    from workspace.providers.base import TextChunk

    system = ("You compare two answers to the same message. Reply with one word: SAME when they mean the same "
              "(the same facts, the same decision; wording may differ), DIFFERENT otherwise.")
    content = (f"The message:\n{question}\n\nThe first answer:\n{recorded}\n\nThe second answer:\n{replayed}\n\n"
               "SAME or DIFFERENT?")
    parts: list[str] = []
    async for chunk in provider.stream(system=system, messages=[TextMessage(role="user", content=content)],
                                       tools=[], settings={}):
        if isinstance(chunk, TextChunk):
            parts.append(chunk.text)
    words = "".join(parts).upper().replace(".", " ").split()
    return "SAME" in words and "DIFFERENT" not in words  # an answer that says neither is not a yes


def model_judge(provider: Provider) -> Judge:
    """A :data:`Judge` that asks ``provider``'s model."""

    async def judge(question: str, recorded: str, replayed: str) -> bool:
        return await model_judge_answer(provider, question, recorded, replayed)

    return judge


async def replay(
    store: Store,
    thread_id: str,
    robot: Robot,
    *,
    tolerance: str = "exact",
    run_new_calls: bool = False,
    approval: ApprovalGate | None = None,
    judge: Judge | None = None,
    folder: Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> ReplayResult:
    """Replay thread ``thread_id`` of ``store`` with ``robot`` (already given its model and prompt: see
    :func:`use_prompt`) and compare it with the record. ``approval``: the gate new calls go through when
    ``run_new_calls``; ``judge``: decides ``judged`` answers (required for that tolerance); ``options``: what
    is recorded of the replay's options in the new thread's metadata (the model, the prompt file...);
    ``folder``: the folder new calls work in (their file changes are proposed there, never written)."""
    from workspace.agent import AgentRun
    from workspace.robot_runs import prepare
    from workspace.robot_tools import resolve_tools
    from workspace.tools.manifest import ToolManifest

    if tolerance not in TOLERANCES:
        raise ReplayError(f"Unknown tolerance {tolerance!r}: use one of {', '.join(TOLERANCES)}")
    if tolerance == "judged" and judge is None:
        raise ReplayError("The 'judged' tolerance needs a judge: give the model that judges (--judge MODEL)")
    original = store.get_thread(thread_id)
    if original.kind != "robot":
        raise ReplayError(
            f"Thread {thread_id[:8]} is a network's thread, and a network's replay cannot be honest yet: its tasks run "
            "in the order and on the robots the network's routing chose, and a replay would route them again, so "
            "the turns would not compare. Replay the thread of one robot of the network instead (open that robot's "
            "thread), or run the network again on the same message and compare the results")
    recorded_turns, outcomes, servers = read_thread(store, thread_id)
    if not recorded_turns:
        raise ReplayError(f"Thread {thread_id[:8]} has no messages to replay")
    recording = Recording(outcomes)
    tool_server = _Server(recording, run_new_calls=run_new_calls)
    # The robot's own tools, each answered from the record; a recorded tool of an MCP server is offered
    # under its name. No MCP server is started, unless new calls are to run (one may be a server's).
    manifest, _pending = await resolve_tools(robot, run_mcp="inherit" if run_new_calls else "none")
    tools = [tool_server.wrap(t, t.name) for t in manifest]
    have = {t.name for t in tools}
    tools += [tool_server.wrap(None, name, server=servers.get(name)) for name in sorted(recording.tool_names - have)]
    gate = _ReplayGate(approval, recording, run_new_calls)

    started = time.monotonic()
    new = store.create_thread(robot=robot.name, title=f"Replay of {original.display_title}",
                              folder=str(folder) if folder is not None else original.folder, metadata={
                                  "replay_of": thread_id, "origin": original.metadata.get("origin") or "replay",
                                  "replay": {"tolerance": tolerance, "run_new_calls": run_new_calls,
                                             **dict(options or {})}})
    # One change set for the whole replay, in review mode: what new calls propose is kept, never written.
    changes: Any = None
    if folder is not None:
        from workspace.changes import ChangeSet

        changes = ChangeSet(folder, mode="review", thread_id=new.id)
    history: list[Message] = []
    comparisons: list[TurnComparison] = []
    new_calls: list[NewCall] = []
    parent: str | None = None
    compactions = _compactions_seen(store, thread_id)
    restored: ev.ContextCompacted | None = None
    index = 0
    try:
        for index, recorded in enumerate(recorded_turns, start=1):
            # The conversation as the original run saw it: its compaction's summary in place of what it replaced.
            restored = _restore_compaction(robot, compactions[index - 1], original.robot, restored)
            tool_server.turn_changes, tool_server.turn_new = [], []
            turn = store.add_turn(new.id, user_text=recorded.user_text, parent_turn_id=parent)
            parent = turn.id
            run_options: dict[str, Any] = {"history": history, "thread_id": new.id, "approval": gate}
            if folder is not None:
                run_options.update(folder=folder, changes=changes)
            refs = store.turn_attachments([recorded.turn_id]).get(recorded.turn_id) if recorded.turn_id else None
            if refs:  # the files and images sent with the message, from the thread's blobs
                run_options["attachments"] = store.load_attachments(refs)
            spec = prepare(robot, recorded.user_text, run_options)

            async def load(tools: list[Tool] = tools) -> ToolManifest:
                return ToolManifest(list(tools))

            spec.tools_loader = load
            run = RecordedRun(AgentRun(spec), store=store, thread_id=new.id, turn_id=turn.id)
            events = [event async for event in run]
            replayed = turn_record(recorded.user_text, events, run_id=run.run_id)
            replayed.changes = tool_server.turn_changes + replayed.changes
            comparison = compare_turn(index, recorded, replayed, tolerance)
            for call, ran in tool_server.turn_new:
                new_calls.append(NewCall(index, call, ran))
            if tolerance == "judged" and judge is not None:
                for i, divergence in enumerate(comparison.divergences):
                    if divergence.kind == "answer":
                        same = await judge(recorded.user_text, recorded.answer, replayed.answer)
                        comparison.divergences[i] = Divergence(
                            index, "answer", "the answer differs and the judge says it means the same" if same
                            else "the answer differs and the judge says it means something else",
                            divergence.diff, counts=not same)
            comparisons.append(comparison)
    except asyncio.CancelledError:
        # Stopped mid-turn (a recorded call served, the model asked): nothing half-written is kept.
        store.purge_thread(new.id)
        raise asyncio.CancelledError(f"The replay was cancelled at turn {index} of {len(recorded_turns)}; "
                                     "its unfinished thread was removed") from None
    return ReplayResult(thread_id, new.id, tolerance, comparisons, new_calls, served=tool_server.served,
                        executed=tool_server.executed, duration=time.monotonic() - started)


# -- run a recorded call again -------------------------------------------------------------------------------
@dataclass(slots=True)
class RerunResult:
    """A recorded tool call run again: the call as recorded, the arguments it ran with, both results
    (``{"data": ...}`` or ``{"error": ...}``) and their diff (empty: the same)."""

    call: Call
    arguments: Any
    old: Any
    new: Any
    raw: Any = None
    duration: float = 0.0

    @property
    def diff(self) -> str:
        return result_diff(self.old, self.new)

    @property
    def changed(self) -> bool:
        return canonical("", self.old) != canonical("", self.new)

    def to_dict(self) -> dict[str, Any]:
        return {"call": self.call.to_dict(), "arguments": self.arguments, "old": self.old, "new": self.new,
                "changed": self.changed, "diff": self.diff, "duration": round(self.duration, 3)}


def result_diff(old: Any, new: Any, *, old_name: str = "recorded", new_name: str = "now") -> str:
    """A unified diff of two tool results' pretty JSON (empty when they are the same)."""
    return unified_diff(_pretty(old), _pretty(new), old_name=old_name, new_name=new_name)


def find_call(store: Store, thread_id: str, call_id: str) -> RecordedOutcome:
    """The recorded call ``call_id`` of the thread (or the one call whose id starts with it), with its outcome."""
    _turns, outcomes, _servers = read_thread(store, thread_id)
    exact = [o for o in outcomes if o.call.id == call_id]
    found = exact or [o for o in outcomes if call_id and o.call.id.startswith(call_id)]
    if not found:
        listed = ", ".join(f"{o.call.id} ({o.call.name})" for o in outcomes[:10]) or "none"
        raise ReplayError(f"Thread {thread_id[:8]} has no tool call {call_id!r} (its calls: {listed}; "
                          "`robotlab threads show ID --json` lists them)")
    if len({o.call.id for o in found}) > 1:
        raise ReplayError(f"{call_id!r} matches more than one tool call; give more of the id")
    return found[0]


async def rerun_call(
    store: Store,
    thread_id: str,
    call_id: str,
    robot: Robot,
    *,
    arguments: Any = None,
    approval: ApprovalGate | None = None,
    folder: Path | None = None,
) -> RerunResult:
    """Run the recorded tool call ``call_id`` of the thread again, without the model: with ``arguments``
    (None: the recorded ones), through ``approval`` (the policy, then the person) as any call. The tool is
    found among ``robot``'s tools (its MCP servers are started if the tool is theirs); a memory tool uses
    ``robot.memory``."""
    from workspace.robot_tools import resolve_tools

    recorded = find_call(store, thread_id, call_id)
    args = recorded.call.input if arguments is None else arguments
    if not isinstance(args, dict):
        raise ReplayError(f"The arguments must be a JSON object, not {type(args).__name__}: give --args '{{...}}'")
    manifest, _pending = await resolve_tools(robot)
    tool = manifest.get(recorded.call.name)
    if tool is None:
        available = ", ".join(manifest.names) or "none"
        raise ReplayError(f"Robot '{robot.name}' has no tool '{recorded.call.name}' now (its tools: {available}); "
                          "give the robot that has it (--robot NAME)")
    where = folder or robot.folder
    # A file tool proposes its change for review in the folder (nothing is written), as in a thread.
    changes: Any = None
    if where is not None:
        from workspace.changes import ChangeSet

        changes = ChangeSet(where, mode="review", thread_id=thread_id)
    if approval is not None:
        request = ApprovalRequest(call_id=f"rerun-{recorded.call.id}", robot=robot.name, tool=tool.name, input=args,
                                  server=tool.mcp, annotations=dict(tool.annotations), thread_id=thread_id,
                                  effects=await _effects(tool, args, where, changes))
        verdict = await approval.adecide(request)
        if isinstance(verdict, ApprovalDecision):
            decision = verdict
        elif verdict == "allow":
            decision = ApprovalDecision(approved=True, scope="policy")
        elif verdict == "deny":
            decision = ApprovalDecision(approved=False, scope="policy",
                                        reason=f"The approval policy denies '{tool.name}'.")
        else:
            decision = await approval.ask(request)
        if not decision.approved:
            return RerunResult(recorded.call, args, recorded.value(),
                               {"error": f"Denied: {decision.reason or 'no reason given'}"})
        if decision.input is not None:
            args = decision.input
    context = ToolContext(robot=robot.name, call_id=f"rerun-{recorded.call.id}", folder=where, changes=changes,
                          memory=robot.memory, extras={"provider": None, "approval": approval, "tool": tool.name, "thread_id": thread_id})
    started = time.monotonic()
    output = await tool.invoke(args, context)
    new = {"error": output.data} if output.is_error else {"data": output.data}
    return RerunResult(recorded.call, args, recorded.value(), new, raw=output.raw,
                       duration=time.monotonic() - started)


async def _effects(tool: Tool, arguments: Any, folder: Path | None, changes: Any) -> tuple[FileEffect, ...]:
    """What the call does, for the approval policy's rules by effect (as the agent loop decides it)."""
    import asyncio

    from workspace.agent.effects import EFFECT_TOOLS, file_effects
    from workspace.tools.script import ScriptTool

    if tool.mcp is None and tool.name in EFFECT_TOOLS:
        return await asyncio.to_thread(file_effects, tool.name, arguments, folder=folder, changes=changes)
    if isinstance(tool, ScriptTool) and isinstance(arguments, dict):
        return (FileEffect(kind="run", path=".", command=tool.command(arguments, folder)),)
    return ()
