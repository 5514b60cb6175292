"""Attachment chips (under the message box before sending, and on sent messages), the viewer that opens
one, and reading what is dropped or pasted.

A chip shows the name, the size and a mark of its kind; clicking it opens the attachment (text in a
viewer, an image in a preview, a PDF or other file of the folder with the system's application);
a removable chip (the composer's) has a × button. The core does the reading and the limits
(:mod:`workspace.attachments`); this module only shows them and turns Qt's mime data into files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QMimeData, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QImage, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.screen import size_to_screen
from ui.widgets.flow import FlowRow
from workspace.attachments import MAX_IMAGE_BYTES, Attachment, describe_size

#: What a chip needs: the core's Attachment (composer) or the chat's AttachmentChip (a sent message).
ChipData = Any

#: The icon of each kind of attachment (themed SVGs: an emoji is a blank box without an emoji font).
_ICONS = {"image": "image", "resource": "server", "file": "file"}


def chip_text(item: ChipData) -> str:
    return f"{item.name} · {describe_size(int(item.size))}"


def chip_icon(item: ChipData) -> str:
    """The icon's name: an image, an MCP resource or a file."""
    kind = "image" if str(getattr(item, "mime", "")).startswith("image/") else str(getattr(item, "kind", "file"))
    return _ICONS.get(kind, "file")


def chip_tooltip(item: ChipData) -> str:
    where = (f"{item.server}: {item.uri}" if getattr(item, "server", None) else getattr(item, "path", None)
             or item.name)
    note = f"\n{item.note}" if getattr(item, "note", None) else ""
    return f"{where}\n{item.mime}, {describe_size(int(item.size))}{note}\nClick to open"


class AttachmentChip(QFrame):
    """One attachment: its name and size (click: open), and × when ``removable``."""

    open_requested = Signal(object)
    remove_requested = Signal(object)

    def __init__(self, item: ChipData, *, removable: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.item = item
        self.setObjectName("AttachmentChip")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 1, 2 if removable else 6, 1)
        row.setSpacing(2)
        self.button = QToolButton(self)
        self.button.setObjectName("AttachmentChipName")
        self.button.setAutoRaise(True)
        self.button.setText(chip_text(item))
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setToolTip(chip_tooltip(item))
        self.button.setAccessibleName(f"Open attachment {item.name}")
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.clicked.connect(lambda: self.open_requested.emit(self.item))
        row.addWidget(self.button)
        self.remove_button: QToolButton | None = None
        if removable:
            self.remove_button = QToolButton(self)
            self.remove_button.setObjectName("AttachmentChipRemove")
            self.remove_button.setAutoRaise(True)
            self.remove_button.setIconSize(QSize(12, 12))
            self.remove_button.setToolTip(f"Remove {item.name}")
            self.remove_button.setAccessibleName(f"Remove attachment {item.name}")
            self.remove_button.clicked.connect(lambda: self.remove_requested.emit(self.item))
            row.addWidget(self.remove_button)
        self._draw_icons()

    def _draw_icons(self) -> None:
        """The icons in the theme's colours (again after a switch of theme: the palette changes)."""
        muted = theme.colors().muted
        self.button.setIcon(theme.icon(chip_icon(self.item), muted, 14))
        if self.remove_button is not None:
            self.remove_button.setIcon(theme.icon("close", muted, 12))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._draw_icons()


