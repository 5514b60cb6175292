"""One combined review: hunks taken from several change sets (the candidates of a comparison) into one set.

Each candidate of a comparison proposes its own :class:`~workspace.changes.ChangeSet` for the same folder.
A person takes hunks from any of them; :func:`combine` makes one new set of exactly those (each file against
the base the candidates proposed on, so an Apply still refuses a file changed on disk since), which is applied
as one atomic set, undoable as one (:meth:`ChangeSet.apply`, :class:`~workspace.changes.ChangeHistory`).
Two taken hunks of different candidates that touch the same lines of the same file cannot both be applied:
:func:`combine` refuses them with :class:`OverlapError`, naming them. Two candidates' hunks that are the same
change (:func:`agree`: the same lines made the same) do not conflict: taken together they are applied once. After the apply, :func:`settle_sources`
settles each candidate's own set without writing anything (the taken hunks accepted, the rest rejected) and
tells its robot, in the review outcome, which hunks of whose were taken.

A person may also write the lines themselves where hunks overlap: a merge (``merges={"c0.f1.h1": text}``)
replaces the lines that hunk and every taken hunk overlapping it change (their lines of the file as it was, from
the first to the last) with ``text``; those hunks are taken as merged, not refused.

A hunk's id across candidates is ``c<candidate>.<hunk id>`` (``c0.f1.h2``): stable while the set is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workspace.changes.changeset import ChangeSet
from workspace.changes.checkpoints import CheckpointStore
from workspace.changes.errors import ChangeError
from workspace.changes.hunks import FileChange, Hunk
from workspace.sandbox import display_path

__all__ = ["CandidateChanges", "Merge", "OverlapError", "TakenHunk", "agree", "combine", "find_agreements",
           "find_overlaps", "hunk_id", "merge_groups", "pending_hunks", "settle_sources", "unmerged_overlaps"]


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


def agree(a: TakenHunk, b: TakenHunk) -> bool:
    """True when hunks ``a`` and ``b`` of two candidates are the same change: the same lines of the same version
    of a file made the same. They do not conflict: taken together they are applied once."""
    ha, hb = a.hunk, b.hunk
    return (a.candidate != b.candidate and a.path == b.path and ha.kind == hb.kind == "lines"
            and a.file.before == b.file.before and (ha.old_start, ha.old_end) == (hb.old_start, hb.old_end)
            and list(ha.final_lines) == list(hb.final_lines))


def find_agreements(hunks: Sequence[TakenHunk]) -> dict[str, list[str]]:
    """Each hunk of ``hunks`` that another candidate proposed the same (:func:`agree`): its id → theirs."""
    out: dict[str, list[str]] = {}
    for i, a in enumerate(hunks):
        for b in hunks[i + 1:]:
            if agree(a, b):
                out.setdefault(a.id, []).append(b.id)
                out.setdefault(b.id, []).append(a.id)
    return out


def _overlap(a: TakenHunk, b: TakenHunk) -> bool:
    if a.candidate == b.candidate or a.path != b.path:
        return False  # one candidate's hunks never overlap: they come from one proposal
    if agree(a, b):
        return False  # the same change: applied once
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


@dataclass(frozen=True, slots=True)
class Merge:
    """Lines a person wrote in place of overlapping hunks: the file's lines ``start``-``end`` (0-based, end
    excluded, of the version the hunks were proposed on) become ``lines``; ``hunks`` are the taken hunks merged."""

    path: str
    start: int
    end: int
    lines: tuple[str, ...]
    hunks: tuple[TakenHunk, ...]

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hunks]


def _touches(start: int, end: int, h: Hunk) -> bool:
    if h.old_start == h.old_end:  # an insertion: inside the lines, or at the place of an empty merge
        return start < h.old_start < end or start == end == h.old_start
    return h.old_start < end and start < h.old_end


def merge_groups(taken: Sequence[TakenHunk], merges: Mapping[str, str]) -> list[Merge]:
    """The merges of ``taken`` hunks: each of ``merges``' hunk ids with every taken hunk overlapping it (and
    those overlapping them), their lines from the first to the last replaced by the merge's text.

    Raises :class:`ChangeError` for a merge of a hunk not taken, of a whole-file change or rename, or of hunks
    proposed on different versions of the file, and for two merges over the same lines."""
    by_id = {t.id: t for t in taken}
    out: list[Merge] = []
    used: set[str] = set()
    for merge_id, text in merges.items():
        first = by_id.get(merge_id)
        if first is None:
            raise ChangeError(f"The merge names {merge_id!r}, which is not a hunk taken: give it with the hunks to "
                              "take (`--take`), the ids are listed by `robotlab changes list`")
        if merge_id in used:
            raise ChangeError(f"Two merges cover {merge_id!r}: give one merge for overlapping hunks")
        group = [first]
        start, end = first.hunk.old_start, first.hunk.old_end
        grew = True
        while grew:
            grew = False
            for t in taken:
                if t in group or t.path != first.path:
                    continue
                if any(_overlap(t, g) for g in group) or _touches(start, end, t.hunk):
                    group.append(t)
                    start, end = min(start, t.hunk.old_start), max(end, t.hunk.old_end)
                    grew = True
        for t in group:
            if t.hunk.kind != "lines" or t.file.before != first.file.before:
                raise ChangeError(f"{t.id} cannot be merged with {merge_id}: a merge is of line changes to one "
                                  f"version of {display_path(first.path)}; take one of them instead")
            if t.id in used:
                raise ChangeError(f"Two merges cover {t.id!r}: give one merge for overlapping hunks")
        used.update(t.id for t in group)
        out.append(Merge(first.path, start, end, _lines(text, first.file.old_lines or [], end), tuple(group)))
    return out


def _lines(text: str, old: Sequence[str], end: int) -> tuple[str, ...]:
    """``text`` as the file's lines: it ends with a newline unless it replaces the file's last line that has none."""
    if text and not text.endswith("\n") and (end < len(old) or (old and old[-1].endswith("\n"))):
        text += "\n"
    return tuple(text.splitlines(keepends=True))


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


def _merged(files: list[TakenHunk], merges: Sequence[Merge] = ()) -> tuple[bytes | None, str | None]:
    """The content and new path of one file with the taken hunks (all of one base, none overlapping outside a
    merge of ``merges``)."""
    fc = files[0].file
    hunks = [t.hunk for t in files]
    if merges:
        merged = {id(t.hunk) for m in merges for t in m.hunks}
        spans: list[tuple[int, int, Sequence[str]]] = list(dict.fromkeys(
            (h.old_start, h.old_end, tuple(h.final_lines)) for h in hunks if id(h) not in merged))
        spans += [(m.start, m.end, list(m.lines)) for m in merges]
        return fc.encode("".join(_spliced(fc.old_lines or [], spans))), fc.new_path
    if all(t.file is fc for t in files) and {h.id for h in hunks} == {h.id for h in fc.hunks}:
        return fc.merge(pending="accepted").data if any(h.edited for h in hunks) else fc.after, fc.new_path
    rename = next((t.file.new_path for t in files if t.hunk.kind == "rename"), None)
    whole = next((t for t in files if t.hunk.kind == "file"), None)
    if whole is not None:
        h = whole.hunk
        data = whole.file.encode("".join(h.edited_lines)) if h.edited_lines is not None else whole.file.after
        return data, rename
    # The same change of two candidates (agree) once.
    lines = list(dict.fromkeys((h.old_start, h.old_end, tuple(h.final_lines)) for h in hunks if h.kind == "lines"))
    if not lines:
        return fc.before, rename
    assert fc.old_lines is not None
    return fc.encode("".join(_spliced(fc.old_lines, lines))), rename


def _spliced(old: Sequence[str], spans: Iterable[tuple[int, int, Sequence[str]]]) -> list[str]:
    """``old`` with each span's lines ``start``-``end`` replaced by its lines (spans that do not overlap)."""
    out: list[str] = []
    i = 0
    for start, end, lines in sorted(spans, key=lambda span: (span[0], span[1])):
        out.extend(old[i:start])
        out.extend(lines)
        i = max(i, end)
    out.extend(old[i:])
    return out


