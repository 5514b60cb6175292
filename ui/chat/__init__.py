"""The chat: the conversation and the message box.

- :mod:`ui.chat.model`: the view state and its presenter (events → turns, answers, tool cards, change
  cards, lanes), without Qt; tested without a window.
- :mod:`ui.chat.view`: the widgets that render that state (the chat column, messages, cards, lanes,
  the Markdown stream).
- :mod:`ui.chat.composer`: the message box (attachments, mentions, / commands, the model picker, the
  context meter).

A feature of its own: it imports no other feature (``ui.review``, ``ui.inspector``…); what it shares
goes through :mod:`ui.formatting`, :mod:`ui.widgets` and the session.
"""
