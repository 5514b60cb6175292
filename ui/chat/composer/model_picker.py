"""The composer's model picker: a compact button beside Send whose menu lists the available models.

It shows the open thread's model ("llama3.1 · robot default" when the thread uses its robot's own
model). Its menu: the robot's default first, then each source's models (the configured local server,
then every hosted provider with a key: :mod:`workspace.providers.listing`), a source's problem as a
disabled line that names the fix, and "Refresh list". Choosing emits :attr:`ModelPicker.chosen`
with ``(model_id or None, api_base or None)`` (None: back to the robot's default); the window's
:class:`ui.window.models.ModelChoice` switches the thread. The widget holds no state of the thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QResizeEvent
from PySide6.QtWidgets import QMenu, QSizePolicy, QToolButton, QWidget

if TYPE_CHECKING:
    from workspace.providers.listing import ModelListing

#: Models shown per hosted provider in the menu before "More…" (the rest in a submenu).
MENU_LIMIT = 25


def short_name(model: str | None) -> str:
    """The name without the provider prefix ("ollama_chat/llama3.1" -> "llama3.1"); "Offline demo" for none
    and for the demo's own names ("offline-demo", "demo": what the window says of it everywhere)."""
    from workspace.providers import is_offline

    if not model or is_offline(model):
        return "Offline demo"
    return model.split("/", 1)[1] if "/" in model else model


def _full_name(model: str | None) -> str:
    """The model's whole id, or "the offline demo" (its own names too)."""
    from workspace.providers import is_offline

    return "the offline demo" if not model or is_offline(model) else model


class ModelPicker(QToolButton):
    """The model of the open thread, and a menu to switch it (see the module docstring)."""

    #: (model id or None for the robot's default, the server's api_base or None)
    chosen = Signal(object, object)
    #: The menu is opening (load the list if it is old) or "Refresh list" was picked (``True``).
    wanted = Signal(bool)
    #: "Compare with…": the next message to this model and 1-3 other candidates, side by side.
    compare_wanted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ModelPicker")
        self.setAccessibleName("Model for this thread")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setMaximumWidth(240)  # on its own row under the text: room for "qwen2.5-coder-14b · default"
        # It gives way ("…") when the window is narrow: it never widens the conversation column.
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._label = ""
        self.menu_ = QMenu(self)
        self.menu_.setAccessibleName("Models")
        self.menu_.aboutToShow.connect(lambda: self.wanted.emit(False))
        self.setMenu(self.menu_)
        self.model: str | None = None
        self.default: str | None = None
        self.is_default = True
        self.listing: ModelListing | None = None
        self.loading = False
        self._rebuild()

    # -- state from outside -------------------------------------------------------------------------
    def set_current(self, model: str | None, *, default: str | None, is_default: bool) -> None:
        """The thread's model now, and the robot's own (``is_default``: the thread did not choose one)."""
        self.model, self.default, self.is_default = model, default, is_default
        name = short_name(model)
        self._label = name + (" · default" if is_default else "")
        self.updateGeometry()  # its size hint follows the label: the row gives it room again
        self._fit_text()
        self.setToolTip(f"Model for this thread: {_full_name(model)}"
                        + (" (robot default)" if is_default else f"\nThe robot's own: {_full_name(default)}")
                        + "\nClick to choose another: the thread's next messages go to it.")
        self._rebuild()

    def label(self) -> str:
        """The whole text (the button may show it shortened with "…")."""
        return self._label

    def _room(self) -> int:
        return max(0, self.width() - 28)  # the menu arrow and the margins

    def _fit_text(self) -> None:
        metrics = self.fontMetrics()
        text = self._label
        if self.width() > 0 and metrics.horizontalAdvance(text) > self._room():
            text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, self._room())
        self.setText(text)

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(min(self.maximumWidth(), self.fontMetrics().horizontalAdvance(self._label) + 32), hint.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(44, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_text()

    def set_listing(self, listing: ModelListing | None, *, loading: bool = False) -> None:
        self.listing, self.loading = listing, loading
        self._rebuild()

    def set_running(self, running: bool) -> None:
        self.setEnabled(not running)
        if running:
            self.setToolTip("Stop the run (Esc) to choose another model")
        else:
            self.set_current(self.model, default=self.default, is_default=self.is_default)

    # -- the menu -----------------------------------------------------------------------------------
    def _action(self, menu: QMenu, text: str, model: str | None, api_base: str | None) -> QAction:
        action = menu.addAction(text)
        action.setCheckable(True)
        current = (self.is_default and model is None) or (not self.is_default and model == self.model)
        action.setChecked(current)
        action.triggered.connect(lambda _checked=False, m=model, b=api_base: self.chosen.emit(m, b))
        return action

    def _rebuild(self) -> None:
        menu = self.menu_
        menu.clear()
        self._action(menu, f"{short_name(self.default)} · robot default", None, None)
        listing = self.listing
        if listing is None or self.loading:
            note = menu.addAction("Looking for models…" if self.loading or listing is None else "")
            note.setEnabled(False)
        if listing is not None:
            for source in listing.sources:
                if not source.models and not source.problem:
                    continue
                menu.addSection(source.name)
                target = menu
                for index, entry in enumerate(source.models):
                    if index == MENU_LIMIT and source.kind == "hosted":
                        target = menu.addMenu(f"More {source.name} models ({len(source.models) - MENU_LIMIT})")
                    text = entry.id + (f"  ({entry.detail})" if entry.detail else "")
                    self._action(target, text, entry.id, entry.api_base)
                if source.problem:
                    problem = menu.addAction(source.problem)
                    problem.setEnabled(False)
            if not listing.sources and not self.loading:
                none = menu.addAction("No local server configured and no API key set: see Settings")
                none.setEnabled(False)
        menu.addSeparator()
        compare = menu.addAction("Compare with…")
        compare.triggered.connect(self.compare_wanted)
        refresh = menu.addAction("Refresh list")
        refresh.triggered.connect(lambda: self.wanted.emit(True))

    def problems(self) -> list[str]:
        return list(self.listing.problems) if self.listing is not None else []


__all__ = ["MENU_LIMIT", "ModelPicker", "short_name"]
