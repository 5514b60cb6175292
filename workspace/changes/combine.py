"""One combined review: hunks taken from several change sets (the candidates of a comparison) into one set.

Each candidate of a comparison proposes its own :class:`~workspace.changes.ChangeSet` for the same folder.
A person takes hunks from any of them; :func:`combine` makes one new set of exactly those (each file against
the base the candidates proposed on, so an Apply still refuses a file changed on disk since), which is applied
as one atomic set, undoable as one (:meth:`ChangeSet.apply`, :class:`~workspace.changes.ChangeHistory`).
Two taken hunks of different candidates that touch the same lines of the same file cannot both be applied:
:func:`combine` refuses them with :class:`OverlapError`, naming them. After the apply, :func:`settle_sources`
settles each candidate's own set without writing anything (the taken hunks accepted, the rest rejected) and
tells its robot, in the review outcome, which hunks of whose were taken.

A hunk's id across candidates is ``c<candidate>.<hunk id>`` (``c0.f1.h2``): stable while the set is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from workspace.changes.changeset import ChangeSet
from workspace.changes.checkpoints import CheckpointStore
from workspace.changes.errors import ChangeError
from workspace.changes.hunks import FileChange, Hunk
from workspace.sandbox import display_path

__all__ = ["CandidateChanges", "OverlapError", "TakenHunk", "combine", "find_overlaps", "hunk_id", "pending_hunks",
           "settle_sources"]


@dataclass(frozen=True, slots=True)
class CandidateChanges:
    """One candidate's proposed changes: its place in the comparison (0, 1, ...), its name (model or robot)."""

    candidate: int
    label: str
    changes: ChangeSet


