"""The thread list: new thread, full-text search across threads, rename, delete (with undo)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QFont, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.models.threads import ThreadListModel


class ThreadDelegate(QStyledItemDelegate):
    """Two lines per thread: the title, and the robot and age (or the search snippet)."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        # Rows are as wide as the list (titles elide): a wider hint would scroll a narrow sidebar sideways.
        return QSize(80, 46)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        from PySide6.QtWidgets import QStyle  # imported on first paint of a row: startup time

        c = theme.colors()
        painter.save()
        rect: QRect = option.rect
        state = option.state
        bg = None
        if state & QStyle.StateFlag.State_Selected:
            bg = QColor(c.selection)
        elif state & QStyle.StateFlag.State_MouseOver:
            bg = QColor(c.border)
        if bg is not None:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(bg)
            painter.drawRoundedRect(rect.adjusted(2, 1, -2, -1), 8, 8)
        title = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        subtitle = str(index.data(ThreadListModel.SubtitleRole) or "")
        font = QFont(option.font)
        font.setWeight(QFont.Weight.DemiBold)
        painter.setFont(font)
        painter.setPen(QColor(c.text))
        inner = rect.adjusted(12, 5, -10, -5)
        fm = painter.fontMetrics()
        painter.drawText(QRect(inner.left(), inner.top(), inner.width(), fm.height()),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         fm.elidedText(title, Qt.TextElideMode.ElideRight, inner.width()))
        small = QFont(option.font)
        small.setPointSizeF(max(7.0, small.pointSizeF() - 1.5))
        painter.setFont(small)
        painter.setPen(QColor(c.muted))
        fm2 = painter.fontMetrics()
        painter.drawText(QRect(inner.left(), inner.bottom() - fm2.height(), inner.width(), fm2.height()),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         fm2.elidedText(subtitle, Qt.TextElideMode.ElideRight, inner.width()))
        painter.restore()


class Sidebar(QFrame):
    new_thread_requested = Signal()
    thread_selected = Signal(str)
    search_changed = Signal(str)
    rename_requested = Signal(str, str)
    delete_requested = Signal(str)
    export_requested = Signal(str)

    def __init__(self, model: ThreadListModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Sidebar")
        self.model = model
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 8, 8)
        layout.setSpacing(10)

        top = QHBoxLayout()
        logo = QLabel(self)
        logo.setPixmap(theme.app_icon().pixmap(26, 26))
        top.addWidget(logo)
        title = QLabel("RobotLab", self)
        title.setObjectName("SidebarTitle")
        top.addWidget(title)
        top.addStretch(1)
        layout.addLayout(top)

        self.new_button = QPushButton("  New thread", self)
        self.new_button.setObjectName("NewThreadButton")
        self.new_button.setIcon(theme.icon("plus", theme.colors().accent_text, 16))
        self.new_button.setToolTip("New thread (Ctrl+N)")
        self.new_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.new_button.clicked.connect(self.new_thread_requested)
        layout.addWidget(self.new_button)

        self.search = QLineEdit(self)
        self.search.setObjectName("SearchField")
        self.search.setAccessibleName("Search all threads")
        self.search.setPlaceholderText("Search all threads  (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self._search_icon = self.search.addAction(theme.icon("search", theme.colors().muted, 16),
                                                  QLineEdit.ActionPosition.LeadingPosition)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(lambda: self.search_changed.emit(self.search.text().strip()))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.search.returnPressed.connect(self._activate_first)
        layout.addWidget(self.search)

        self.section = QLabel("THREADS", self)
        self.section.setObjectName("SidebarSection")
        layout.addWidget(self.section)
        self.empty_label = QLabel("", self)
        self.empty_label.setObjectName("Muted")
        self.empty_label.setWordWrap(True)
        layout.addWidget(self.empty_label)

        self.list = QListView(self)
        self.list.setObjectName("ThreadList")
        self.list.setAccessibleName("Threads")
        self.list.setModel(model)
        self.list.setItemDelegate(ThreadDelegate(self.list))
        self.list.setMouseTracking(True)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.activated.connect(self._on_activated)
        self.list.clicked.connect(self._on_activated)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        layout.addWidget(self.list, 1)
        model.modelReset.connect(self._update_empty)
        self._update_empty()

        for text, key, slot in (("Rename…", "F2", self.rename_current), ("Delete", "Delete", self.delete_current)):
            action = QAction(text, self.list)
            action.setShortcut(key)
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            action.triggered.connect(slot)
            self.list.addAction(action)

    def retheme(self) -> None:
        self.new_button.setIcon(theme.icon("plus", theme.colors().accent_text, 16))
        self._search_icon.setIcon(theme.icon("search", theme.colors().muted, 16))
        self.list.viewport().update()

    def _update_empty(self) -> None:
        if self.model.rowCount() == 0:
            self.empty_label.setText("No matches in any thread." if self.model.searching else
                                     "No threads yet. Send a message to start one (Ctrl+N for a new thread).")
            self.empty_label.setVisible(True)
        else:
            self.empty_label.setVisible(False)
        self.section.setText("SEARCH RESULTS" if self.model.searching else "THREADS")

    def _activate_first(self) -> None:
        if self.model.rowCount():
            self.list.setCurrentIndex(self.model.index(0))
            self._on_activated(self.model.index(0))

    def _on_activated(self, index: QModelIndex) -> None:
        if index.isValid():
            self.thread_selected.emit(str(index.data(ThreadListModel.ThreadIdRole)))

    def select_thread(self, thread_id: str | None) -> None:
        row = self.model.row_of(thread_id) if thread_id else -1
        if row >= 0:
            self.list.setCurrentIndex(self.model.index(row))
        else:
            self.list.clearSelection()

    def current_thread(self) -> str | None:
        index = self.list.currentIndex()
        return str(index.data(ThreadListModel.ThreadIdRole)) if index.isValid() else None

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def rename_current(self) -> None:
        index = self.list.currentIndex()
        if not index.isValid():
            return
        thread_id = str(index.data(ThreadListModel.ThreadIdRole))
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename thread")
        dialog.setLabelText("New title:")
        dialog.setTextValue(str(index.data(Qt.ItemDataRole.DisplayRole)))
        dialog.textValueSelected.connect(lambda text: self.rename_requested.emit(thread_id, text.strip())
                                         if text.strip() else None)
        dialog.open()

    def delete_current(self) -> None:
        thread_id = self.current_thread()
        if thread_id:
            self.delete_requested.emit(thread_id)

    def _menu(self, pos: QPoint) -> None:
        index = self.list.indexAt(pos)
        if not index.isValid():
            return
        self.list.setCurrentIndex(index)
        thread_id = str(index.data(ThreadListModel.ThreadIdRole))
        menu = QMenu(self)
        menu.addAction("Rename…", self.rename_current)
        menu.addAction("Export…", lambda: self.export_requested.emit(thread_id))
        menu.addSeparator()
        menu.addAction("Delete", lambda: self.delete_requested.emit(thread_id))
        menu.popup(self.list.viewport().mapToGlobal(pos))
