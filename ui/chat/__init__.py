"""The chat's view state and its presenter, without widgets.

:class:`~ui.chat.presenter.ChatPresenter` turns a run's events (live from the bridge, or a stored
thread's turns) into :mod:`ui.chat.state`: turns, user messages, robot text, tool cards
(:mod:`ui.chat.tool_calls`), change cards, network lanes, usage and how each run ended; its parts
are its base classes (:mod:`ui.chat.column`, :mod:`ui.chat.text`, :mod:`ui.chat.calls`,
:mod:`ui.chat.changes`, :mod:`ui.chat.lanes`). The chat widget
(:class:`ui.widgets.chat.ChatView`) only renders that state, told what changed through
:class:`~ui.chat.listener.ChatListener`.

Nothing here imports Qt: the presenter is tested without a window.
"""