@dataclass(frozen=True, slots=True)
class TakenHunk:
    """A pending hunk of one candidate's change set, as the combined review lists it."""

    id: str
    source: CandidateChanges
    file: FileChange
    hunk: Hunk

    @property
    def candidate(self) -> int:
        return self.source.candidate

    @property
    def path(self) -> str:
        return self.file.path

    def describe(self) -> str:
        """``c0.f1.h2 (candidate 0, model-a): app.py hunk 2, lines 3-4``."""
        return (f"{self.id} (candidate {self.candidate}, {self.source.label}): {display_path(self.path)} "
                f"hunk {self.hunk.number}, {self.hunk.where()}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``robotlab changes list --json`` prints per hunk."""
        hunk = self.hunk
        out: dict[str, Any] = {
            "id": self.id, "candidate": self.candidate, "label": self.source.label,
            "change_set_id": self.source.changes.id, "thread_id": self.source.changes.thread_id,
            "path": self.path, "action": self.file.action, "hunk": hunk.number, "kind": hunk.kind,
            "where": hunk.where(), "header": hunk.header(),
            "old_start": hunk.old_start + 1, "old_count": hunk.old_end - hunk.old_start,
            "new_start": hunk.new_start + 1, "new_count": hunk.new_end - hunk.new_start,
            "added": hunk.added, "removed": hunk.removed, "status": hunk.status,
            "old_lines": list(hunk.old_lines), "new_lines": list(hunk.final_lines),
        }
        if self.file.new_path:
            out["new_path"] = self.file.new_path
        return out


class OverlapError(ChangeError):
    """Two taken hunks of different candidates touch the same lines of a file: ``pairs`` names them."""

    def __init__(self, pairs: Sequence[tuple[TakenHunk, TakenHunk]]) -> None:
        self.pairs = list(pairs)
        named = "; ".join(_clash(a, b) for a, b in self.pairs)
        super().__init__(f"Overlapping hunks cannot both be applied: {named}. Take one of each pair (nothing was "
                         "written)")


def _clash(a: TakenHunk, b: TakenHunk) -> str:
    if a.file.before != b.file.before:
        return (f"{a.id} and {b.id} were proposed on different versions of {display_path(a.path)} (it changed "
                "between the proposals)")
    return f"{a.id} and {b.id} both change {display_path(a.path)} ({a.hunk.where()} / {b.hunk.where()})"


def hunk_id(candidate: int, hunk: Hunk) -> str:
    """The combined review's id of ``hunk`` of candidate ``candidate``: ``c<candidate>.<hunk id>``."""
    return f"c{candidate}.{hunk.id}"


def pending_hunks(sources: Iterable[CandidateChanges]) -> list[TakenHunk]:
    """Every pending hunk of the candidates' sets, candidate by candidate, in each set's navigation order."""
    out: list[TakenHunk] = []
    for source in sources:
        with source.changes.lock:
            for fc in source.changes.pending_files:
                out.extend(TakenHunk(hunk_id(source.candidate, h), source, fc, h) for h in fc.hunks)
    return out


def _overlap(a: TakenHunk, b: TakenHunk) -> bool:
    if a.candidate == b.candidate or a.path != b.path:
        return False  # one candidate's hunks never overlap: they come from one proposal
    ha, hb = a.hunk, b.hunk
    if ha.kind != "lines" or hb.kind != "lines":
        return True  # a whole-file change or a rename and anything else of another candidate in that file
    if a.file.before != b.file.before:
        return True  # proposed on different versions of the file: the lines do not line up
    if ha.old_start == ha.old_end and hb.old_start == hb.old_end:
        return ha.old_start == hb.old_start  # two insertions at one place: which goes first is not known
    if ha.old_start == ha.old_end:
        return hb.old_start < ha.old_start < hb.old_end
    if hb.old_start == hb.old_end:
        return ha.old_start < hb.old_start < ha.old_end
    return ha.old_start < hb.old_end and hb.old_start < ha.old_end


def find_overlaps(taken: Sequence[TakenHunk]) -> list[tuple[TakenHunk, TakenHunk]]:
    """The pairs of ``taken`` hunks that cannot both be applied."""
    return [(a, b) for i, a in enumerate(taken) for b in taken[i + 1:] if _overlap(a, b)]


def _resolve(sources: Sequence[CandidateChanges], take: Iterable[str]) -> list[TakenHunk]:
    known = {h.id: h for h in pending_hunks(sources)}
    wanted = list(dict.fromkeys(take))
    if not wanted:
        raise ChangeError("No hunk given to take; list them with `robotlab changes list` and give their ids")
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise ChangeError(f"No pending hunk {', '.join(repr(i) for i in unknown)}; the ids are listed by "
                          "`robotlab changes list` (c<candidate>.<hunk>, e.g. c0.f1.h1)")
    return [known[i] for i in wanted]


def _merged(files: list[TakenHunk]) -> tuple[bytes | None, str | None]:
    """The content and new path of one file with the taken hunks (all of one base, none overlapping)."""
    fc = files[0].file
    hunks = [t.hunk for t in files]
    if all(t.file is fc for t in files) and {h.id for h in hunks} == {h.id for h in fc.hunks}:
        return fc.merge(pending="accepted").data if any(h.edited for h in hunks) else fc.after, fc.new_path
    rename = next((t.file.new_path for t in files if t.hunk.kind == "rename"), None)
    whole = next((t for t in files if t.hunk.kind == "file"), None)
    if whole is not None:
        h = whole.hunk
        data = whole.file.encode("".join(h.edited_lines)) if h.edited_lines is not None else whole.file.after
        return data, rename
    lines = sorted((h for h in hunks if h.kind == "lines"), key=lambda h: (h.old_start, h.old_end))
    if not lines:
        return fc.before, rename
    assert fc.old_lines is not None
    out: list[str] = []
    i = 0
    for h in lines:
        out.extend(fc.old_lines[i:h.old_start])
        out.extend(h.final_lines)
        i = max(i, h.old_end)
    out.extend(fc.old_lines[i:])
    return fc.encode("".join(out)), rename


def combine(sources: Sequence[CandidateChanges], take: Iterable[str], *, thread_id: str | None = None,
            store: CheckpointStore | None = None) -> tuple[ChangeSet, list[TakenHunk]]:
    """One new change set of exactly the ``take`` hunks (ids from :func:`pending_hunks`), every hunk accepted.

    Raises :class:`OverlapError` when two taken hunks of different candidates touch the same lines, and
    :class:`ChangeError` for an unknown id or candidates of different folders. ``thread_id`` names the thread
    whose history keeps the apply (its undo restores the folder); nothing is written here.
    """
    taken = _resolve(sources, take)
    overlaps = find_overlaps(taken)
    if overlaps:
        raise OverlapError(overlaps)
    folders = {str(s.changes.folder) for s in sources}
    if len(folders) > 1:
        raise ChangeError(f"The candidates' changes are for different folders ({', '.join(sorted(folders))}); "
                          "combine the changes of one folder at a time")
    folder = sources[0].changes.folder
    combined = ChangeSet(folder, mode="review", thread_id=thread_id, store=store or sources[0].changes.store)
    by_path: dict[str, list[TakenHunk]] = {}
    for t in taken:
        by_path.setdefault(t.path, []).append(t)
    for path, files in by_path.items():
        data, new_path = _merged(files)
        fc = files[0].file
        combined.add_change(path, fc.before, data, before_mode=fc.before_mode, new_path=new_path)
    combined.accept_all()
    labels = list(dict.fromkeys(t.source.label for t in taken))
    combined.robot = "combined: " + " + ".join(labels)
    return combined, taken


def _note(source: CandidateChanges, taken: Sequence[TakenHunk], total: int) -> str:
    def names(items: Iterable[TakenHunk]) -> str:
        return ", ".join(f"{display_path(t.path)} hunk {t.hunk.number} ({t.hunk.where()})" for t in items)

    mine = [t for t in taken if t.source is source]
    parts = [f"yours: {names(mine)}" if mine else "none of yours"]
    others: dict[int, list[TakenHunk]] = {}
    for t in taken:
        if t.source is not source:
            others.setdefault(t.candidate, []).append(t)
    for number, items in sorted(others.items()):
        parts.append(f"from candidate {number} ({items[0].source.label}): {names(items)}")
    return (f"Your proposal was candidate {source.candidate} ({source.label}) of {total} answering the same message; "
            f"the user combined hunks from the candidates into one apply. Taken — " + "; ".join(parts) + ".")


def settle_sources(sources: Sequence[CandidateChanges], taken: Sequence[TakenHunk]) -> None:
    """After the combined set was applied: settle each candidate's own set without writing (its taken hunks
    accepted, the others rejected) and tell its robot, in its review outcome, which hunks of whose were taken."""
    for source in sources:
        ids = {t.hunk.id for t in taken if t.source is source}
        source.changes.settle_elsewhere(ids, note=_note(source, taken, len(sources)))
