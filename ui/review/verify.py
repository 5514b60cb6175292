"""The verify strip of the review: the verify command's latest result on the change set about to be written.

A folder's or robot's verify command (``review.verify``, a robot's ``verify:``) runs in the sandbox when a run
proposes changes and again on exactly the accepted hunks before Apply
(:meth:`workspace.session.ThreadSession.start_verify`). The strip shows it: ✓ or ✗ with words (never colour
alone), the command, its exit code, how long it took, which subset it ran on, the output (bounded, monospace,
behind a toggle), a running clock while it goes, and "Verify again". :class:`VerifyFailedQuestion` is what
Apply asks when the accepted hunks failed it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.formatting import format_duration, strip_ansi
from ui.widgets.common import ElidedLabel

if TYPE_CHECKING:
    from workspace import events as ev
    from workspace.session.verify import VerifyProgress

#: The end of a verify's output the strip keeps (a test suite's failures are at its end).
OUTPUT_CHARS = 20_000
#: Lines of output the strip shows before it scrolls.
OUTPUT_LINES = 8

SUBSET_WORDS = {"proposed": "on the proposed changes", "accepted": "on the accepted hunks"}


def bounded_output(text: str, limit: int = OUTPUT_CHARS) -> str:
    """The end of ``text`` (at most ``limit`` characters, from a line's start), with a note of what was cut."""
    text = strip_ansi(text).rstrip("\n")
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    newline = text.find("\n", cut, cut + 200)
    cut = newline + 1 if newline >= 0 else cut
    return f"[… {cut:,} characters of output before this …]\n" + text[cut:]


def verdict(event: ev.VerifyFinished) -> str:
    """"✓ Verify passed" / "✗ Verify failed" / "✗ Verify timed out": the mark and the words."""
    if event.passed:
        return "✓ Verify passed"
    return "✗ Verify timed out" if event.timed_out else "✗ Verify failed"


def details(event: ev.VerifyFinished) -> str:
    """"exit code 1 · 2.1 s · on the accepted hunks"."""
    code = "timed out" if event.timed_out else f"exit code {event.exit_code}"
    return f"{code} · {format_duration(event.duration)} · {SUBSET_WORDS.get(event.subset, event.subset)}"


class VerifyStrip(QFrame):
    """The verify result on the candidate about to be written (hidden while no verify command is in force)."""

    #: "Verify again" was pressed.
    verify_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("VerifyStrip")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(4)
        top = QHBoxLayout()
        top.setSpacing(6)
        self.verdict = QLabel("", self)
        self.verdict.setObjectName("VerifyVerdict")
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.verdict)
        top.addStretch(1)
        self.again_button = QPushButton("Verify again", self)
        self.again_button.setToolTip("Run the verify command again in the sandbox: on the accepted hunks when some "
                                     "are accepted, else on everything proposed")
        self.again_button.clicked.connect(self.verify_requested)
        top.addWidget(self.again_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)
        self.details = ElidedLabel("", self, tooltip=True)
        self.details.setObjectName("Muted")
        self.details.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.details)
        row = QHBoxLayout()
        row.setSpacing(4)
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("OutputToggle")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.toggled.connect(self._on_toggled)
        row.addWidget(self.toggle)
        self.command = ElidedLabel("", self, tooltip=True)
        self.command.setFont(theme.mono_font())
        self.command.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        row.addWidget(self.command, 1)
        layout.addLayout(row)
        self.output = QPlainTextEdit(self)
        self.output.setObjectName("ToolOutput")
        self.output.setAccessibleName("Verify output")
        self.output.setReadOnly(True)
        self.output.setFont(theme.mono_font())
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.output.setVisible(False)
        layout.addWidget(self.output)
        self._on_toggled(False)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)
        #: What the strip shows: the verify going now (running) or the latest ended one.
        self.progress: VerifyProgress | None = None
        #: The latest result shown (kept while a newer verify runs).
        self.result: ev.VerifyFinished | None = None
        #: Something is shown (a verify command is in force); False: the strip is hidden.
        self.active = False
        self._fit()
        self.setVisible(False)

    # -- what it shows ---------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.progress is not None and self.progress.running

    def clear(self) -> None:
        """Nothing to show (another thread, no verify command)."""
        self.progress, self.result = None, None
        self._clock.stop()
        self.active = False
        self.setVisible(False)

    def show_command(self, command: str) -> None:
        """A verify command is in force but has not run on this set yet."""
        self.progress, self.result = None, None
        self._clock.stop()
        self._set_verdict("Not verified yet", "")
        self.details.setText("the verify command runs when a robot proposes changes")
        self._set_command(command)
        self._set_output("")
        self.active = True
        self.setVisible(True)

    def show_progress(self, progress: VerifyProgress) -> None:
        """A verify started, ended, or could not run."""
        if progress.running:
            self.progress = progress
            self._set_verdict("◷ Verifying…", "")
            self._set_command(progress.command)
            self._tick()
            self._clock.start()
        else:
            self._clock.stop()
            if progress.event is not None:
                self.show_result(progress.event)
                self.progress = progress
                return
            self.progress = progress
            if progress.superseded:
                if self.result is not None:
                    self.show_result(self.result)
                else:
                    self._set_verdict("Not verified", "")
                    self.details.setText("the verify was stopped before it ended")
            else:
                self._set_verdict("⚠ Verify could not run", "error")
                self.details.setText(progress.error or "")
                self.details.setToolTip(progress.error or "")
        self.again_button.setEnabled(not self.running)
        self.active = True
        self.setVisible(True)

    def show_result(self, event: ev.VerifyFinished) -> None:
        self.result = event
        self._clock.stop()
        self._set_verdict(verdict(event), "success" if event.passed else "error")
        self.details.setText(details(event))
        self._set_command(event.command)
        self._set_output(event.output)
        self.again_button.setEnabled(True)
        self.setAccessibleDescription(f"{verdict(event)}: {event.command}, {details(event)}")
        if not event.passed and not self.toggle.isChecked():
            self.toggle.setChecked(True)  # a failure shows what failed
        self.active = True
        self.setVisible(True)

    def show_like(self, other: VerifyStrip) -> None:
        """Show what ``other`` shows (the full-size review mirrors the dock's strip)."""
        if not other.active:
            self.clear()
        elif other.progress is not None and other.progress.running:
            self.show_progress(other.progress)
        elif other.result is not None:
            self.show_result(other.result)
            self.progress = other.progress
        elif other.progress is not None:
            self.show_progress(other.progress)
        else:
            self.show_command(other.command.text())

    def _tick(self) -> None:
        progress = self.progress
        if progress is None or not progress.running:
            return
        elapsed = max(0.0, time.monotonic() - progress.started)
        subset = SUBSET_WORDS.get(progress.subset, progress.subset)
        self.details.setText(f"running for {format_duration(elapsed)} · {subset}")
        self.again_button.setEnabled(False)
        self.setAccessibleDescription(f"Verifying {subset}: {progress.command}")

    def _set_verdict(self, text: str, kind: str) -> None:
        c = theme.colors()
        color = {"success": c.success, "error": c.error}.get(kind, c.muted)
        self.verdict.setText(text)
        self.verdict.setStyleSheet(f"color: {color}; font-weight: 600;")
        self.verdict.setAccessibleName(text.lstrip("✓✗◷⚠ "))

    def _set_command(self, command: str) -> None:
        self.command.setText(command)
        self.command.setToolTip(f"The verify command: {command}")

    def _set_output(self, output: str) -> None:
        text = bounded_output(output)
        self.output.setPlainText(text)
        lines = text.count("\n") + 1 if text else 0
        self.toggle.setText(f"Output · {lines} line{'s' if lines != 1 else ''}" if text else "No output")
        self.toggle.setEnabled(bool(text))
        if not text:
            self.toggle.setChecked(False)
        self._fit()
        bar = self.output.verticalScrollBar()
        bar.setValue(bar.maximum())  # the end: where a test run says what failed

    def _fit(self) -> None:
        lines = max(1, min(OUTPUT_LINES, self.output.blockCount()))
        metrics = self.output.fontMetrics()
        margins = 2 * self.output.document().documentMargin() + 2 * self.output.frameWidth() + 4
        self.output.setFixedHeight(int(metrics.lineSpacing() * lines + margins))

    def _on_toggled(self, checked: bool) -> None:
        self.output.setVisible(checked)
        self.toggle.setIcon(theme.icon("chevron-down" if checked else "chevron-right", theme.colors().muted, 14))

    @property
    def output_text(self) -> str:
        return self.output.toPlainText()


class VerifyFailedQuestion(QMessageBox):
    """Apply of accepted hunks that failed the verify command: "Apply anyway" / "Cancel" (Cancel writes nothing)."""

    def __init__(self, event: ev.VerifyFinished, parent: QWidget | None) -> None:
        why = "timed out" if event.timed_out else f"exited with code {event.exit_code}"
        super().__init__(QMessageBox.Icon.Warning, "Verify failed",
                         f"The verify command “{event.command}” {why} on the accepted hunks. Apply them anyway?",
                         QMessageBox.StandardButton.NoButton, parent)
        self.setInformativeText("Nothing has been written yet. The robot is told the verify failed either way, "
                                "so it can fix what failed.")
        tail = bounded_output(event.output, 3_000)
        if tail:
            self.setDetailedText(tail)
        self.button_apply = self.addButton("Apply anyway", QMessageBox.ButtonRole.DestructiveRole)
        self.button_cancel = self.addButton("Cancel", QMessageBox.ButtonRole.RejectRole)
        self.setDefaultButton(self.button_cancel)
        self.setEscapeButton(self.button_cancel)


__all__ = ["VerifyFailedQuestion", "VerifyStrip", "bounded_output", "details", "verdict"]