class ChipRow(QWidget):
    """Chips in a row that wraps; hidden while empty."""

    open_requested = Signal(object)
    remove_requested = Signal(object)

    def __init__(self, *, removable: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("AttachmentChips")
        self.removable = removable
        self._layout = FlowRow(self, spacing=6)
        self.chips: list[AttachmentChip] = []
        self.setVisible(False)

    def set_items(self, items: Sequence[ChipData]) -> None:
        if [c.item for c in self.chips] == list(items):
            return
        for chip in self.chips:
            self._layout.removeWidget(chip)
            chip.deleteLater()
        self.chips = []
        for item in items:
            chip = AttachmentChip(item, removable=self.removable, parent=self)
            chip.open_requested.connect(self.open_requested)
            chip.remove_requested.connect(self.remove_requested)
            self._layout.addWidget(chip)
            self.chips.append(chip)
        self.setVisible(bool(self.chips))
        self.updateGeometry()

    def names(self) -> list[str]:
        return [str(c.item.name) for c in self.chips]


# -- opening an attachment ---------------------------------------------------------------------------
class AttachmentViewer(QDialog):
    """An attachment's content: its text (read-only, selectable) or its image, scaled to fit."""

    def __init__(self, attachment: Attachment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("AttachmentViewer")
        self.setWindowTitle(f"{attachment.name} — {attachment.mime}, {describe_size(attachment.size)}")
        layout = QVBoxLayout(self)
        caption = QLabel(attachment.origin + (f" · {attachment.note}" if attachment.note else ""), self)
        caption.setObjectName("Muted")
        caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(caption)
        self.text_view: QPlainTextEdit | None = None
        self.image_label: QLabel | None = None
        if attachment.is_image:
            image = QImage.fromData(attachment.content())
            label = QLabel(self)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            label.setAccessibleName(f"Image {attachment.name}")
            if image.isNull():
                label.setText(f"{attachment.name} could not be shown as an image")
            else:
                pixmap = QPixmap.fromImage(image)
                if pixmap.width() > 900 or pixmap.height() > 700:
                    pixmap = pixmap.scaled(900, 700, Qt.AspectRatioMode.KeepAspectRatio,
                                           Qt.TransformationMode.SmoothTransformation)
                label.setPixmap(pixmap)
            scroll = QScrollArea(self)
            scroll.setWidget(label)
            scroll.setWidgetResizable(True)
            layout.addWidget(scroll, 1)
            self.image_label = label
        else:
            view = QPlainTextEdit(self)
            view.setReadOnly(True)
            view.setFont(theme.mono_font())
            view.setPlainText(attachment.text or "")
            view.setAccessibleName(f"Text of {attachment.name}")
            layout.addWidget(view, 1)
            self.text_view = view
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        size_to_screen(self, QSize(760, 560))


def open_attachment(parent: QWidget, attachment: Attachment, *, folder: Path | None,
                    open_url: Callable[[QUrl], bool] = QDesktopServices.openUrl) -> QDialog | None:
    """Open ``attachment``: text and images in a viewer (returned, shown non-modally); a PDF (or another file
    whose text was extracted) of the opened folder with the system's application."""
    if not attachment.is_image and attachment.mime == "application/pdf" and attachment.path:
        path = Path(attachment.path)
        full = path if path.is_absolute() else (folder / path if folder is not None else path)
        if full.is_file():
            open_url(QUrl.fromLocalFile(str(full)))
            return None
    viewer = AttachmentViewer(attachment, parent)
    viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    viewer.show()
    return viewer


# -- dropped and pasted data ---------------------------------------------------------------------------
def dropped_files(mime: QMimeData) -> list[str]:
    """The local files of dropped or pasted data (file URLs)."""
    if not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile() and url.toLocalFile()]


def pasted_image(mime: QMimeData, *, name: str = "pasted-image.png",
                 max_image_bytes: int = MAX_IMAGE_BYTES) -> Attachment | None:
    """Image data on the clipboard (a screenshot) as a PNG attachment; None when there is none."""
    if not mime.hasImage():
        return None
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    image = mime.imageData()
    if not isinstance(image, QImage):
        image = QImage(image) if image is not None else QImage()
    if image.isNull():
        return None
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs say bytes; PySide6 takes str
    buffer.close()
    return Attachment.from_bytes(bytes(data.data()), name=name, mime="image/png", max_image_bytes=max_image_bytes)


def has_attachable(mime: QMimeData) -> bool:
    """Whether the data brings files or an image (else it is text for the message box)."""
    return bool(dropped_files(mime)) or mime.hasImage()


def relative_name(path: str, folder: Path | None) -> str:
    """``path`` relative to the opened folder when inside it (as the sandbox wants it), else as given."""
    if folder is None:
        return path
    try:
        return Path(os.path.realpath(path)).relative_to(Path(os.path.realpath(folder))).as_posix()
    except ValueError:
        return path
