"""The change review views: the virtualised diff view (unified and side by side), the file list, the
conflict view and the full-size review window. Models live in :mod:`ui.models.changes`.
"""

from __future__ import annotations



