"""The thread list: new thread, full-text search across threads, rename, delete (with undo)."""

from __future__ import annotations

from collections.abc import Iterator

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QColor, QFont, QFontMetrics, QKeyEvent, QPainter, QPen
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
from ui.threads.model import HIT_KINDS, ThreadItem, ThreadListModel, fitted_parts, hit_date, snippet_parts
from ui.widgets.common import name_line_edit_buttons
from ui.widgets.staged import StagedBuild

#: The icon of a thread's run state: (icon name, the theme colour it is drawn in).
RUN_STATE_ICONS = {
    "streaming": ("regenerate", "accent"),
    "background": ("regenerate", "accent"),  # its run ended, what it delegated goes on: still working
    "approval": ("shield", "warning"),
    "review": ("diff", "warning"),
    "finished": ("check", "success"),
    "failed": ("error", "error"),
}


#: A row's line of text: at the left, centred in its height (or-ed once here, not for every row painted).
_LINE = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter


class ThreadDelegate(QStyledItemDelegate):
    """Two lines per thread: the title, and the robot and age. A search hit has three: the title and
    the date of the matching message, the robot and where the match is, and the matching text with
    the match highlighted."""

    ROW_HEIGHT = 46
    HIT_HEIGHT = 66

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        #: The list's font and the two made of it (its bold titles, its small second lines), made once per font.
        self._font_set: tuple[QFont, QFont, QFont] | None = None

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        # Rows are as wide as the list (titles elide): a wider hint would scroll a narrow sidebar sideways.
        model = index.model()
        searching = bool(getattr(model, "searching", False))
        fm = option.fontMetrics
        lines = 3 if searching else 2
        # At least the design's height; more when the font is bigger (a scale factor, a large system font).
        natural = fm.height() * lines + 4 * (lines - 1) + 12
        return QSize(80, max(self.HIT_HEIGHT if searching else self.ROW_HEIGHT, natural))

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
        if state & QStyle.StateFlag.State_HasFocus and option.widget is not None and option.widget.hasFocus():
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(QPen(QColor(c.accent), 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(rect.adjusted(3, 2, -3, -2), 7, 7)
        item = index.data(ThreadListModel.ItemRole)
        model = index.model()
        if isinstance(item, ThreadItem) and isinstance(model, ThreadListModel):
            if model.searching:
                self._paint_hit(painter, option, item)
            else:
                # The row's item asked of the model once (each question is a call from Qt into Python): its title,
                # second line and run state come from the item and the model.
                self._paint_thread(painter, option, item.title, model.subtitle(item),
                                   model.run_states.get(item.thread_id))
        else:
            self._paint_thread(painter, option, str(index.data(Qt.ItemDataRole.DisplayRole) or ""),
                               str(index.data(ThreadListModel.SubtitleRole) or ""),
                               index.data(ThreadListModel.RunStateRole))
        painter.restore()

    def _fonts(self, option: QStyleOptionViewItem) -> tuple[QFont, QFont]:
        """The bold and the small font of the list's, made once for the font (not twice for every row)."""
        fonts = self._font_set
        if fonts is None or fonts[0] != option.font:
            bold = QFont(option.font)
            bold.setWeight(QFont.Weight.DemiBold)
            small = QFont(option.font)
            small.setPointSizeF(max(7.0, small.pointSizeF() - 1.5))
            fonts = self._font_set = (QFont(option.font), bold, small)
        return fonts[1], fonts[2]

    def _paint_thread(self, painter: QPainter, option: QStyleOptionViewItem, title: str, subtitle: str,
                      state: str | None) -> None:
        c = theme.colors()
        bold, small = self._fonts(option)
        inner = option.rect.adjusted(12, 5, -10, -5)
        if state in RUN_STATE_ICONS:  # its run's state, at the right of the title (the words are its accessible text)
            name, role = RUN_STATE_ICONS[state]
            size = 14
            theme.icon(name, getattr(c, role), size).paint(painter, QRect(inner.right() - size, inner.top() + 1,
                                                                          size, size))
            inner.setRight(inner.right() - size - 6)
        painter.setFont(bold)
        painter.setPen(QColor(c.text))
        fm = painter.fontMetrics()
        painter.drawText(QRect(inner.left(), inner.top(), inner.width(), fm.height()), _LINE,
                         fm.elidedText(title, Qt.TextElideMode.ElideRight, inner.width()))
        painter.setFont(small)
        painter.setPen(QColor(c.muted))
        fm2 = painter.fontMetrics()
        painter.drawText(QRect(inner.left(), inner.bottom() - fm2.height(), inner.width(), fm2.height()), _LINE,
                         fm2.elidedText(subtitle, Qt.TextElideMode.ElideRight, inner.width()))

    def _paint_hit(self, painter: QPainter, option: QStyleOptionViewItem, item: ThreadItem) -> None:
        c = theme.colors()
        bold, small = self._fonts(option)
        inner = option.rect.adjusted(12, 5, -10, -5)
        left, width = inner.left(), inner.width()
        # line 1: the title, and the date of the matching message on the right
        date = hit_date(item.updated)
        painter.setFont(small)
        fms = painter.fontMetrics()
        date_w = fms.horizontalAdvance(date) + 8 if date else 0
        painter.setFont(bold)
        fmb = painter.fontMetrics()
        y = inner.top()
        painter.setPen(QColor(c.text))
        painter.drawText(QRect(left, y, width - date_w, fmb.height()),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         fmb.elidedText(item.title, Qt.TextElideMode.ElideRight, max(0, width - date_w)))
        painter.setFont(small)
        painter.setPen(QColor(c.muted))
        if date:
            painter.drawText(QRect(left + width - date_w, y, date_w, fmb.height()),
                             Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, date)
        # line 2: the robot, and where the match is
        y += fmb.height() + 2
        where = " · ".join(p for p in (item.robot, HIT_KINDS.get(item.kind, "")) if p)
        painter.drawText(QRect(left, y, width, fms.height()), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         fms.elidedText(where, Qt.TextElideMode.ElideRight, width))
        # line 3: the matching text, the match highlighted (elided at the end)
        y += fms.height() + 3
        self._paint_snippet(painter, QRect(left, y, width, fms.height() + 2), item.snippet, small)

    @staticmethod
    def _paint_snippet(painter: QPainter, rect: QRect, snippet: str, font: QFont) -> None:
        c = theme.colors()
        normal = QFont(font)
        strong = QFont(font)
        strong.setBold(True)
        x, right = rect.left(), rect.right()
        mark = QColor(c.accent)
        mark.setAlpha(60 if c.name == "light" else 90)
        strong_fm, normal_fm = QFontMetrics(strong), QFontMetrics(normal)
        # Every run of white space one space (a snippet may hold line breaks: one line is drawn); the first match
        # kept in view when the text before it is long (its start elided).
        parts = fitted_parts(snippet_parts(" ".join(snippet.split())), right - x,
                             lambda text, match: (strong_fm if match else normal_fm).horizontalAdvance(text),
                             lambda text, room: normal_fm.elidedText(text, Qt.TextElideMode.ElideLeft, room))
        for text, match in parts:
            if x >= right:
                break
            painter.setFont(strong if match else normal)
            fm = painter.fontMetrics()
            room = right - x
            shown = text if fm.horizontalAdvance(text) <= room else fm.elidedText(text, Qt.TextElideMode.ElideRight,
                                                                                   room)
            advance = fm.horizontalAdvance(shown)
            if match and shown:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(mark)
                painter.drawRoundedRect(QRect(x - 1, rect.top(), advance + 2, rect.height()), 3, 3)
            painter.setPen(QColor(c.text if match else c.muted))
            painter.drawText(QRect(x, rect.top(), advance + 1, rect.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, shown)
            x += advance
            if shown != text:
                break


class Sidebar(QFrame, StagedBuild):
    new_thread_requested = Signal()
    thread_selected = Signal(str)
    #: A search result was opened: (thread id, the matching turn's id).
    result_opened = Signal(str, str)
    search_changed = Signal(str)
    rename_requested = Signal(str, str)
    delete_requested = Signal(str)
    export_requested = Signal(str)

    def __init__(self, model: ThreadListModel, parent: QWidget | None = None, *, staged: bool = False) -> None:
        """``staged``: made in three parts, the header and the New thread button now, the search box, then the thread
        list by :meth:`build_steps` (a start-up step each: whole, the sidebar held the window more than a frame; the
        first two parts in one, with Qt's polish of them, about 7 ms of CPU); else whole."""
        super().__init__(parent)
        self.setObjectName("Sidebar")
        self.model = model
        self._start_build(staged=staged)

    def _construct(self) -> Iterator[None]:
        model = self.model
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
        yield

        self.search = QLineEdit(self)
        self.search.setObjectName("SearchField")
        self.search.setAccessibleName("Search all threads")
        self.search.setPlaceholderText("Search all threads")
        self.search.setToolTip("Search every thread's messages, answers and tool calls (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        name_line_edit_buttons(self.search, clear="Clear the search")
        self._search_icon = self.search.addAction(theme.icon("search", theme.colors().muted, 16),
                                                  QLineEdit.ActionPosition.LeadingPosition)
        self._search_icon.setText("Search")
        name_line_edit_buttons(self.search, clear="Clear the search")
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(lambda: self.search_changed.emit(self.search.text().strip()))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.search.returnPressed.connect(self._activate_first)
        self.search.installEventFilter(self)  # Down goes to the list
        layout.addWidget(self.search)
        yield

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
        # Every row is as tall as the others (the delegate's height depends on the list's mode and font only): the
        # list lays out a few thousand threads from one row's size, not the delegate asked row by row (30-40 ms of
        # the window's thread at start-up on a busy machine, in one go after the thread list is read).
        self.list.setUniformItemSizes(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # A click (and Enter, and a double click where styles activate on it) asks to open a row; the
        # request is carried out once, after the list's own event handling is over: opening a thread
        # rebuilds the chat, and must not happen twice for one click nor inside the list's mouse event.
        self._pending_open: tuple[str, str | None] | None = None
        self._open_timer = QTimer(self)
        self._open_timer.setSingleShot(True)
        self._open_timer.setInterval(0)
        self._open_timer.timeout.connect(self._open_pending)
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

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.search and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) \
                and event.key() == Qt.Key.Key_Down and self.model.rowCount():
            self.list.setFocus(Qt.FocusReason.TabFocusReason)
            if not self.list.currentIndex().isValid():
                self.list.setCurrentIndex(self.model.index(0))
            return True
        return super().eventFilter(obj, event)

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

    def _on_activated(self, index: QModelIndex | QPersistentModelIndex) -> None:
        if not index.isValid():
            return
        item = index.data(ThreadListModel.ItemRole)
        if not isinstance(item, ThreadItem):
            return
        self._pending_open = (item.thread_id, item.turn_id if self.model.searching else None)
        self._open_timer.start()

    def _open_pending(self) -> None:
        pending, self._pending_open = self._pending_open, None
        if pending is None:
            return
        thread_id, turn_id = pending
        if turn_id:
            self.result_opened.emit(thread_id, turn_id)
        else:
            self.thread_selected.emit(thread_id)

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
