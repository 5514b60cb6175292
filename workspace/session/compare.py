"""Many robots at once: one message to 2-4 candidates (other models, other robots, or one robot N times).

>>> comparison = workspace.compare("Fix the failing test", [Candidate("coder", model="model-a"),
...                                Candidate("coder", model="model-b")], folder="project")
>>> for c in comparison.candidates:
...     print(c.label, c.result.text if c.result else c.error, c.usage.total_tokens, c.ttft, c.duration)
>>> [h.id for h in comparison.hunks()]                # every pending hunk: c<candidate>.<hunk id>
>>> applied = await comparison.take(["c0.f1.h1", "c1.f1.h2"])   # one atomic apply, undoable as one
>>> await comparison.take(["c0.f1.h1", "c1.f1.h1"], merges={"c0.f1.h1": "x = 3\n"})  # overlapping: your lines

The candidates run at the same time, each on its own :class:`~workspace.changes.ChangeSet` (its own proposed
changes: its file tools read them, its commands and verify see only its own layer over the folder), so none
sees another's changes and nothing touches the folder before :meth:`Comparison.take` (or
:func:`apply_hunks`). Every event of a candidate's run carries ``candidate`` (0, 1, ...). Requests to one
server are bounded by the provider's concurrency (``llm.max_concurrent_requests``: a server on this machine
takes one at a time unless configured, so local candidates queue; hosted ones go at once).

The command line's ``robotlab run ROBOT "..." --compare MODEL,MODEL`` records each candidate as a thread
of its own, linked by the ``comparison`` id in the threads' metadata (:mod:`workspace.cli.compare`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.result import Usage

if TYPE_CHECKING:
    from workspace.changes import ApplyResult, ChangeSet
    from workspace.changes.combine import CandidateChanges, TakenHunk
    from workspace.config import Config
    from workspace.persistence import Store
    from workspace.result import RobotResult
    from workspace.robot import Robot
    from workspace.session import ThreadSession

__all__ = ["MAX_CANDIDATES", "Candidate", "CandidateResult", "CombinedApply", "Comparison", "acompare", "apply_hunks",
           "compare", "record_settled", "record_verdict", "run_candidates"]

#: How many candidates one comparison may have (and at least two).
MAX_CANDIDATES = 4


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate: a robot (a :class:`~workspace.robot.Robot`, or a name or robot file) and, for a robot given
    by name or file, another ``model`` (and its server ``api_base``). ``label``: its name in the output (default:
    the model for a model candidate, else the robot's name)."""

    robot: Robot | str
    model: str | None = None
    api_base: str | None = None
    label: str | None = None


@dataclass(slots=True)
class CandidateResult:
    """What one candidate did: its answer (``result``: None when it failed, ``error`` says why), its proposed
    changes, its tokens, the seconds to its first token (``ttft``) and in all (``duration``)."""

    index: int
    label: str
    robot: str
    model: str | None
    result: RobotResult | None = None
    changes: ChangeSet | None = None
    usage: Usage = field(default_factory=Usage)
    ttft: float | None = None
    duration: float = 0.0
    #: "finished", "failed" or "cancelled".
    status: str = "finished"
    error: str | None = None
    #: The thread the candidate was recorded in (the command line's candidates), else None.
    thread_id: str | None = None

    @property
    def text(self) -> str:
        """The candidate's answer (empty when it has none)."""
        content = self.result.last_text_content if self.result is not None else None
        return content if isinstance(content, str) else ""


@dataclass(slots=True)
class CombinedApply:
    """The outcome of taking hunks across candidates: the combined set (its history undoes the apply as one),
    the apply's result, the hunks taken and the verify that ran before (None: no verify command)."""

    changes: ChangeSet
    result: ApplyResult
    taken: list[TakenHunk]
    verify: ev.VerifyFinished | None = None

    @property
    def ok(self) -> bool:
        return self.result.ok


