"""The change review: the Changes dock (:mod:`ui.review.pane`, its actions :mod:`ui.review.pane_actions`),
its Qt item models (:mod:`ui.review.model`), the virtualised diff view (unified and side by side), the
file list, the conflict view and the full-size review window.
"""