def unmerged_overlaps(taken: Sequence[TakenHunk], merges: Sequence[Merge]) -> list[tuple[TakenHunk, TakenHunk]]:
    """The pairs of ``taken`` hunks that cannot both be applied and that no merge of ``merges`` covers."""
    group = {t.id: index for index, m in enumerate(merges) for t in m.hunks}
    return [(a, b) for a, b in find_overlaps(taken)
            if a.id not in group or group.get(a.id) != group.get(b.id)]


def combine(sources: Sequence[CandidateChanges], take: Iterable[str], *, thread_id: str | None = None,
            store: CheckpointStore | None = None,
            merges: Mapping[str, str] | None = None) -> tuple[ChangeSet, list[TakenHunk]]:
    """One new change set of exactly the ``take`` hunks (ids from :func:`pending_hunks`), every hunk accepted.

    ``merges``: text a person wrote in place of overlapping hunks, by the id of one of them (see
    :func:`merge_groups`); a merge's hunk id is taken even when ``take`` does not name it.
    Raises :class:`OverlapError` when two taken hunks of different candidates touch the same lines outside a
    merge, and :class:`ChangeError` for an unknown id or candidates of different folders. ``thread_id`` names the
    thread whose history keeps the apply (its undo restores the folder); nothing is written here.
    """
    merges = dict(merges or {})
    taken = _resolve(sources, [*take, *merges])
    groups = merge_groups(taken, merges)
    overlaps = unmerged_overlaps(taken, groups)
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
        data, new_path = _merged(files, [m for m in groups if m.path == path])
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
    accepted, the others rejected) and tell its robot, in its review outcome, which hunks of whose were taken.
    A hunk the same as one taken (:func:`agree`) was applied too: it is accepted, and said taken."""
    ids = {t.id for t in taken}
    taken = [*taken, *(h for h in pending_hunks(sources) if h.id not in ids and any(agree(h, t) for t in taken))]
    for source in sources:
        ids = {t.hunk.id for t in taken if t.source is source}
        source.changes.settle_elsewhere(ids, note=_note(source, taken, len(sources)))