@dataclass(slots=True)
class Comparison:
    """The candidates of one message, in order (``candidates[i].index == i``)."""

    id: str
    message: str
    folder: Path | None
    candidates: list[CandidateResult]

    def sources(self) -> list[CandidateChanges]:
        """The candidates' change sets, for :mod:`workspace.changes.combine`."""
        from workspace.changes.combine import CandidateChanges

        return [CandidateChanges(c.index, c.label, c.changes) for c in self.candidates if c.changes is not None]

    def hunks(self) -> list[TakenHunk]:
        """Every pending hunk of every candidate (ids ``c<candidate>.<hunk id>``)."""
        from workspace.changes.combine import pending_hunks

        return pending_hunks(self.sources())

    async def take(self, hunk_ids: Iterable[str], *, verify: str | None = None, thread_id: str | None = None,
                   if_verify_fails: str = "refuse", merges: Mapping[str, str] | None = None) -> CombinedApply:
        """Apply exactly ``hunk_ids`` of any candidates, as one atomic set (see :func:`apply_hunks`)."""
        return await apply_hunks(self.sources(), hunk_ids, verify=verify, thread_id=thread_id,
                                 if_verify_fails=if_verify_fails, merges=merges)


async def apply_hunks(sources: Sequence[CandidateChanges], hunk_ids: Iterable[str], *, verify: str | None = None,
                      thread_id: str | None = None, if_verify_fails: str = "refuse",
                      merges: Mapping[str, str] | None = None) -> CombinedApply:
    """Take ``hunk_ids`` across the candidates' change sets into one combined set and apply it atomically.

    :class:`~workspace.changes.combine.OverlapError` (nothing written) when two taken hunks of different
    candidates touch the same lines, unless a merge covers them: ``merges`` maps a hunk id to the text a person
    wrote in place of it and the taken hunks it overlaps (:func:`~workspace.changes.combine.merge_groups`), the
    text that is applied there. With a ``verify`` command it first runs in the sandbox on the combined
    set and, when it fails, :class:`~workspace.session.verify.VerifyFailed` is raised and nothing is written
    (unless ``if_verify_fails`` is "apply"). A conflict (a file changed on disk since the proposal) writes
    nothing either: the result says so. After a successful apply each candidate's own set is settled (nothing
    more written) and its robot is told, with its next message, which hunks of whose were taken. The apply is
    one entry of the history of ``thread_id`` (the kept thread): ``ChangeHistory.undo`` restores the folder.
    """
    from workspace.changes.combine import combine, settle_sources
    from workspace.session.verify import VerifyFailed, run_verify

    if if_verify_fails not in ("refuse", "apply"):
        raise ValueError(f"if_verify_fails is 'refuse' or 'apply', not {if_verify_fails!r}")
    combined, taken = combine(sources, hunk_ids, thread_id=thread_id, merges=merges)
    checked = None
    if verify:
        checked = await run_verify(verify, combined, subset="accepted")
        if not checked.passed and if_verify_fails == "refuse":
            raise VerifyFailed(checked)
    result = await asyncio.to_thread(combined.apply)
    if result.ok:
        settle_sources(sources, taken)
    return CombinedApply(changes=combined, result=result, taken=taken, verify=checked)


def record_settled(sessions: Mapping[str, ThreadSession], sources: Sequence[CandidateChanges], kept: str | None,
                   done: CombinedApply) -> dict[str, ev.ChangeDecided]:
    """After a combined apply: keep each candidate's settled set (its robot hears the outcome next) and a
    ``change_decided`` event in each thread (the kept one's with the combined apply's checkpoint), so its change
    card says what was decided, now and when the thread opens again. ``sessions``: the candidates' threads by
    id. Returns the events by thread id."""
    import contextlib

    from workspace.persistence import StoreError

    out: dict[str, ev.ChangeDecided] = {}
    for source in sources:
        thread_id = source.changes.thread_id
        session = sessions.get(thread_id) if thread_id is not None else None
        if thread_id is None or session is None:
            continue
        session.save_changes()
        event = source.changes.decided_event(checkpoint_id=done.result.checkpoint_id if thread_id == kept else None)
        out[thread_id] = event
        turn_id = session.thread.current_turn_id
        if turn_id is not None:
            with contextlib.suppress(StoreError):
                session.store.append_event(thread_id, turn_id, event)
    return out


