"""Verify in the review: the folder's or robot's verify command, run in the sandbox on a change set.

A trusted folder's ``.robotlab/config.yaml`` (``review.verify: "pytest -q"``) or a robot's front matter
(``verify:``) names a command. It runs in :mod:`workspace.isolation`'s sandbox, never on the folder itself:
on the set as proposed (``subset`` "proposed": undecided and accepted hunks on top of the folder) and, before
Apply, on exactly the hunks accepted so far (``subset`` "accepted": the candidate an Apply would write). The
result is a :class:`~workspace.events.VerifyFinished`; the change set keeps the latest one, so the model is
told it with the review outcome (:meth:`workspace.changes.ChangeSet.take_outcome_message`).

A folder's own verify command (its config file, or a robot file inside it) is used only once the user trusted
the folder; otherwise :func:`verify_command` returns a notice saying it was ignored and how to trust it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev

if TYPE_CHECKING:
    from workspace.changes import ChangeSet
    from workspace.robot import Robot

#: The subsets a verify runs on.
SUBSETS = ("proposed", "accepted")
#: Seconds a verify command may run (the sandbox kills it and everything it started after that).
VERIFY_TIMEOUT_S = 300.0


class VerifyFailed(RuntimeError):
    """Apply refused: the verify command failed on the accepted hunks (``event`` says how). Ask the person,
    then apply with ``if_verify_fails="apply"``."""

    def __init__(self, event: ev.VerifyFinished) -> None:
        why = "timed out" if event.timed_out else f"exit code {event.exit_code}"
        super().__init__(f"The verify command {event.command!r} failed on the accepted hunks ({why}); nothing was "
                         "applied. Fix the changes, or apply anyway (if_verify_fails='apply').")
        self.event = event


@dataclass(frozen=True, slots=True)
class VerifyProgress:
    """What a thread's verify is doing, for a window: started (``running``), finished (``event``), or ended
    without a result (``error``: it could not run, e.g. no sandbox; or ``superseded``: a newer verify or an
    Apply took its place, or it was cancelled)."""

    thread_id: str
    subset: str
    command: str
    #: ``time.monotonic()`` when it started (a window's running clock counts from it).
    started: float
    running: bool = True
    event: ev.VerifyFinished | None = None
    error: str | None = None
    superseded: bool = False


@dataclass(frozen=True, slots=True)
class VerifySetting:
    """The verify command in force (None: none) and, when a folder's own was ignored, a notice saying why."""

    command: str | None
    notice: str | None = None


def _inside(path: Path | None, folder: Path | None) -> bool:
    if path is None or folder is None:
        return False
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
    except ValueError:
        return False
    return True


def verify_command(config: Any, robot: Robot | None = None, *, folder: Path | None = None) -> VerifySetting:
    """The verify command for ``robot`` working on ``folder``: the robot's ``verify:`` first, then the
    configuration's ``review.verify`` (a folder's own value is already withheld there until trusted)."""
    from workspace import trust

    notice = None
    template = robot.template if robot is not None else None
    own = template.metadata.get("verify") if template is not None else None
    if isinstance(own, str) and own.strip():
        path = template.path if template is not None else None
        if not _inside(path, folder) or (folder is not None and trust.trusted_by_user(folder)):
            return VerifySetting(own.strip())
        notice = (f"The verify command of {path} ({own.strip()!r}) is ignored: the folder {folder} is not trusted. "
                  f"To use it, run {trust.trust_command(folder)}.")
    value = config.get("review.verify") if config is not None else None
    withheld = getattr(config, "withheld", None) or {}
    if not value and "review.verify" in withheld and notice is None:
        notice = (f"The folder's review.verify ({withheld['review.verify']!r}) is ignored: the folder {folder} is "
                  f"not trusted. To use it, run {trust.trust_command(folder)}.")
    if isinstance(value, str) and value.strip():
        return VerifySetting(value.strip(), notice=notice)
    return VerifySetting(None, notice=notice)


async def run_verify(command: str, changes: ChangeSet, *, subset: str = "proposed",
                     on_output: Callable[[str], None] | None = None,
                     timeout_s: float = VERIFY_TIMEOUT_S) -> ev.VerifyFinished:
    """Run ``command`` in the sandbox on ``changes`` (``subset``: "proposed" or "accepted") and return its
    :class:`~workspace.events.VerifyFinished`, also kept as the set's latest verify for the model's note.
    What the command writes is discarded (a verify proposes nothing). Raises
    :class:`~workspace.isolation.SandboxUnavailable` where no sandbox can be made."""
    from workspace.tools.commands import _sandbox, pending_layer

    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {', '.join(SUBSETS)}, not {subset!r}")
    box = await asyncio.to_thread(_sandbox)
    layer = await asyncio.to_thread(pending_layer, changes, accepted_only=subset == "accepted")
    started = time.monotonic()
    result = await box.run(command, Path(changes.folder), pending=layer, on_output=on_output, timeout_s=timeout_s)
    output = result.output.text
    if result.notes:
        output = output.rstrip("\n") + ("\n" if output else "") + "\n".join(f"[{n}]" for n in result.notes) + "\n"
    event = ev.VerifyFinished(change_set_id=changes.id, subset=subset, command=command, passed=result.ok,
                              exit_code=result.exit_code, output=output,
                              duration=round(result.duration_s or time.monotonic() - started, 3),
                              timed_out=result.timed_out)
    changes.note_verify({"subset": subset, "command": command, "passed": event.passed,
                         "exit_code": event.exit_code, "output": output, "timed_out": event.timed_out})
    return event
