"""The combined review of a comparison: every candidate's hunks per file, labelled by candidate (colour and
name); accept hunks from any; two accepted hunks over the same lines are shown side by side with the file as
it is, and Apply waits until one of them is picked ("Use this") or the person writes the lines themselves
("Edit a merge…": the merged text is applied in their place); Apply takes exactly the accepted hunks as one set (verify
first: a failing verify asks), undoable as one. The state is :class:`~ui.review.combined_model.CombinedSelection`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui.review.combined_model import CombinedSelection, Overlap
from ui.review.merge_edit import MergeDialog
from ui.theme import candidate_color, mono_font
from ui.widgets.common import ElidedLabel

if TYPE_CHECKING:
    from ui.tasks import TaskOwner
    from workspace.changes.combine import Merge, TakenHunk
    from workspace.session.compare import CombinedApply, Comparison

log = logging.getLogger("ui.review.combined")

_ID = Qt.ItemDataRole.UserRole
#: The widest the list's Candidate column starts (px): a longer name ends in "…", whole in its tooltip.
CANDIDATE_MAX_WIDTH = 120


def hunk_text(hunk: TakenHunk) -> str:
    """A hunk as diff lines (``-`` the file's, ``+`` the candidate's)."""
    h = hunk.hunk
    old = [f"-{line.rstrip(chr(10))}" for line in h.old_lines]
    new = [f"+{line.rstrip(chr(10))}" for line in h.final_lines]
    return "\n".join([h.header(), *old, *new])


class CombinedReview(QWidget):
    """The review of all candidates' changes (see the module docstring)."""

    #: The combined apply ended (its CombinedApply): the shell says so, the chat's cards follow.
    applied = Signal(object)
    #: A message for the person (a failed apply, a refused verify).
    message = Signal(str)

    def __init__(self, comparison: Comparison, *, tasks: TaskOwner, verify: str | None = None,
                 thread_id: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CombinedReview")
        self.setAccessibleName("Combined review")
        self.selection = CombinedSelection(comparison)
        self.tasks = tasks
        self.verify = verify
        self.thread_id = thread_id
        #: Asked when the verify fails (its output): True applies anyway. The shell puts a dialog here.
        self.ask_apply_anyway: Callable[[str], Awaitable[bool]] = _refuse
        #: Undoes the apply (the kept thread's history): set by the shell.
        self.undo: Callable[[], Awaitable[object]] | None = None
        self.result: CombinedApply | None = None
        self.merge_dialog: MergeDialog | None = None
        #: The candidates' threads (any of them open in the chat keeps this review in the dock).
        self.thread_ids = [c.thread_id for c in comparison.candidates if c.thread_id]
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        names = ", ".join(f"<span style='color:{candidate_color(c.index)}'><b>{c.label}</b></span>"
                          for c in comparison.candidates)
        self.title = QLabel(f"Changes of {len(comparison.candidates)} candidates: {names}")
        self.title.setWordWrap(True)
        layout.addWidget(self.title)
        split = QSplitter(Qt.Orientation.Vertical, self)
        self.tree = QTreeWidget(split)
        self.tree.setHeaderLabels(["Hunk", "Candidate", "Lines"])
        self.tree.setAccessibleName("Hunks of every candidate")
        self.preview = QPlainTextEdit(split)
        self.preview.setReadOnly(True)
        self.preview.setFont(mono_font())
        self.preview.setAccessibleName("The hunk's lines")
        layout.addWidget(split, 1)
        self.overlap_box = QFrame(self)
        self.overlap_box.setObjectName("CombinedOverlap")
        self.overlap_layout = QVBoxLayout(self.overlap_box)
        self.overlap_layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.overlap_box)
        row = QHBoxLayout()
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Apply exactly the accepted hunks as one set (verify first), undoable as one")
        self.apply_button.clicked.connect(self.apply)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setEnabled(False)
        self.undo_button.clicked.connect(self._undo)
        row.addWidget(self.status, 1)
        row.addWidget(self.undo_button)
        row.addWidget(self.apply_button)
        layout.addLayout(row)
        self.setFocusProxy(self.tree)  # the dock's shortcut puts the keyboard in the list: Space accepts a hunk
        self._fill()
        self.tree.itemChanged.connect(self._checked)
        self.tree.currentItemChanged.connect(lambda item, _old: self._show(item))
        self._update()

    # -- the list ---------------------------------------------------------------------------------------------
    def _fill(self) -> None:
        from workspace.changes.combine import find_agreements
        from workspace.sandbox import display_path

        self.items: dict[str, QTreeWidgetItem] = {}
        files = self.selection.files()
        agreements = self.agreements = find_agreements([h for hunks in files.values() for h in hunks])
        for path, hunks in files.items():
            # The file's row: its name and how many hunks in the first column (the others are the hunks').
            name = f"{display_path(path)} · {len(hunks)} hunk{'s' if len(hunks) != 1 else ''}"
            top = QTreeWidgetItem(self.tree, [name])
            top.setFirstColumnSpanned(True)
            top.setToolTip(0, name)
            for hunk in hunks:
                color = candidate_color(hunk.candidate)
                item = QTreeWidgetItem(top, [f"{hunk.id}  +{hunk.hunk.added} -{hunk.hunk.removed}",
                                             hunk.source.label, hunk.hunk.where()])
                item.setData(0, _ID, hunk.id)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(0, Qt.CheckState.Unchecked)
                item.setForeground(1, QBrush(QColor(color)))
                item.setToolTip(0, hunk.describe())
                item.setToolTip(1, hunk.source.label)  # a narrow dock cuts the columns ("…"): whole here
                item.setToolTip(2, hunk.hunk.where())
                same = agreements.get(hunk.id)
                if same:  # the same change as another candidate's: no conflict, applied once
                    item.setText(2, f"{hunk.hunk.where()} · same as {', '.join(same)}")
                    item.setToolTip(2, f"{', '.join(same)} make{'s' if len(same) == 1 else ''} the same change: "
                                       "take either or both, it is applied once")
                self.items[hunk.id] = item
            top.setExpanded(True)
        for column in range(3):
            self.tree.resizeColumnToContents(column)
        # In a narrow dock the candidate's name gives way first (it ends in "…"), so the lines still show.
        self.tree.setColumnWidth(1, min(self.tree.columnWidth(1), CANDIDATE_MAX_WIDTH))

    def show_candidate(self, index: int) -> bool:
        """The list at candidate ``index``'s first hunk (selected, its lines in the preview, the keyboard in the
        list); False when it has none here."""
        for item in self.items.values():
            hunk_id = item.data(0, _ID)
            if hunk_id and self.selection.hunk(str(hunk_id)).candidate == index:
                self.tree.setCurrentItem(item)
                self.tree.scrollToItem(item)
                self.tree.setFocus()
                return True
        return False

    def set_accepted(self, hunk_id: str, accepted: bool = True) -> None:
        """Accept (or leave out) a hunk, as its check box does."""
        self.items[hunk_id].setCheckState(0, Qt.CheckState.Checked if accepted else Qt.CheckState.Unchecked)

    def _checked(self, item: QTreeWidgetItem, column: int) -> None:
        hunk_id = item.data(0, _ID)
        if column != 0 or not hunk_id:
            return
        self.selection.accept(str(hunk_id), item.checkState(0) == Qt.CheckState.Checked)
        self._update()

    def _show(self, item: QTreeWidgetItem | None) -> None:
        hunk_id = item.data(0, _ID) if item is not None else None
        self.preview.setPlainText(hunk_text(self.selection.hunk(str(hunk_id))) if hunk_id else "")

    # -- overlaps -----------------------------------------------------------------------------------------------
    def _update(self) -> None:
        while self.overlap_layout.count():
            taken = self.overlap_layout.takeAt(0)
            child = taken.widget() if taken is not None else None
            if child is not None:
                child.deleteLater()
        self.overlap_panes: list[QWidget] = []
        for overlap in self.selection.overlaps():
            pane = self._overlap_pane(overlap)
            self.overlap_panes.append(pane)
            self.overlap_layout.addWidget(pane)
        merged = self.selection.merged()
        for merge in merged:
            self.overlap_layout.addWidget(self._merge_row(merge))
        problem = self.selection.problem() if self.result is None else None
        if self.result is None:
            merges = f" ({len(merged)} merge{'s' if len(merged) != 1 else ''} of yours)" if merged else ""
            self.status.setText(problem or f"{len(self.selection.accepted)} hunks accepted{merges}: Apply writes "
                                "them as one set")
        self.apply_button.setEnabled(problem is None and self.result is None)

    def _overlap_pane(self, overlap: Overlap) -> QWidget:
        pane = QFrame(self.overlap_box)
        pane.setObjectName("OverlapPane")
        pane.setFrameShape(QFrame.Shape.StyledPanel)
        outer = QVBoxLayout(pane)
        outer.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(self._side("The file as it is", "#6e7781", "".join(overlap.current), None), 1)
        for hunk in (overlap.first, overlap.second):
            row.addWidget(self._side(f"{hunk.source.label} ({hunk.id})", candidate_color(hunk.candidate),
                                     "".join(hunk.hunk.final_lines), hunk.id), 1)
        outer.addLayout(row)
        foot = QHBoxLayout()
        foot.addStretch(1)
        edit = QPushButton("Edit a merge…")
        edit.setObjectName(f"merge-{overlap.first.id}")
        edit.setToolTip("Write these lines yourself, from both hunks or the file as it is: your text is applied")
        edit.clicked.connect(lambda: self.edit_merge(overlap))
        foot.addWidget(edit)
        outer.addLayout(foot)
        return pane

    def _merge_row(self, merge: Merge) -> QWidget:
        row = QFrame(self.overlap_box)
        row.setObjectName("MergeRow")
        box = QHBoxLayout(row)
        box.setContentsMargins(4, 2, 4, 2)
        lines = f"line {merge.start + 1}" if merge.end - merge.start <= 1 else f"lines {merge.start + 1}-{merge.end}"
        label = QLabel(f"Your merge of {' and '.join(merge.ids)} ({lines}): {len(merge.lines)} lines")
        label.setToolTip("".join(merge.lines))
        box.addWidget(label, 1)
        drop = QPushButton("Drop merge")
        drop.clicked.connect(lambda: self.drop_merge(merge.hunks[0].id))
        box.addWidget(drop)
        return row

    def _side(self, title: str, color: str, text: str, hunk_id: str | None) -> QWidget:
        side = QWidget()
        box = QVBoxLayout(side)
        box.setContentsMargins(4, 4, 4, 4)
        # The name on a line of its own, ending in "…" (whole in its tooltip) when the dock is narrow: three
        # sides share its width. "Use this" under it (the file's side keeps the row empty: the texts line up).
        name = ElidedLabel(title, min_chars=4, tooltip=True)
        name.setObjectName("OverlapSideTitle")
        name.setStyleSheet(f"#OverlapSideTitle {{ color: {color}; font-weight: bold; }}")
        name.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        box.addWidget(name)
        head = QHBoxLayout()
        use = QPushButton("Use this")
        if hunk_id is not None:
            use.setObjectName(f"use-{hunk_id}")
            use.clicked.connect(lambda: self.pick(hunk_id))
            head.addWidget(use)
        else:
            room = QWidget()
            room.setFixedHeight(use.sizeHint().height())
            head.addWidget(room)
            use.deleteLater()
        head.addStretch(1)
        box.addLayout(head)
        body = QPlainTextEdit(text)
        body.setReadOnly(True)
        body.setFont(mono_font())
        body.setMaximumHeight(140)
        box.addWidget(body)
        return side

    def edit_merge(self, overlap: Overlap) -> MergeDialog:
        """"Edit a merge…" of ``overlap``: the box opens (not modal); "Use this merge" keeps the text."""
        start = self.selection.merge_start(overlap)
        dialog = self.merge_dialog = MergeDialog(start, where=overlap.first.path, parent=self)
        dialog.accepted.connect(lambda: self.merge(start.hunk_id, dialog.text()))
        dialog.open()
        return dialog

    def merge(self, hunk_id: str, text: str) -> None:
        """``text`` in place of ``hunk_id`` and the accepted hunks overlapping it."""
        from workspace.changes import ChangeError

        try:
            self.selection.merge(hunk_id, text)
        except ChangeError as exc:
            self.message.emit(f"Could not merge: {exc}")
            return
        self._sync_checks()
        self._update()

    def drop_merge(self, hunk_id: str) -> None:
        self.selection.drop_merge(hunk_id)
        self._update()

    def pick(self, hunk_id: str) -> None:
        """Keep ``hunk_id`` of an overlap: the other hunk is left out."""
        self.selection.pick(hunk_id)
        self._sync_checks()
        self._update()

    def _sync_checks(self) -> None:
        self.tree.blockSignals(True)
        try:
            for other, item in self.items.items():
                item.setCheckState(0, Qt.CheckState.Checked if other in self.selection.accepted
                                   else Qt.CheckState.Unchecked)
        finally:
            self.tree.blockSignals(False)

    # -- apply and undo ------------------------------------------------------------------------------------------
    def apply(self) -> None:
        if self.selection.problem() is None and self.result is None:
            self.apply_button.setEnabled(False)
            self.status.setText("Applying…" if not self.verify else f"Verifying ({self.verify})…")
            self.tasks.spawn(self.apply_now(), name="combined-apply")

    async def apply_now(self) -> CombinedApply | None:
        """Verify, then apply the accepted hunks as one set (a failing verify asks first)."""
        from workspace.changes import ChangeError
        from workspace.session.verify import VerifyFailed

        try:
            try:
                done = await self.selection.apply(verify=self.verify, thread_id=self.thread_id)
            except VerifyFailed as failed:
                if not await self.ask_apply_anyway(failed.event.output or str(failed)):
                    self._refused("The verify failed: nothing was written")
                    return None
                done = await self.selection.apply(verify=self.verify, thread_id=self.thread_id,
                                                  if_verify_fails="apply")
        except (ChangeError, ValueError, OSError) as exc:
            self._refused(f"Could not apply: {exc}")
            return None
        if not done.ok:
            self._refused(done.result.message() or "Nothing was written: a file changed on disk since the proposal")
            return done
        self.result = done
        self.status.setText(f"Applied {len(done.taken)} hunks as one set"
                            + (f" (verify {'passed' if done.verify.passed else 'failed'})" if done.verify else ""))
        self.undo_button.setEnabled(self.undo is not None)
        self._mark_taken({t.id for t in done.taken})
        self.tree.setEnabled(False)
        self._update()
        self.applied.emit(done)
        return done

    def _mark_taken(self, taken: set[str]) -> None:
        """After the apply: each row says whether its hunk was applied (taken, or the same as one taken) or not
        taken (struck out)."""
        self.tree.blockSignals(True)
        try:
            for hunk_id, item in self.items.items():
                hunk = self.selection.hunk(hunk_id)
                applied = hunk_id in taken or any(same in taken for same in self.agreements.get(hunk_id, ()))
                item.setText(1, f"{hunk.source.label} · {'applied' if applied else 'not taken'}")
                font = item.font(0)
                font.setStrikeOut(not applied)
                item.setFont(0, font)
                item.setToolTip(1, "Applied in the combined set" if applied else "Not taken in the combined apply")
            self.tree.resizeColumnToContents(1)
        finally:
            self.tree.blockSignals(False)

    def _refused(self, why: str) -> None:
        """Apply wrote nothing: the review as it was, and why in its status line (after the refresh, which
        would put the count of accepted hunks there) and in the window's message."""
        self._update()
        self.status.setText(why)
        self.message.emit(why)

    def _undo(self) -> None:
        if self.undo is not None:
            self.undo_button.setEnabled(False)
            self.tasks.spawn(self._undo_now(), name="combined-undo")

    async def _undo_now(self) -> None:
        assert self.undo is not None
        await self.undo()
        self.status.setText("Undone: the folder is as it was before the apply")


async def _refuse(_output: str) -> bool:
    return False