# -- running the candidates ---------------------------------------------------------------------------------
async def run_candidates(started: Sequence[tuple[CandidateResult, AsyncIterable[ev.Event]]], *,
                         on_event: Callable[[ev.Event], object] | None = None) -> list[CandidateResult]:
    """Consume the candidates' runs at the same time, filling each :class:`CandidateResult` (answer, tokens,
    time to the first token, duration, status) from its events; ``on_event`` gets every event as it comes
    (each carries its ``candidate``). Returns the results in order."""
    async def consume(result: CandidateResult, run: AsyncIterable[ev.Event], begun: float) -> None:
        try:
            async for event in run:
                if result.ttft is None and isinstance(event, ev.TextDelta | ev.ToolUse) and not event.nested:
                    result.ttft = round(time.monotonic() - begun, 4)
                if on_event is not None:
                    on_event(event)
                if event.terminal and not event.nested:
                    _ended(result, event)
        except Exception as exc:  # one candidate's failure never stops the others
            result.status, result.error = "failed", str(exc) or type(exc).__name__
        result.duration = round(time.monotonic() - begun, 4)

    begun = time.monotonic()
    await asyncio.gather(*(consume(result, run, begun) for result, run in started))
    return [result for result, _ in started]


def _ended(result: CandidateResult, event: ev.Event) -> None:
    if isinstance(event, ev.RunFinished):
        found = event.result
    elif isinstance(event, ev.RunFailed):
        result.status, result.error, found = "failed", event.error, event.partial
    elif isinstance(event, ev.RunCancelled):
        result.status, result.error, found = "cancelled", event.reason, event.partial
    else:
        return
    from workspace.result import RobotResult

    if isinstance(found, RobotResult):
        result.usage = found.usage or Usage()
        if isinstance(event, ev.RunFinished):
            result.result = found


def labels(names: Sequence[str]) -> list[str]:
    """Unique names: a name given twice or more is numbered (``coder #1``, ``coder #2``)."""
    counts = {n: names.count(n) for n in names}
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if counts[name] > 1:
            seen[name] = seen.get(name, 0) + 1
            out.append(f"{name} #{seen[name]}")
        else:
            out.append(name)
    return out


def check_count(count: int) -> None:
    if not 2 <= count <= MAX_CANDIDATES:
        raise ValueError(f"A comparison has 2 to {MAX_CANDIDATES} candidates, not {count}; give between 2 and "
                         f"{MAX_CANDIDATES} models or robots")


def load_candidates(candidates: Sequence[Candidate | Robot | str], *, folder: Path | None = None,
                    config: Config | None = None) -> list[Robot]:
    """The candidates' robots, each an object of its own (a robot given by name is loaded once per candidate)."""
    from workspace.robot import Robot

    check_count(len(candidates))
    robots: list[Robot] = []
    for given in candidates:
        spec = given if isinstance(given, Candidate) else Candidate(given)
        if isinstance(spec.robot, Robot):
            if spec.model is not None or spec.api_base is not None:
                raise ValueError(f"Candidate {spec.robot.name!r}: give the robot by name or file to run it with "
                                 "another model (Candidate('coder', model=...)), or build that Robot yourself")
            if any(r is spec.robot for r in robots):
                raise ValueError(f"The Robot object {spec.robot.name!r} is given twice; each candidate needs its "
                                 "own (give the robot by name to run it several times)")
            robots.append(spec.robot)
            continue
        from workspace.catalog import load_robot

        options: dict[str, Any] = {"config": config} if config is not None else {}
        if spec.model:
            options["model"] = spec.model
        if spec.api_base:
            options["api_base"] = spec.api_base
        robots.append(load_robot(spec.robot, folder=folder, **options))
    return robots


