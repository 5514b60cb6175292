"""Running commands in a sandbox that sees the folder as the pending changes would make it.

``sandbox_for_platform()`` gives this system's sandbox or raises :class:`SandboxUnavailable`
saying why and what to install. Linux: :class:`~workspace.isolation.bubblewrap.BubblewrapSandbox`.
"""

from __future__ import annotations

from workspace.isolation.base import (
    BoundedOutput,
    Change,
    CommandResult,
    FolderChanges,
    Grant,
    IsolationError,
    Limits,
    OutputCallback,
    PendingChanges,
    RunningCommand,
    Sandbox,
    SandboxUnavailable,
)

__all__ = [
    "BoundedOutput",
    "Change",
    "CommandResult",
    "FolderChanges",
    "Grant",
    "IsolationError",
    "Limits",
    "OutputCallback",
    "PendingChanges",
    "RunningCommand",
    "Sandbox",
    "SandboxUnavailable",
    "sandbox_for_platform",
]


def sandbox_for_platform(*, bwrap: str | None = None, limits: Limits | None = None) -> Sandbox:
    """This system's sandbox, checked (:class:`SandboxUnavailable` when none can be made)."""
    import sys

    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            f"No sandbox on this system ({sys.platform}): commands run only in Linux's bubblewrap "
            "sandbox for now (macOS's Seatbelt and Windows' AppContainer are not supported yet)."
        )
    from workspace.isolation.bubblewrap import BubblewrapSandbox, check

    caps = check(bwrap)
    return BubblewrapSandbox(bwrap=caps.bwrap, limits=limits, _caps=caps)
