"""The window's session model, :class:`Controller`: the one typed surface the window asks of the core.

It owns the :class:`~workspace.session.Workspace` (store, robots, networks, approval gate, configuration),
the open :class:`~workspace.session.ThreadSession` and its :class:`~workspace.session.RecordedRun` s. What
the window does to a conversation goes through its typed methods — :meth:`send`, :meth:`stop`,
:meth:`continue_`, :meth:`edit_and_resend` / :meth:`regenerate` (forks), :meth:`switch_branch`,
:meth:`new_thread` / :meth:`open_thread`, :meth:`set_robot` / :meth:`set_network`, :meth:`reload_config` /
:meth:`apply_config` / :meth:`set_folder` (settings), :meth:`pending_approvals` — and the session's own typed
methods (``set_model``, ``apply_changes``, ``undo_changes``…) for the open thread. It reports back through Qt
signals. The core's types are imported under ``TYPE_CHECKING`` (the window's start does not wait for them),
so mypy follows a message from the composer (``ui/window/runs.py`` ``Runs.send``) through :meth:`send` to
``ThreadSession.send`` and on to the provider.

Runs belong to their thread, not to the open view: switching threads (or opening a new one) leaves a run
going in the background, its recording writes it to the store, and a watcher task follows each run for
:meth:`run_states` (streaming, waiting for your approval, waiting for a review, finished, failed: the sidebar
and the status bar show them). The open thread's run is consumed by the one :class:`~ui.bridge.RunBridge`
in a task owned by the :class:`~ui.tasks.TaskOwner`; another thread opening releases the bridge, and coming
back to a thread whose run goes on consumes it again (the chat shows the stored part, then goes on live).
Approvals: the gate's ``ask_fn`` is a coroutine that emits ``approval_needed(request, future)`` and awaits
the future, which the inline card resolves; one asked in a background thread waits (never denied for
being out of sight) and its card shows when the thread is open again (``approvals_reshown``).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ui.controller_parts.state import DEFAULT_ROBOT
from ui.controller_parts.threads import ThreadList

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from workspace.attachments import Attachment
    from workspace.config import Config
    from workspace.persistence import Store, ThreadInfo
    from workspace.session import RecordedRun, ThreadSession

log = logging.getLogger("ui.controller")

#: What a thread's run is at, for people (the sidebar's accessible text, the quit question).
RUN_STATE_WORDS = {
    "streaming": "streaming",
    "background": "working in the background",
    "approval": "waiting for your approval",
    "review": "waiting for a review",
    "finished": "finished",
    "failed": "failed",
}


def quit_question(going: list[tuple[str, str]], delegated: list[tuple[str, int]], titles: dict[str, str]) -> str | None:
    """The question before quitting: the threads with a run ``going`` (thread id, its state) and those whose
    ``delegated`` work still runs after their run ended (thread id, how many tasks), named by their ``titles``;
    None when nothing goes."""
    if not going and not delegated:
        return None

    def title_of(thread_id: str) -> str:
        title = titles.get(thread_id) or "Untitled thread"
        return title if len(title) <= 40 else title[:39] + "…"

    parts = []
    if going:
        named = [f"‘{title_of(thread_id)}’ ({RUN_STATE_WORDS.get(state, state)})" for thread_id, state in going]
        count = f"{len(going)} runs are going" if len(going) > 1 else "A run is going"
        parts.append(f"{count}: {', '.join(named)}")
    for thread_id, tasks in delegated:
        parts.append(f"‘{title_of(thread_id)}’: {tasks} delegated task{'s' if tasks > 1 else ''} still running")
    several = len(going) + sum(tasks for _thread, tasks in delegated) > 1
    return f"{'. '.join(parts)}. Quit and stop {'them' if several else 'it'}?"


class Controller(ThreadList):
    """The window's session model (see the module's text). It is the last link of a chain of classes, one
    responsibility each (``ui/controller_parts/``): its state and signals (``state``), the robots and networks new
    threads talk to (``targets``), approvals and what robots learn (``approvals``), the runs it follows
    (``runs``), the thread list (``threads``); here: opening, settings, the open thread, sending."""

    # -- opening ------------------------------------------------------------------------------
    def open(self, *, recover: bool = False) -> None:
        """Open the workspace; a broken database falls back to an in-memory one, with a message.
        ``recover``: a damaged database is moved aside (kept) and a fresh one created."""
        import asyncio
        import threading

        from workspace import paths
        from workspace.persistence import Store, StoreError
        from workspace.session import Workspace

        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(RuntimeError):  # (no loop running: a test's window without one)
                self.window_loop = asyncio.get_running_loop()
        config, folder, provider = self.config, self.folder, self.provider
        path = Path(self.db_path) if self.db_path is not None else paths.database_path()
        self.store_error = self.store_error_reason = None
        try:
            # The file's full check (a read of every page) only after an unclean exit; else in a worker, below.
            store = Store(path, busy_timeout=1.5, recover=recover, integrity_check="after_unclean_exit")
            workspace = self.workspace = Workspace(store=store, config=config, folder=folder, provider=provider)
            if not store.checked_at_open:
                self._check_store_later(store)
        except StoreError as exc:
            self.store_error, self.store_error_reason = str(exc), exc.reason
            log.warning("store unavailable: %s", exc)
            workspace = self.workspace = Workspace(store=Store(":memory:"), config=config, folder=folder,
                                                   provider=provider)
            self._emit_problem(
                f"{exc}\n\nThe app is running with a temporary database: conversations in this session "
                "will not be kept after you quit."
            )
        workspace.approval.ask_fn = self._ask
        workspace.auto_verify = True  # a proposal is verified when its run ends (the review shows it)
        workspace.agent_skills = True  # the SKILL.md skills a message asks for, as the library's runs get them
        workspace.verify_listeners.append(self.verify_progress.emit)
        workspace.approval.question_fn = self._ask  # a robot's question, a person's task: a card in the chat
        workspace.on_memory_write = self._memory_write  # review.memory: ask: the Changes dock's Memory group
        names = self.robot_names()
        if names and self.robot_name not in names:
            self.robot_name = names[0]

    def _check_store_later(self, store: Store) -> None:
        """SQLite's ``quick_check`` of the database just opened, in a worker thread (its own read-only
        connection): damage found is said with the fix (the signal reaches the window's thread queued)."""
        import threading

        def check() -> None:
            problem = store.integrity_problem()
            if problem is not None:
                log.warning("%s", problem)
                self._emit_problem(problem)

        threading.Thread(target=check, name="robotlab-store-check", daemon=True).start()

    def retry_store(self, *, recover: bool = False) -> bool:
        """Leave the temporary database for the real one (after "Try again" or "Move aside and start
        fresh"); refused when this session's conversations live in the temporary one."""
        if self.workspace is None or self.store_error is None:
            return True
        if not self.idle or self.workspace.threads():
            self.problem.emit("This session's conversations are in the temporary database: quit and start the "
                              "app again to use your database.")
            return False
        self.workspace.close()
        self.session = None
        self.open(recover=recover)
        return self.store_error is None

    def close(self) -> None:
        for fut in list(self._pending):
            fut.cancel()
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self._brancher is not None:
            self._brancher.close()
            self._brancher = None
        if self.workspace is not None:
            from workspace.delegation import STOPPED_AT_QUIT

            try:
                self.workspace.close(delegated=STOPPED_AT_QUIT)
            except Exception as exc:  # closing must never stop the app from quitting
                log.warning("closing the workspace failed: %s", exc)

    def reload_config(self) -> None:
        """Re-read the configuration (after Settings saved it); new runs use it."""
        from workspace.config import load_config

        try:
            self._trust_seen, self._trust_stamp = True, self._trust_mtime()
            config = self._config = load_config(self.folder)
        except Exception as exc:
            self.problem.emit(f"The configuration could not be read: {exc}")
            return
        self.apply_config(config)

    def apply_config(self, config: Config) -> None:
        """Use ``config`` from the next run of every thread on (a run going on keeps its own)."""
        self._config = config
        if self.workspace is not None:
            self.workspace.set_config(config)
            self._network_cache.clear()
        self.config_changed.emit()

    def _follow_trust(self) -> None:
        """Trust given or revoked elsewhere (``robotlab trust``) counts from the next message on."""
        if self.folder is not None and self._trust_seen and self._trust_mtime() != self._trust_stamp:
            self.reload_config()

    def set_folder(self, folder: Path | None) -> None:
        """Work in ``folder`` from now on; raises (RuntimeError, ValueError, ConfigurationError) with a
        message for people when it cannot (a run going, changes awaiting review, a bad config file)."""
        from workspace.config import load_config

        new = Path(folder).resolve() if folder is not None else None
        going = self.runs_going()
        if going and new != self.folder:  # runs of other threads too: say which, Esc alone stops the open one's
            titles = [self._thread_title(thread_id) for thread_id, _state in going]
            raise RuntimeError(f"{len(going)} run{'s are' if len(going) > 1 else ' is'} going ("
                               + ", ".join(f"‘{t}’" for t in titles)
                               + "): let them finish, or open each thread and stop it (Esc), then open the other folder")
        stamp = self._trust_mtime()
        config = load_config(new)
        if self.workspace is not None:
            self.workspace.set_folder(new, config=config)
        self.folder, self._config, self._trust_seen, self._trust_stamp = new, config, True, stamp
        self._robots = None
        self._networks = None
        self._network_cache.clear()

    # -- threads (the list, search, rename and delete: ui/controller_parts/threads.py) ---------------

    def open_thread(self, thread_id: str) -> ThreadSession | None:
        if self.session is not None and self._thread_id(self.session) == thread_id:
            return self.session
        if self.workspace is None:
            self.problem.emit("Could not open the thread: the threads are still opening")
            return None
        try:
            session = self.workspace.open_thread(thread_id)
        except Exception as exc:
            self.problem.emit(f"Could not open the thread: {exc}")
            return None
        self._leave()  # the run of the thread left goes on in the background
        self.session = session
        load = getattr(session, "load_conversation", None)
        if load is not None:  # the conversation a send continues, read now in a worker, not at the send …
            # … while the thread stays open: a long thread left before its read ends is not read on, in the
            # background, while the thread opened next makes its widgets
            self.tasks.spawn(load(wanted=lambda: self.session is session), name="load-conversation")
        self._remember_thread(thread_id)
        thread = session.thread
        robot: str | None = thread.robot
        network = robot if thread.kind == "network" else None
        available = [n.name for n in self.networks()] if network is not None else self.robot_names()
        if robot not in available:  # its robot file is gone: new threads keep the current choice
            robot = None
        if robot and (robot != self.robot_name or network != self.network_name):
            self.robot_name = robot
            self.network_name = network
            self.robot_changed.emit(robot)
        self.thread_opened.emit(session)  # the chat shows what is stored, the running turn so far included
        run = session.run
        if run is not None and run in self._runs:
            shown = list(run.events)
            self.run_resumed.emit(run.turn_id, run.run_id, shown)  # the chat shows that turn from the run's events
            self._show(run, skip=len(shown))  # … and goes on live from the next one
        waiting = self.waiting_approvals(thread_id)
        if waiting:
            self.approvals_reshown.emit([(request, future) for _thread, request, future in waiting])
        self._seen(thread_id, thread)
        self._emit_usage()
        return session

    def _seen(self, thread_id: str, thread: ThreadInfo) -> None:
        """The thread is on screen: its run's end is seen (its mark in the store goes too)."""
        from workspace.session.run_marks import clear_mark

        if self._unseen.pop(thread_id, None) is not None:
            self.run_states_changed.emit()
        try:
            clear_mark(self.require_store(), thread)
        except Exception as exc:  # a read-only or busy database: the mark shows again next time
            log.debug("the run mark of %s was not cleared: %s", thread_id, exc)

    # -- sending (the runs followed, shown and stopped: ui/controller_parts/runs.py) -----------------
    def attachment_problem(self, attachments: Sequence[Attachment]) -> str | None:
        """Why ``attachments`` cannot go to the thread's model (images to a model that cannot see them), said
        before anything is sent; None when they can (or it is not known yet: the run checks again)."""
        if not any(a.is_image for a in attachments):
            return None
        try:
            if self.session is not None:
                provider = self.session.robot.provider
            elif self.workspace is not None:
                provider = self.workspace.load_robot(self.robot_name).provider
            else:
                return None
        except Exception:  # a network thread, a robot that cannot load: the send says what is wrong
            return None
        from workspace.attachments import vision_problem
        from workspace.providers import litellm_provider

        if isinstance(provider, litellm_provider.LiteLLMProvider) and provider.vision is None and \
                not provider.capabilities_known():
            return None  # not loaded yet (it loads after the first paint): the run checks, off the window's thread
        error, _note = vision_problem(provider, attachments)
        return error

    def send(self, text: str, *, attachments: Sequence[Attachment] | None = None) -> bool:
        if self.running:
            self.notice.emit("A run is in progress: stop it (Esc) before sending another message.")
            return False
        if self.workspace is None:
            self.notice.emit("Still opening your threads — send again in a moment.")
            return False
        self._follow_trust()
        created = False
        session = self.session
        if session is None:
            try:
                session = self.session = self.workspace.new_thread(self.robot_name, kind=self.target_kind)
                if self.pending_model is not None and self.target_kind != "network":
                    session.set_model(self.pending_model[0], api_base=self.pending_model[1])
            except Exception as exc:
                self.problem.emit(f"Could not start a thread with '{self.robot_name}': {exc}")
                return False
            finally:
                self.pending_model = None
            created = True
        try:
            run = session.send(text, attachments=attachments) if attachments else session.send(text)
        except Exception as exc:
            self.problem.emit(f"Could not send the message: {exc}")
            return False
        if created:  # the thread list shows it once the run is under way (the window's running_changed)
            self._remember_thread(self._thread_id(session))
        self._start(run)
        return True

    def continue_(self) -> bool:
        """Ask the model to go on with its last answer, cut off at the token limit (the "Continue" of a run
        whose result has ``stop_reason == "length"``)."""
        if self.session is None or self.running:
            self.notice.emit("Stop the current run (Esc) first." if self.running else "There is no answer to continue.")
            return False
        try:
            run = self.session.continue_()
        except Exception as exc:
            self.problem.emit(f"Could not continue the answer: {exc}")
            return False
        self._start(run)
        return True

    def edit_and_resend(self, turn_id: str, text: str, attachments: Sequence[Attachment] | None = None) -> bool:
        """The edited message in place of turn ``turn_id``'s, with ``attachments`` (None: the turn's own)."""
        return self._fork(lambda session: session.edit_and_resend(turn_id, text, attachments=attachments))

    def regenerate(self, turn_id: str) -> bool:
        return self._fork(lambda session: session.regenerate(turn_id))

    def _fork(self, start: Callable[[ThreadSession], RecordedRun]) -> bool:
        session = self.session
        if session is None:
            return False
        if self.running:
            self.notice.emit("Stop the current run (Esc) first.")
            return False
        try:
            run = start(session)
        except Exception as exc:
            self.problem.emit(f"Could not fork the thread: {exc}")
            return False
        self.thread_opened.emit(self.session)  # the branch on screen changed: re-render
        if session.superseded:
            from workspace.session.thread import superseded_note

            self.notice.emit(superseded_note(session.thread.robot, session.superseded, kept=session.superseded_kept,
                                             mixed=session.superseded_mixed))
        self._start(run)
        return True

    def switch_branch(self, turn_id: str, direction: int) -> None:
        """Show the sibling of ``turn_id`` that is ``direction`` (+1/-1) away."""
        if self.session is None or self.running:
            return
        try:
            siblings = [t.id for t in self.require_store().siblings(turn_id)]
            index = siblings.index(turn_id) + direction
            if not 0 <= index < len(siblings):
                return
            self.session.switch_branch(siblings[index])
        except Exception as exc:
            self.problem.emit(f"Could not switch branches: {exc}")
            return
        self.thread_opened.emit(self.session)
        self._emit_usage()

    def show_turn(self, turn_id: str) -> bool:
        """Show the branch of the open thread that goes through ``turn_id`` (a search hit on another
        branch); False when it cannot (a run going, a turn of another thread)."""
        if self.session is None or self.running:
            return False
        try:
            self.session.switch_branch(turn_id)
        except Exception as exc:
            self.problem.emit(f"Could not show that message: {exc}")
            return False
        self.thread_opened.emit(self.session)
        self._emit_usage()
        return True


__all__ = ["DEFAULT_ROBOT", "RUN_STATE_WORDS", "Controller", "quit_question"]
