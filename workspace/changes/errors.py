"""The errors of proposing and applying file changes."""

from __future__ import annotations

from workspace.errors import SandboxError


class ReadOnlyError(SandboxError):
    """A write proposed while the change set is in read-only mode."""


class ChangeError(SandboxError):
    """A proposal that cannot be represented (the message says what to do instead)."""


class UnsafePathError(ChangeError):
    """A path that now leads through a symbolic link (swapped in after the checks) or is no plain
    name inside the folder: nothing is read or written through it."""
