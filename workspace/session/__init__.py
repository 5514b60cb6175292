"""The Qt-free composition root: a :class:`Workspace` of threads, each a :class:`ThreadSession`.

The desktop (and tests, and scripts) drive everything through these three classes:

* :class:`Workspace` owns the configuration, the :class:`~workspace.persistence.Store`, the approval
  gate and, optionally, a provider every robot uses (tests pass a ``ScriptedProvider``).
* :class:`ThreadSession` is one conversation: ``send``, ``edit_and_resend``, ``regenerate``,
  ``switch_branch``, ``transcript``, ``stop``. Before each run the robot's ``history`` is rebuilt
  from the store along the branch being continued, so a resumed thread (after a restart, or on
  another branch) gives the model a valid conversation.
* :class:`RecordedRun` wraps an :class:`~workspace.agent.AgentRun` (a robot thread) or a
  :class:`~workspace.network.NetworkRun` (a network thread: any ``EventRun``). A recording task
  consumes the run and appends every event to the store *as it happens*, before anyone sees it; async
  iterating the RecordedRun yields the same events (from the start, however late you begin, and
  any number of times). Stopping iteration does not stop the run or its recording: call
  :meth:`RecordedRun.cancel` (or :meth:`ThreadSession.stop`) for that; the ``run_cancelled``
  event is recorded too. If the database cannot be written (disk full, locked), the run goes
  on: the failure is logged once per run and kept in :attr:`RecordedRun.recording_errors`.

Network threads (``Workspace.new_network_thread(name)``, kind ``"network"``; the thread's
``robot`` column holds the network's name) run a network for each message. Every run gets a
freshly loaded network, so its shared memory starts from the network file's initial values and
a ``wait_for`` never sees a value of an earlier run. Each robot of the network keeps its own
conversation across the thread's turns: before a run, every robot's ``history`` is rebuilt from
the store along the branch being continued (the messages its tasks received and what it
answered, tool calls included), exactly as for a robot thread. Edit-and-resend and regenerate
start a new network run after the turn's parent.

All store calls are short synchronous SQLite transactions on the event-loop thread (see
:mod:`workspace.persistence`); text deltas are held in memory and written every 250 ms at most, by a
timer armed here.

The package: :mod:`~workspace.session.workspace` (Workspace), :mod:`~workspace.session.thread`
(ThreadSession; its parts :mod:`~workspace.session.thread_state`,
:mod:`~workspace.session.thread_history`, :mod:`~workspace.session.thread_changes`),
:mod:`~workspace.session.recording` (RecordedRun, TurnView, titles).
"""

from __future__ import annotations

from workspace.session.recording import RecordedRun, TurnView, title_from
from workspace.session.thread import ThreadSession
from workspace.session.workspace import Workspace

__all__ = ["RecordedRun", "ThreadSession", "TurnView", "Workspace", "title_from"]
