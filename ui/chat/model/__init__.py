"""The chat's view state and its presenter, without widgets.

:class:`~ui.chat.model.presenter.ChatPresenter` turns a run's events (live from the bridge, or a stored
thread's turns) into :mod:`ui.chat.model.state`: turns, user messages, robot text, tool cards
(:mod:`ui.chat.model.tool_calls`), change cards, network lanes, usage and how each run ended. It owns one
shared context, :class:`~ui.chat.model.column.Column` (the state, the listener, the runs), and hands each event
kind to a reducer that takes that column: :mod:`ui.chat.model.text`, :mod:`ui.chat.model.calls`,
:mod:`ui.chat.model.changes`, :mod:`ui.chat.model.lanes`, :mod:`ui.chat.model.runs`. The chat widget
(:class:`ui.chat.view.chat.ChatView`) only renders that state, told what changed through
:class:`~ui.chat.model.listener.ChatListener`. `tests/ui/chat_dump.py` writes the state as text (tests
compare a live run with its reopened thread that way).

Nothing here imports Qt: the presenter is tested without a window, and each reducer on its own.
"""
