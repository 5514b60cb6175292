"""Many robots at once in the window: one message to 2-4 candidates, shown as columns side by side.

``stats`` (Qt-free: each column's figures from its events), ``session`` (Qt-free: the candidates' threads,
their runs, the verdict, the comparison the combined review takes hunks from), ``view`` (the columns, their
headers, synced scrolling, the verdict row). The combined review of the candidates' changes is the review's
(``ui.review.combined``); the shell wires the two (``ui/window/compare.py``).
"""
