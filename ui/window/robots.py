"""The robot picker (robots, then networks), the model line under the thread's title, and the robot
editor (ui/robot_editor), opened from the button beside the picker or the command palette."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from ui import theme

if TYPE_CHECKING:
    from PySide6.QtWidgets import QComboBox, QPushButton, QToolButton

    from ui.chat.composer.composer import Composer
    from ui.network.model import ChatTargetModel
    from ui.robot_editor import RobotEditor
    from ui.services import Services
    from ui.widgets.common import ElidedLabel

PICKER_TIP = "The robot or network for new threads (a thread keeps its robot or network)"


class Robots(QObject):
    """What new threads talk to: the picker follows the controller and the controller the picker."""

    #: What the next message goes to changed: ("Robot" or "Network", its name, the model's label).
    target_shown = Signal(str, str, str)
    #: A robot or network was picked with no thread open: its kind ("robot", "network").
    picked_without_thread = Signal(str)

    def __init__(self, services: Services) -> None:
        super().__init__(services.shell)
        self.services = services
        self.picker: QComboBox | None = None
        self.model: ChatTargetModel | None = None
        self.edit_button: QToolButton | None = None
        self.model_label: ElidedLabel | None = None
        self.connect_link: QPushButton | None = None
        self.composer: Composer | None = None
        #: The robot files' problems last shown (a toast), so the same ones are not shown again.
        self._shown_problems: list[str] = []
        #: The robot editor (made on first use, then kept).
        self.editor: RobotEditor | None = None

    def attach(self, *, picker: QComboBox, model: ChatTargetModel, edit_button: QToolButton, model_label: ElidedLabel,
               connect_link: QPushButton, composer: Composer) -> None:
        """The widgets it works on: the picker and its model, the edit button, the header's model line and
        "Connect a model…" link, the message box (which names the robot)."""
        self.picker, self.model, self.edit_button = picker, model, edit_button
        self.model_label, self.connect_link, self.composer = model_label, connect_link, composer

    def follow(self) -> None:
        """The picker follows the session's robot, and the session the picker."""
        assert self.picker is not None
        self.picker.currentIndexChanged.connect(self.on_picked)
        self.services.session.robot_changed.connect(self.on_controller_changed)

    def retheme(self) -> None:
        from ui.widgets.status import network_icon

        muted = theme.colors().muted
        if self.model is not None:
            self.model.icons = {"robot": theme.icon("robot", muted, 16), "network": network_icon(muted, 16)}
        button = self.edit_button
        if button is not None:
            button.setIcon(theme.icon("edit", muted, 16))
        if self.editor is not None:
            self.editor.retheme()

    def refresh(self, *, reread: bool = True) -> None:
        """Read the robots and networks again (a folder, the settings or the trust changed); ``reread=False``:
        show what the session read last (start-up reads them in a worker thread first)."""
        from ui.widgets.common import signals_blocked

        c, notices, picker, model = self.services.session, self.services.notices, self.picker, self.model
        assert picker is not None and model is not None
        model.default_model = c.config.get("llm.model")
        self.retheme()
        with signals_blocked(picker):
            model.set_robots(c.robots(refresh=reread))
            model.set_networks(c.networks(refresh=reread))
            row = model.row_of(c.robot_name, c.target_kind)
            picker.setCurrentIndex(max(0, row))
        self.update_model_label()
        problems = c.robot_problems
        if problems and problems != self._shown_problems:
            count = f"{len(problems)} robot file{'s' if len(problems) > 1 else ''}"
            details = "\n\n".join(problems)
            notices.toast(f"{count} could not be read and {'are' if len(problems) > 1 else 'is'} "
                          "not in the list.", action="Details", seconds=15,
                          callback=lambda: notices.banner(details))
        self._shown_problems = list(problems)

    def on_picked(self, row: int) -> None:
        if row < 0:
            return
        c, model = self.services.session, self.model
        assert model is not None
        kind, name = model.key_at(row)
        if kind is None:  # a heading ("Robots", "Networks"): keep the current choice
            self.on_controller_changed(c.robot_name)
            return
        session = c.session
        thread = getattr(session, "thread", None) if session is not None else None
        thread_robot = getattr(thread, "robot", None)
        same = thread_robot == name and getattr(thread, "kind", "robot") == kind
        if kind == "network":
            c.set_network(name)
        else:
            c.set_robot(name)
        if session is not None and thread_robot and not same and not c.running:
            # A thread keeps its robot: another robot starts a new thread (the old one stays in the list).
            c.new_thread()
            self.services.notices.toast(f"New thread with {name}. “{session.thread.display_title}” stays with "
                                        f"{thread_robot}.")
        self.update_model_label()
        if c.session is None:
            self.picked_without_thread.emit(kind)

    def on_controller_changed(self, name: str) -> None:
        from ui.widgets.common import signals_blocked

        picker, model = self.picker, self.model
        assert picker is not None and model is not None
        with signals_blocked(picker):
            row = model.row_of(name, self.services.session.target_kind)
            if row >= 0:
                picker.setCurrentIndex(row)
        self.update_model_label()

    def choose_target(self, kind: str, name: str) -> None:
        """A robot or network chosen in the palette: as if picked in the header (a thread keeps its robot, so
        another one starts a new thread with it); then the keyboard is in the message box."""
        from ui.widgets.common import signals_blocked

        picker, model = self.picker, self.model
        assert picker is not None and model is not None and self.composer is not None
        if not picker.isEnabled():
            self.services.notices.toast("Stop the run (Esc) to choose another robot or network.")
            return
        row = model.row_of(name, kind)
        if row < 0:
            return
        with signals_blocked(picker):
            picker.setCurrentIndex(row)
        self.on_picked(row)
        self.composer.focus()

    def focus_picker(self) -> None:
        picker = self.picker
        assert picker is not None
        if not picker.isEnabled():
            self.services.notices.toast("Stop the run (Esc) to choose another robot or network.")
            return
        picker.setFocus()
        picker.showPopup()

    def update_picker(self) -> None:
        """The running thread keeps its robot: picking another one mid-run would only mislead."""
        running, picker = self.services.session.running, self.picker
        assert picker is not None
        picker.setEnabled(not running)
        picker.setToolTip("Stop the run (Esc) to choose another robot or network" if running else PICKER_TIP)

    def update_model_label(self) -> None:
        c = self.services.session
        label, is_lm = c.model_label()
        assert self.model_label is not None and self.connect_link is not None and self.composer is not None
        self.model_label.setText(label)
        self.connect_link.setVisible(not is_lm)
        # The message goes to the open thread's robot (a thread keeps its robot), else to the picked one.
        thread = getattr(c.session, "thread", None) if c.session is not None else None
        self.composer.set_robot(getattr(thread, "robot", None) or c.robot_name)
        self.target_shown.emit("Network" if c.target_kind == "network" else "Robot", c.robot_name, label)

    # -- the robot editor --------------------------------------------------------------------------------
    def open_editor(self, *, new: bool = False) -> RobotEditor:
        """The robot editor, on the robot new threads talk to (or a new robot)."""
        from ui.robot_editor import RobotEditor

        c = self.services.session
        if self.editor is None:
            self.editor = RobotEditor(c, self.services.shell)
            self.editor.saved.connect(self.on_saved)
            self.editor.deleted.connect(self.on_deleted)
        thread = getattr(c.session, "thread", None) if c.session is not None else None
        name = getattr(thread, "robot", None) if getattr(thread, "kind", "robot") == "robot" else None
        self.editor.open_robot(name or (c.robot_name if c.target_kind == "robot" else None), new=new)
        return self.editor

    def on_saved(self, name: str, new: bool) -> None:
        """A robot file was written: every thread's next message uses it, and the picker lists it."""
        c = self.services.session
        c.apply_config(c.config)  # threads build their robots again from the files at their next message
        self.refresh()
        if new and not c.running:
            assert self.model is not None and self.picker is not None
            row = self.model.row_of(name, "robot")
            if row >= 0:
                self.picker.setCurrentIndex(row)  # new threads talk to it (a thread keeps its robot)
        self.services.notices.toast(f"Saved robot {name}: the next message uses it.")

    def on_deleted(self, name: str) -> None:
        c = self.services.session
        c.apply_config(c.config)
        if c.robot_name == name and c.target_kind == "robot":
            c.set_robot(next((r.name for r in c.robots(refresh=True) if r.name != name), name))
        self.refresh()
        self.services.notices.toast(f"Deleted robot {name}.")
