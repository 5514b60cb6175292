"""Proposed file changes, their review, atomic application, checkpoints and undo.

A robot never writes a file itself. The file tools (:mod:`workspace.tools.files`) add
each write to the run's :class:`ChangeSet`; nothing touches disk until the user has
decided, hunk by hunk:

>>> changes = ChangeSet(folder)                       # one per run (Robot does this)
>>> # ... the robot proposes edits through the tools ...
>>> for hunk in changes.hunks():                      # navigation order
...     changes.accept(hunk.id)                       # or reject(id, reason=...), edit_hunk(id, text)
>>> result = changes.apply()                          # atomic per file; refuses on conflicts
>>> note = changes.take_outcome_message()             # what the next model turn must be told

Guarantees:

- **Reject really reverts**: a file none of whose hunks is accepted is not written at
  all, so it stays byte-identical. Pending hunks count as rejected when applying.
- **Atomic per file**: temp file in the same folder, fsync, ``os.replace``, the old
  permissions kept, the result read back and verified. If a write fails, the files
  already written are restored, so a failing apply leaves every file as it was; a
  crash (power loss, kill) leaves each file either old or new, never half-written.
- **No write through a swapped symlink**: the folder is opened once per apply and every
  create, write, rename and remove is done relative to directory handles opened without
  following symlinks (:mod:`~workspace.changes.folderio`), so a folder replaced by a
  symlink after the checks redirects nothing.
- **Interrupted applies are recovered**: an apply journal is written before the first
  write; after a kill the next start finds the set (:func:`find_interrupted_applies`) and
  rolls it back or forward as the user chooses (:func:`recover`), removing temp files.
- **Conflicts**: if a file changed on disk after the proposal, :meth:`ChangeSet.apply`
  writes nothing and returns :class:`Conflict` objects with the three versions (base,
  disk, proposed); :meth:`ChangeSet.rebase` or ``apply(on_conflict="skip")`` resolve it.
- **Checkpoints before and after** every applied set (content-addressed snapshots under
  ``paths.data_dir()/checkpoints``), undo that restores the files byte for byte, and
  redo of the undo (:class:`ChangeHistory`, one per conversation thread), plus the net
  diff of everything a thread changed.
- **The model is told the outcome** (:meth:`ChangeSet.take_outcome_message`), including
  the user's reasons and edits.

Untouched bytes survive: line endings (CRLF, CR), a missing final newline, byte-order
marks and non-UTF-8 encodings are kept because merging works on exact lines; binary
files can be created, deleted and renamed as whole files, never merged.

The package, by noun: :mod:`~workspace.changes.fileio` (a file's state, atomic writes, fsync),
:mod:`~workspace.changes.folderio` (reads and writes in the folder through directory handles),
:mod:`~workspace.changes.journal` (the apply journal and the recovery of interrupted applies), :mod:`~workspace.changes.hunks` (hunks and one file's
change), :mod:`~workspace.changes.changeset` (the change set: proposing, deciding, applying),
:mod:`~workspace.changes.apply` (the write itself: conflicts, rollback, rebase),
:mod:`~workspace.changes.checkpoints` and :mod:`~workspace.changes.history` (snapshots, undo,
redo, restore, net diff) and :mod:`~workspace.changes.outcome` (what the model is told). The
review on a terminal is part of the command line (:mod:`workspace.cli.review`).
"""

from __future__ import annotations

from workspace.changes.apply import ApplyResult
from workspace.changes.changeset import MODES, ChangeSet, Listener, ReviewCounts
from workspace.changes.checkpoints import Checkpoint, CheckpointStore, FileState
from workspace.changes.errors import ChangeError, ReadOnlyError, UnsafePathError
from workspace.changes.fileio import atomic_write, read_file_state, sha256, sync_dirs
from workspace.changes.folderio import FolderIO
from workspace.changes.history import ChangeHistory, HistoryEntry, RestoreResult
from workspace.changes.hunks import (
    ACCEPTED,
    MAX_DIFF_BYTES,
    PENDING,
    REJECTED,
    Conflict,
    FileChange,
    Hunk,
    Merge,
    compare_texts,
)
from workspace.changes.journal import InterruptedApply
from workspace.changes.outcome import compose_user_message, format_outcome, split_user_message
from workspace.changes.recovery import (
    RecoveryResult,
    discard_interrupted,
    find_interrupted_applies,
    recover,
)

__all__ = [
    "ACCEPTED",
    "MAX_DIFF_BYTES",
    "MODES",
    "PENDING",
    "REJECTED",
    "ApplyResult",
    "ChangeError",
    "ChangeHistory",
    "ChangeSet",
    "Checkpoint",
    "CheckpointStore",
    "Conflict",
    "FileChange",
    "FileState",
    "FolderIO",
    "HistoryEntry",
    "Hunk",
    "InterruptedApply",
    "Listener",
    "Merge",
    "ReadOnlyError",
    "RecoveryResult",
    "RestoreResult",
    "ReviewCounts",
    "UnsafePathError",
    "atomic_write",
    "compare_texts",
    "compose_user_message",
    "discard_interrupted",
    "find_interrupted_applies",
    "format_outcome",
    "read_file_state",
    "recover",
    "sha256",
    "split_user_message",
    "sync_dirs",
]
