"""One conversation: :class:`ThreadSession` (send, fork, switch branches, compact, change the model).

Its parts: :mod:`~workspace.session.thread_state` (the thread, its robot and model, its approval gate),
:mod:`~workspace.session.thread_history` (the conversation, the transcript, compaction),
:mod:`~workspace.session.thread_changes` (proposed changes, verify, apply, undo)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.persistence import StoreError, TurnInfo
from workspace.session.recording import RecordedRun, title_from
from workspace.session.thread_changes import ThreadChanges
from workspace.session.thread_history import ThreadHistory, _network_robots, _restore_compaction
from workspace.session.thread_state import thread_server

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

    from workspace.agent import EventRun
    from workspace.attachments import Attachment
    from workspace.changes import FileChange
    from workspace.delegation import DelegationFuture
    from workspace.network import Network
    from workspace.robot import Robot


def _names(files: list[str]) -> str:
    return ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def superseded_note(who: str, files: list[str], *, kept: list[str] | None = None,
                    mixed: list[str] | None = None) -> str:
    """What a person is told when ↻ or edit & resend discarded ``who``'s proposal to ``files``; ``kept``: the files
    of an earlier answer's proposal in the same set, still waiting for review; ``mixed``: those of ``files`` an
    earlier answer had changed too (discarded with the replaced answer's changes)."""
    note = f"{who}'s proposed changes to {_names(files)} were discarded: it answers again from the folder as it is."
    if mixed:
        note += f" {_names(mixed)} also had an earlier answer's changes, discarded with them."
    if kept:
        note += f" An earlier answer's changes to {_names(kept)} still wait for review."
    return note


class ThreadSession(ThreadHistory, ThreadChanges):
    """One conversation thread: send messages, fork, switch branches, read the transcript.

    Its state (the thread, the robot and its model) is :class:`~workspace.session.thread_state.ThreadState`,
    the conversation and the context window :class:`~workspace.session.thread_history.ThreadHistory`, the
    proposed changes and verify :class:`~workspace.session.thread_changes.ThreadChanges`."""

    # -- running ------------------------------------------------------------------------------------
    def send(self, text: str, *, attachments: Iterable[Attachment | str | os.PathLike[str]] | None = None,
             **options: Any) -> RecordedRun:
        """Send a message after the current turn; iterate the returned run for its events.

        ``attachments``: files, images and MCP resources sent with the message
        (:class:`~workspace.attachments.Attachment` objects, or paths inside the opened folder); their
        content is stored once in the thread's database, and sent again with the conversation.
        ``options`` are more run options for ``Robot.stream`` / ``Network.stream`` (template
        parameters, ``max_turns``: values of any kind, as the robot's template takes them); the thread's
        own (approval, folder, changes) are set here.
        """
        if attachments is not None:
            options["attachments"] = attachments
        return self._start(text, self.thread.current_turn_id, options)

    def continue_(self) -> RecordedRun:
        """Ask the model to go on with its last answer, cut off at the token limit (the turn's result has
        ``stop_reason == "length"``): a message of :data:`workspace.agent.CONTINUE_PROMPT` after the
        current turn; the model sees its cut answer in the conversation and continues it."""
        from workspace.agent import CONTINUE_PROMPT

        return self.send(CONTINUE_PROMPT)

    def edit_and_resend(self, turn_id: str, text: str, *,
                        attachments: Iterable[Attachment | str | os.PathLike[str]] | None = None) -> RecordedRun:
        """Send ``text`` in place of turn ``turn_id``'s message: a new sibling branch. ``attachments``: what goes
        with it (as for :meth:`send`; empty: nothing); None: the attachments of turn ``turn_id``'s message."""
        turn = self._own_turn(turn_id)
        options = self._attachments_of(turn_id) if attachments is None else {"attachments": list(attachments)}
        return self._start(text, turn.parent_turn_id, options, fork=True)

    def regenerate(self, turn_id: str, **options: Any) -> RecordedRun:
        """Ask again: a new sibling of ``turn_id`` with the same message and attachments (``options``: more run
        options, as for :meth:`send`)."""
        turn = self._own_turn(turn_id)
        return self._start(turn.user_text, turn.parent_turn_id, {**self._attachments_of(turn_id), **options},
                           fork=True)

    def _supersede_pending(self, parent_turn_id: str | None) -> None:
        """Before a new branch from ``parent_turn_id`` (↻, edit & resend): a proposal waiting for review that a turn
        off that branch made is discarded (its files in :attr:`superseded`; the model is not told: the new branch
        never made it). The new answer starts from the folder as it is: reading through the replaced branch's
        pending edits, an ``edit_file`` whose search text that proposal had replaced failed with "search text not
        found". A proposal of a turn the new branch follows stays.

        A change set begun by a turn the new branch follows may hold the replaced answer's proposals too (a set
        lives until it is decided): then only its files that the replaced turns proposed are discarded, the rest
        stay (:attr:`superseded_kept`). A file both proposed (one change composed of both) is discarded whole,
        and the model is told, as of a rejection: the branch it follows had proposed it
        (:attr:`superseded_mixed`)."""
        self.superseded_kept, self.superseded_mixed = [], []
        changes = self.changes
        if changes is None or not changes.pending_files:
            return
        origin = self.store.turn_of_run(self.thread_id, changes.run_id) if changes.run_id else None
        path = self.store.path_ids(self.thread_id, parent_turn_id) if parent_turn_id is not None else []
        reason = "superseded: the message was asked again"
        if origin is None or origin not in path:
            self._discard_superseded(changes.pending_files, reason, tell=False)
            return
        # The set began on the branch followed: which of its files did the turns since propose, and which the
        # replaced ones (the current branch's turns after the fork)?
        current = self.store.path_ids(self.thread_id, self.thread.current_turn_id)
        kept_path = set(path)
        replaced = [t for t in current if t not in kept_path]
        followed = path[path.index(origin):]
        proposed = self.store.events_of(followed + replaced, [ev.ChangeProposed])

        def files_of(turns: list[str]) -> set[str]:
            return {str(entry.get("id")) for turn in turns for e in proposed.get(turn, [])
                    if isinstance(e, ev.ChangeProposed) and e.change_set_id == changes.id for entry in e.files}

        earlier, theirs = files_of(followed), files_of(replaced)
        pending = changes.pending_files
        gone = [fc for fc in pending if fc.id not in earlier]
        mixed = [fc for fc in pending if fc.id in earlier and fc.id in theirs]
        self.superseded_kept = [fc.display_path for fc in pending if fc.id in earlier and fc.id not in theirs]
        self._discard_superseded(gone, reason, tell=False)
        self._discard_superseded(mixed, reason, tell=True)
        self.superseded_mixed = [fc.display_path for fc in mixed]

    def _discard_superseded(self, files: list[FileChange], reason: str, *, tell: bool) -> None:
        """Reject and settle these pending files of the change set (nothing written), their names added to
        :attr:`superseded`. ``tell``: the model hears of it in front of the new message."""
        changes = self.changes
        if changes is None or not files:
            return
        names = [fc.display_path for fc in files]
        ids = [fc.id for fc in files]
        for file_id in ids:
            changes.reject_file(file_id, reason=reason)
        result = changes.apply(files=ids, _tell=tell)
        if result.error:
            raise RuntimeError(f"the proposal waiting for review could not be discarded ({result.error}); "
                               "decide it in the Changes dock first")
        self.superseded = [*self.superseded, *names]

    def attachments(self, turn_id: str) -> list[Attachment]:
        """The files, images and resources sent with turn ``turn_id``'s message, with their content."""
        refs = self.store.turn_attachments([turn_id]).get(turn_id) or []
        return self.store.load_attachments(refs)

    def _attachments_of(self, turn_id: str) -> dict[str, Any]:
        found = self.attachments(turn_id)
        return {"attachments": found} if found else {}

    def stop(self, reason: str = "stopped by the user", *, delegated: str | None = None) -> list[DelegationFuture]:
        """Cancel the running run (its stream and tool calls) and the work the thread's robots delegated in the
        background that still runs (the run may have ended before it); the delegations it stopped. The end of a
        delegate's run that went on after the run that started it ended is stored with the reason ``delegated``
        (default :data:`~workspace.delegation.STOPPED_IN_BACKGROUND`: "you pressed Stop…"), see
        :meth:`Workspace.stop_delegated <workspace.session.Workspace.stop_delegated>`."""
        if self.run is not None and not self.run.done:
            self.run.cancel(reason)
        from workspace.delegation import STOPPED_IN_BACKGROUND

        return self.workspace.stop_delegated(self.thread_id, reason=delegated or STOPPED_IN_BACKGROUND)

    def switch_branch(self, turn_id: str) -> TurnInfo:
        """Show the branch through ``turn_id`` (its latest continuation becomes current)."""
        self._not_running("switch branches")
        self._own_turn(turn_id)
        leaf = self.store.set_current(self.thread_id, turn_id)
        self._thread = self.store.get_thread(self.thread_id)
        return leaf

    def _start(self, text: str, parent_turn_id: str | None, extra: dict[str, Any] | None = None, *,
               fork: bool = False) -> RecordedRun:
        self._not_running("send another message")
        if not text or not text.strip():
            raise ValueError("The message is empty; type something to send")
        extra = dict(extra or {})
        attachments = self._take_attachments(extra)
        network: Network | None = None
        robot: Robot | None = None
        if self.is_network:
            # A fresh network for every run: its memory starts from the file's values, and lives only inside the
            # run (scratch: its writes are not reviewed, they are never kept).
            network = self._load_network()
            network.memory.scratch = True
        else:
            robot = self.robot
            self._remember_server(robot)
            if robot.bus is not None and robot.bus.name is not None:  # a robot file's ``bus: name``: its peers answer
                from workspace.catalog import bus_peers

                peer_options: dict[str, Any] = {"config": self.workspace.config}
                if self.workspace.provider is not None:
                    peer_options["provider"] = self.workspace.provider
                bus_peers(robot, folder=self.workspace.folder, **peer_options)
        self.superseded, self.superseded_kept, self.superseded_mixed = [], [], []
        if fork:  # checked and loaded: only now is the replaced answer's proposal given up
            self._supersede_pending(parent_turn_id)
        if self.changes is not None:
            # The review outcome of earlier proposals reaches the model in front of this message
            # (stored that way too, so a rebuilt conversation tells the model the same truth).
            from workspace.changes import compose_user_message

            text = compose_user_message(self.changes.take_outcome_message(), text)
        # The conversation along the branch being continued, rebuilt from the store.
        if network is not None:
            histories = self.network_histories(parent_turn_id)
            for bot in _network_robots(network):
                bot.history = list(histories.get(bot.name, []))
            self._restore_compactions(_network_robots(network), parent_turn_id)
        else:
            conversation = self._conversation_to(parent_turn_id)
            assert robot is not None
            _restore_compaction(robot, conversation.compactions)
        problems: list[str] = []
        turn_id = uuid.uuid4().hex
        try:
            if attachments:  # stored before the message that refers to them
                self.store.save_attachments(attachments)
            self.store.add_turn(self.thread_id, user_text=text, parent_turn_id=parent_turn_id, turn_id=turn_id)
        except StoreError as exc:
            if exc.reason not in ("locked", "io") or not self.store.queued_writes:
                raise
            problems.append(f"could not record the message yet: {exc}")  # kept queued; the run goes on
        if not self._thread.title:
            typed = text
            if text.startswith("<change-review>"):  # (importing workspace.changes only then keeps a first run quick)
                from workspace.changes import split_user_message

                typed = split_user_message(text)[1]
            title = title_from(typed)
            if title:
                try:
                    self._thread = self.store.rename_thread(self.thread_id, title)
                except StoreError as exc:
                    problems.append(f"could not record the title yet: {exc}")
        options: dict[str, Any] = {**extra, "thread_id": self.thread_id, "approval": self.approval}
        if self.workspace.agent_skills and network is None and "agent_skills" not in options:
            from workspace.agent_skills import AgentSkillCatalog

            options["agent_skills"] = AgentSkillCatalog(folder=self.workspace.folder)
        if attachments:
            options["attachments"] = attachments
        if self.workspace.folder is not None:
            options["folder"] = self.workspace.folder
            options["changes"] = self._changes_for_run()
        name = network.name if network is not None else robot.name if robot is not None else self._thread.robot
        on_write = self.workspace.on_memory_write
        if on_write is not None:  # review.memory: ask: proposed writes go to the front end's review
            for bot in _network_robots(network) if network is not None else [robot] if robot is not None else []:
                bot.watch_memory_writes(on_write)
        try:
            if network is not None:
                event_run: EventRun = network.stream(text, **options)
                self._network = network
            else:
                assert robot is not None
                # The kept conversation itself, not a copy of it: the run appends its messages to it, and when it
                # ends they give way to its turn as the store keeps it (ThreadHistory._extend_conversation).
                robot.history = conversation.lend()
                event_run = robot.stream(text, **options)
        except Exception as exc:  # the run could not start: keep the message, record why
            if network is None and conversation.lent:  # given back as it was
                del conversation.messages[conversation.size or 0:]
                conversation.lent = False
            with contextlib.suppress(StoreError):
                self.store.append_event(self.thread_id, turn_id, ev.RunFailed(
                    run_id=f"failed-{turn_id}", robot=name, seq=1, error=str(exc) or type(exc).__name__,
                    error_type=type(exc).__name__))
                self.store.finish_turn(turn_id, "failed")
            raise
        def done(finished: RecordedRun) -> None:
            self.workspace._run_done(finished)
            if network is None:
                self._extend_conversation(parent_turn_id, finished)
            if self.changes is None:
                return
            if self.workspace.auto_verify and self._proposed_in(finished):
                with contextlib.suppress(RuntimeError):  # no event loop (a run driven by hand): nothing to verify on
                    self.start_verify("proposed")
            try:  # off the event loop: the snapshot writes the proposed contents to the checkpoint store
                asyncio.get_running_loop().run_in_executor(None, self.save_changes)
            except RuntimeError:
                self.save_changes()

        run = RecordedRun(event_run, store=self.store, thread_id=self.thread_id, turn_id=turn_id, on_done=done)
        for problem in problems:
            run._warn(StoreError(problem))
        self.run = run
        self.workspace._runs.add(run)
        return run

    def _take_attachments(self, extra: dict[str, Any]) -> list[Attachment]:
        """The ``attachments`` option, read (paths inside the opened folder) and checked before anything is
        recorded: a file that cannot be attached raises, and the message is not sent."""
        given = extra.pop("attachments", None)
        if not given:
            return []
        from workspace.attachments import AttachmentError, AttachmentLimits, coerce_attachments

        if self.is_network:
            raise AttachmentError("Attachments go to a robot's thread; a network's tasks get their messages from "
                                  "the network. Send the message without attachments, or open a robot's thread")
        return coerce_attachments(given, folder=self.workspace.folder,
                                  limits=AttachmentLimits.from_config(self.workspace.config))

    def __repr__(self) -> str:
        return f"<ThreadSession {self.thread_id[:8]} {self._thread.kind}={self._thread.robot!r}>"


__all__ = ["ThreadSession", "thread_server"]
