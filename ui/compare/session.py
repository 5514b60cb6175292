"""A comparison in the window, Qt-free: the candidates' threads, their runs, the candidate kept, the verdict.

Each candidate is a thread of its own, linked as the command line's are (metadata ``comparison``, ``candidate``,
``candidate_label``, ``candidates``; :mod:`workspace.cli.compare`), so each is an ordinary thread afterwards.
A message goes to every candidate still in the comparison at once (:func:`workspace.session.compare.run_candidates`:
each event carries its ``candidate``); :meth:`CompareSession.keep` ends the comparison with one of them, which
the thread goes on with. With a folder each candidate proposes on its own change set (review mode: nothing is
written), and :meth:`CompareSession.comparison` is the :class:`~workspace.session.compare.Comparison` the
combined review takes hunks from (``comparison.take``: one atomic apply, undoable as one).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace import events as ev
    from workspace.session import RecordedRun, ThreadSession, Workspace
    from workspace.session.compare import CandidateResult, Comparison


log = logging.getLogger("ui.compare")


@dataclass(frozen=True, slots=True)
class CandidateSpec:
    """One candidate as the window's picker gives it: a robot by name and, optionally, another model."""

    robot: str
    model: str | None = None
    api_base: str | None = None


class CompareSession:
    """The candidates of one comparison and their threads (made by :meth:`start`)."""

    def __init__(self, workspace: Workspace, specs: Sequence[CandidateSpec]) -> None:
        from workspace.session.compare import check_count

        check_count(len(specs))
        if workspace.folder is not None and str(workspace.config.get("review.mode", "review")) != "review":
            raise ValueError("A comparison keeps every candidate's changes for review, but review.mode is "
                             f"{workspace.config.get('review.mode')!r}: set it to 'review' (Settings → Review) "
                             "to compare in this folder")
        self.workspace = workspace
        self.specs = list(specs)
        self.id = uuid.uuid4().hex[:12]
        self.sessions: list[ThreadSession] = []
        self.labels: list[str] = []
        #: Each candidate's thread metadata as read when the comparison reopened (its figures, the verdict).
        self.saved: list[dict[str, Any]] = []
        #: The candidates the next message goes to (all, until one is kept).
        self.active: list[int] = []
        self.message = ""
        #: The candidate the comparison ended with ("Keep this one"), else None.
        self.kept: int | None = None
        self._runs: list[RecordedRun] = []
        #: Each candidate of the last message (or ↻) and its last verify task before its run started.
        self._verifies_before: dict[int, Any] = {}
        #: The files of the proposal the last ↻ discarded (its candidate answers again from the folder as it is).
        self.superseded: list[str] = []

    def start(self) -> list[str]:
        """Make the candidates' threads (each with its robot and model); returns their labels."""
        from workspace.session.compare import labels

        sessions = [self.workspace.new_thread(spec.robot) for spec in self.specs]
        for session, spec in zip(sessions, self.specs, strict=True):
            if spec.model:
                session.set_model(spec.model, api_base=spec.api_base)
        robots = [spec.robot for spec in self.specs]
        names = []
        for session, spec in zip(sessions, self.specs, strict=True):
            model = session.robot.model
            if robots.count(spec.robot) == 1:  # a robot of its own: its name
                names.append(spec.robot)
            elif len(set(robots)) == 1:
                names.append(model or spec.robot)  # one robot with several models: the models
            else:
                names.append(f"{spec.robot} · {model}" if model else spec.robot)
        self.labels = labels(names)
        store = self.workspace.store
        for index, session in enumerate(sessions):
            store.update_thread_metadata(session.thread_id, origin="window", comparison=self.id, candidate=index,
                                         candidate_label=self.labels[index], candidates=len(sessions))
        self.sessions, self.active = sessions, list(range(len(sessions)))
        return self.labels

    def discard_unsent(self) -> int:
        """Remove the candidates' threads that hold nothing yet (the comparison closed before its first message:
        they would stay in the thread list as empty "Untitled thread" rows), but the one kept ("Keep this one":
        it opens in the chat); returns how many went."""
        store = self.workspace.store
        gone = 0
        for index, session in enumerate(self.sessions):
            if index != self.kept and not store.turns(session.thread_id):
                store.purge_thread(session.thread_id)
                gone += 1
        return gone

    @classmethod
    def reopen(cls, workspace: Workspace, thread_id: str) -> CompareSession | None:
        """The comparison thread ``thread_id`` is a candidate of, its candidates' threads opened again (their
        pending changes as kept), for the combined review; None for a thread that is no candidate."""
        info = workspace.store.get_thread(thread_id)
        comparison = info.metadata.get("comparison")
        if not comparison:
            return None
        linked = sorted((t for t in workspace.store.list_threads() if t.metadata.get("comparison") == comparison),
                        key=lambda t: int(t.metadata.get("candidate") or 0))
        if len(linked) < 2:
            return None
        self = cls.__new__(cls)
        self.workspace, self.specs, self.id, self.message, self._runs = workspace, [], str(comparison), "", []
        self._verifies_before, self.superseded = {}, []
        self.sessions = [workspace.open_thread(t.id) for t in linked]
        self.labels = [str(t.metadata.get("candidate_label") or t.robot) for t in linked]
        kept = [i for i, t in enumerate(linked) if t.metadata.get("kept")]
        self.kept = kept[0] if kept else None
        self.active = kept[:1] or list(range(len(linked)))
        self.saved = [dict(t.metadata) for t in linked]
        return self

    @property
    def thread_ids(self) -> list[str]:
        return [s.thread_id for s in self.sessions]

    @property
    def running(self) -> bool:
        return any(not run.done for run in self._runs)

    async def send(self, text: str, *, on_event: Callable[[ev.Event], object] | None = None,
                   **options: Any) -> list[CandidateResult]:
        """Send ``text`` to every candidate still in the comparison, at once; ``on_event`` gets every event as it
        comes (with its ``candidate``). Returns the candidates' results (answer, tokens, time to first token)."""
        return await self.follow(self.begin(text, **options), on_event=on_event)

    def begin(self, text: str, **options: Any) -> list[tuple[CandidateResult, RecordedRun]]:
        """Send ``text`` to every candidate still in the comparison: their runs started (each with its turn), for
        :meth:`follow`."""
        if not self.sessions:
            self.start()
        self._not_running("sending another message")
        self.message = text
        started = [(self._result(index), self.sessions[index].send(text, candidate=index, **options))
                   for index in self.active]
        self._runs = [run for _, run in started]
        return started

    def regenerate(self, index: int, turn_id: str) -> list[tuple[CandidateResult, RecordedRun]]:
        """Ask candidate ``index`` again for its answer to turn ``turn_id`` (a new branch of its thread, as
        ↻ does in a chat); the other candidates keep theirs. Returns the run started, for :meth:`follow`.

        The candidate answers again from the folder as it is: the proposal of its that waits for review and that
        the replaced answer made is discarded first (its files in :attr:`superseded`; see
        :meth:`ThreadSession.regenerate <workspace.session.thread.ThreadSession.regenerate>`)."""
        if index not in self.active:
            raise ValueError(f"Candidate {index + 1} is no longer in the comparison")
        self._not_running("asking again")
        session = self.sessions[index]
        started = [(self._result(index), session.regenerate(turn_id, candidate=index))]
        self.superseded = session.superseded
        self._runs = [run for _, run in started]
        return started

    async def follow(self, started: Sequence[tuple[CandidateResult, RecordedRun]], *,
                     on_event: Callable[[ev.Event], object] | None = None) -> list[CandidateResult]:
        """The runs ``started`` to their ends (``on_event``: every event as it comes); their results. Each
        candidate's verify task of before is kept: :meth:`verify_proposals` tells the ones its run started."""
        from workspace.session.compare import run_candidates

        self._runs = [run for _, run in started]
        self._verifies_before = {result.index: self.sessions[result.index].last_verify for result, _ in started}
        results = await run_candidates(started, on_event=on_event)
        for run in self._runs:
            await run.wait()
        return results

    def _not_running(self, what: str) -> None:
        if self.running:
            raise RuntimeError(f"The candidates are still answering: stop them (Esc) before {what}")

    def _result(self, index: int) -> CandidateResult:
        from workspace.session.compare import CandidateResult

        session = self.sessions[index]
        return CandidateResult(index=index, label=self.labels[index], robot=session.robot.name,
                               model=session.robot.model, thread_id=session.thread_id)

    async def verify_proposals(self) -> dict[int, ev.VerifyFinished]:
        """Each candidate's ✓ or ✗ on its own proposal, for the candidates of the last message (or ↻): the
        verify command in force (``review.verify``, or the robot's) on its proposal, each in its sandbox on its
        own layer over the folder, at once. A candidate whose run's end started that verify already (the
        window's ``auto_verify``) gets that one's result: the command runs once per candidate. None for a
        candidate that proposed nothing, with no verify command, or with no sandbox on this machine."""
        import asyncio

        from workspace.isolation import IsolationError, SandboxUnavailable

        async def one(index: int) -> tuple[int, ev.VerifyFinished | None]:
            session = self.sessions[index]
            started = session.last_verify
            if started is not None and started is not self._verifies_before.get(index):
                await asyncio.wait({started})  # its run's own verify: its result, not a second run
                if not started.cancelled():
                    return index, started.result()
            try:
                return index, await session.verify_changes("proposed")
            except (SandboxUnavailable, IsolationError, OSError) as exc:  # no sandbox here: no mark rather than a wrong one
                log.info("verify of candidate %d did not run: %s", index, exc)
                return index, None

        done = await asyncio.gather(*(one(i) for i in self._verifies_before))
        return {index: event for index, event in done if event is not None}

    def stop(self) -> None:
        """Stop every candidate's run."""
        for run in self._runs:
            if not run.done:
                run.cancel()

    def keep(self, index: int) -> ThreadSession:
        """End the comparison with candidate ``index``: the next messages go to its thread alone."""
        if not 0 <= index < len(self.sessions):
            raise ValueError(f"There is no candidate {index}: keep one of 0 to {len(self.sessions) - 1}")
        self.active, self.kept = [index], index
        self.workspace.store.update_thread_metadata(self.sessions[index].thread_id, kept=True)
        return self.sessions[index]

    def keep_stats(self, stats: Sequence[dict[str, Any]]) -> None:
        """Keep each candidate's column figures with its thread (``compare_stats``): they show again when the
        comparison reopens (after switching threads, or a restart)."""
        store = self.workspace.store
        for session, figures in zip(self.sessions, stats, strict=False):
            store.update_thread_metadata(session.thread_id, compare_stats=figures)

    def verdict(self, winner: int, reason: str = "") -> dict[str, Any]:
        """Keep the person's verdict (the better answer, and why) with every candidate's thread."""
        from workspace.session.compare import record_verdict

        return record_verdict(self.workspace.store, self.thread_ids, winner=winner, reason=reason)

    def comparison(self) -> Comparison:
        """The candidates and their pending change sets, for the combined review (``take``)."""
        from workspace.session.compare import CandidateResult, Comparison

        candidates = [CandidateResult(index=i, label=self.labels[i], robot=s.robot.name, model=s.robot.model,
                                      changes=s.changes, thread_id=s.thread_id)
                      for i, s in enumerate(self.sessions)]
        return Comparison(id=self.id, message=self.message, folder=self.workspace.folder, candidates=candidates)
