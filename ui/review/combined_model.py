"""The combined review of a comparison, Qt-free: every candidate's pending hunks per file, the hunks accepted,
the accepted hunks that overlap (and cannot both be applied), and the apply of exactly the accepted ones.

It works on a :class:`~workspace.session.compare.Comparison` (the candidates' change sets): the hunk ids are
``c<candidate>.<hunk id>``; :meth:`CombinedSelection.apply` is ``comparison.take``: verify on the combined set
first, one atomic apply, undoable as one in the kept thread's history. Nothing is written before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspace.changes.combine import Merge, TakenHunk
    from workspace.session.compare import CombinedApply, Comparison


@dataclass(frozen=True, slots=True)
class MergeStart:
    """What an edit of a merge starts from: the hunk it is kept under, the hunks it covers, the file's lines
    there as they are (``current``) and as each candidate makes them, one after the other (``both``)."""

    hunk_id: str
    ids: list[str]
    current: str
    both: str


@dataclass(frozen=True, slots=True)
class Overlap:
    """Two accepted hunks of different candidates over the same lines, and the file's lines there as it is."""

    first: TakenHunk
    second: TakenHunk
    #: The file as it is over both hunks' lines (the base both candidates proposed on).
    current: list[str]

    @property
    def ids(self) -> tuple[str, str]:
        return self.first.id, self.second.id


class CombinedSelection:
    """Which of a comparison's hunks are accepted, and what stands between them and Apply."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self.hunks: list[TakenHunk] = comparison.hunks()
        self._by_id = {h.id: h for h in self.hunks}
        self.accepted: list[str] = []
        #: The person's merges of overlapping hunks: a hunk id → the text applied in place of it and the accepted
        #: hunks it overlaps (``comparison.take(merges=...)``).
        self.merges: dict[str, str] = {}

    def files(self) -> dict[str, list[TakenHunk]]:
        """The hunks per file (files in the order first proposed, each file's hunks by candidate)."""
        out: dict[str, list[TakenHunk]] = {}
        for hunk in self.hunks:
            out.setdefault(hunk.path, []).append(hunk)
        return out

    def hunk(self, hunk_id: str) -> TakenHunk:
        try:
            return self._by_id[hunk_id]
        except KeyError:
            raise KeyError(f"No pending hunk {hunk_id!r} in this comparison (the ids are c<candidate>.<hunk>)") from None

    def accept(self, hunk_id: str, accepted: bool = True) -> None:
        self.hunk(hunk_id)
        if accepted and hunk_id not in self.accepted:
            self.accepted.append(hunk_id)
        elif not accepted and hunk_id in self.accepted:
            self.accepted.remove(hunk_id)
            self.merges = {m: text for m, text in self.merges.items() if hunk_id not in self._merged_ids(m)}

    def _groups(self, merges: dict[str, str]) -> list[Merge]:
        from workspace.changes.combine import merge_groups

        return merge_groups([self._by_id[i] for i in self.accepted], merges)

    def _merged_ids(self, merge_id: str) -> list[str]:
        if merge_id not in self.accepted:
            return [merge_id]
        return self._groups({merge_id: ""})[0].ids

    def overlaps(self) -> list[Overlap]:
        """The accepted hunks that cannot both be applied (and no merge covers), each pair with the file as it is
        over their lines."""
        from workspace.changes.combine import unmerged_overlaps

        pairs = unmerged_overlaps([self._by_id[i] for i in self.accepted], self._groups(self.merges))
        out = []
        for a, b in pairs:
            lines = a.file.old_lines or []
            start = min(a.hunk.old_start, b.hunk.old_start)
            end = max(a.hunk.old_end, b.hunk.old_end)
            out.append(Overlap(a, b, list(lines[start:end])))
        return out

    def merge_start(self, overlap: Overlap) -> MergeStart:
        """What "Edit a merge…" covers for ``overlap``: the lines of the file (those both hunks and any accepted
        hunk overlapping them change) as they are, and as each candidate's hunks make them, one after the other."""
        from workspace.changes.combine import merge_groups

        group = merge_groups([self._by_id[i] for i in self.accepted if i not in self._merged_elsewhere(overlap)],
                             {overlap.first.id: ""})[0]
        old = overlap.first.file.old_lines or []
        current = old[group.start:group.end]
        both: list[str] = []
        for candidate in dict.fromkeys(h.candidate for h in group.hunks):
            rows = list(current)
            for h in sorted((h for h in group.hunks if h.candidate == candidate), key=lambda h: -h.hunk.old_start):
                rows[h.hunk.old_start - group.start:h.hunk.old_end - group.start] = h.hunk.final_lines
            both.extend(rows)
        return MergeStart(overlap.first.id, group.ids, "".join(current), "".join(both))

    def _merged_elsewhere(self, overlap: Overlap) -> set[str]:
        return {i for m in self.merges for i in self._merged_ids(m) if m not in overlap.ids}

    def merge(self, hunk_id: str, text: str) -> None:
        """The person's ``text`` in place of ``hunk_id`` and the accepted hunks overlapping it (both accepted)."""
        self.accept(hunk_id)
        self._groups({**self.merges, hunk_id: text})  # a merge that cannot be made says why, now
        self.merges[hunk_id] = text

    def drop_merge(self, hunk_id: str) -> None:
        self.merges.pop(hunk_id, None)

    def merged(self) -> list[Merge]:
        """The merges, with the lines and hunks each covers."""
        return self._groups(self.merges)

    def pick(self, hunk_id: str) -> None:
        """Keep ``hunk_id`` and leave out every accepted hunk it overlaps."""
        self.accept(hunk_id)
        for overlap in self.overlaps():
            if hunk_id in overlap.ids:
                other = overlap.second.id if overlap.first.id == hunk_id else overlap.first.id
                self.accept(other, False)

    def problem(self) -> str | None:
        """Why Apply cannot go now (None: it can)."""
        if not self.accepted:
            return "Accept the hunks to apply (from any candidate)"
        overlaps = self.overlaps()
        if overlaps:
            names = "; ".join(f"{o.first.id} and {o.second.id}" for o in overlaps)
            return f"Two accepted hunks change the same lines ({names}): pick one of each pair, or edit a merge"
        return None

    async def apply(self, *, verify: str | None = None, thread_id: str | None = None,
                    if_verify_fails: str = "refuse") -> CombinedApply:
        """``comparison.take`` of exactly the accepted hunks (raises ``VerifyFailed`` when the verify fails and
        ``if_verify_fails`` is "refuse"; ``OverlapError`` when two overlap)."""
        problem = self.problem()
        if problem is not None:
            raise ValueError(problem)
        return await self.comparison.take(list(self.accepted), verify=verify, thread_id=thread_id,
                                          if_verify_fails=if_verify_fails, merges=dict(self.merges))
