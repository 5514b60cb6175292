"""The errors of proposing and applying file changes."""

from __future__ import annotations

from workspace.errors import SandboxError


class ReadOnlyError(SandboxError):
    """A write proposed while the change set is in read-only mode."""


class ChangeError(SandboxError):
    """A proposal that cannot be represented (the message says what to do instead)."""