def candidate_labels(candidates: Sequence[Candidate | Robot | str], robots: Sequence[Robot]) -> list[str]:
    """Each candidate's name: its ``label``, else its model when the robots are all the same, else its robot."""
    same_robot = len({r.name for r in robots}) == 1
    names = []
    for given, robot in zip(candidates, robots, strict=True):
        label = given.label if isinstance(given, Candidate) else None
        names.append(label or (robot.model or robot.name if same_robot else robot.name))
    return labels(names)


async def acompare(message: str, candidates: Sequence[Candidate | Robot | str], *, folder: str | Path | None = None,
                   config: Config | None = None, on_event: Callable[[ev.Event], object] | None = None,
                   **options: Any) -> Comparison:
    """Run 2-4 candidates on ``message`` at the same time and return their results and change sets.

    ``candidates``: :class:`Candidate` (a robot by name or file, with another model), a
    :class:`~workspace.robot.Robot` (used as it is: one object per candidate) or a robot's name or file.
    ``folder``: the folder the candidates work on; each gets its own change set in review mode (whatever
    ``review.mode`` says: nothing is written before :meth:`Comparison.take`). ``on_event``: every event as it
    comes, with its ``candidate``. ``options``: run options for every candidate (``max_turns``,
    ``approval``, template parameters: see :meth:`Robot.stream`).
    """
    from workspace.changes import ChangeSet

    root = Path(folder).resolve() if folder is not None else None
    if root is not None and not root.is_dir():
        raise ValueError(f"folder {folder}: no such folder")
    robots = load_candidates(candidates, folder=root, config=config)
    names = candidate_labels(candidates, robots)
    started: list[tuple[CandidateResult, AsyncIterable[ev.Event]]] = []
    for index, (robot, label) in enumerate(zip(robots, names, strict=True)):
        result = CandidateResult(index=index, label=label, robot=robot.name, model=robot.model)
        run_options = dict(options, candidate=index)
        if root is not None:
            result.changes = ChangeSet(root, mode="review")
            run_options.update(folder=root, changes=result.changes)
        started.append((result, robot.stream(message, **run_options)))
    results = await run_candidates(started, on_event=on_event)
    return Comparison(id=uuid.uuid4().hex[:12], message=message, folder=root, candidates=results)


def compare(message: str, candidates: Sequence[Candidate | Robot | str], *, folder: str | Path | None = None,
            config: Config | None = None, on_event: Callable[[ev.Event], object] | None = None,
            **options: Any) -> Comparison:
    """:func:`acompare` from synchronous code (not inside a running event loop)."""
    return asyncio.run(acompare(message, candidates, folder=folder, config=config, on_event=on_event, **options))


# -- the verdict ------------------------------------------------------------------------------------------------
def record_verdict(store: Store, thread_ids: Sequence[str], *, winner: int, reason: str = "") -> dict[str, Any]:
    """Keep a person's verdict on a comparison with each of its candidates' threads (``thread_ids``, in candidate
    order): the ``verdict`` key of the threads' metadata, ``{"winner": 1, "label": "model-b", "reason": "..."}``;
    exports of those threads include it. Returns the verdict kept."""
    if not 0 <= winner < len(thread_ids):
        raise ValueError(f"The verdict names candidate {winner}, but the comparison has {len(thread_ids)} "
                         f"(0 to {len(thread_ids) - 1}); mark one of its columns")
    info = store.get_thread(thread_ids[winner])
    label = str(info.metadata.get("candidate_label") or info.robot)
    verdict: dict[str, Any] = {"winner": winner, "label": label}
    if reason.strip():
        verdict["reason"] = reason.strip()
    for thread_id in thread_ids:
        store.update_thread_metadata(thread_id, verdict=verdict)
    return verdict

