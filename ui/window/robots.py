"""The robot picker (robots, then networks), the model line under the thread's title, and the robot
editor (ui/robot_editor), opened from the button beside the picker or the command palette."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ui import theme

if TYPE_CHECKING:
    from ui.main_window import MainWindow
    from ui.robot_editor import RobotEditor

PICKER_TIP = "The robot or network for new threads (a thread keeps its robot or network)"


class Robots:
    """What new threads talk to: the picker follows the controller and the controller the picker."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        #: The robot files' problems last shown (a toast), so the same ones are not shown again.
        self._shown_problems: list[str] = []
        #: The robot editor (made on first use, then kept).
        self.editor: RobotEditor | None = None

    def connect(self) -> None:
        w = self.window
        w.robot_picker.currentIndexChanged.connect(self.on_picked)
        w.controller.robot_changed.connect(self.on_controller_changed)

    def retheme(self) -> None:
        from ui.widgets.status import network_icon

        muted = theme.colors().muted
        self.window.robot_model.icons = {"robot": theme.icon("robot", muted, 16), "network": network_icon(muted, 16)}
        button = getattr(self.window, "robot_edit_button", None)
        if button is not None:
            button.setIcon(theme.icon("edit", muted, 16))
        if self.editor is not None:
            self.editor.retheme()

    def refresh(self) -> None:
        """Read the robots and networks again (a folder, the settings or the trust changed)."""
        from ui.widgets.common import signals_blocked

        w, c = self.window, self.window.controller
        w.robot_model.default_model = c.config.get("llm.model")
        self.retheme()
        with signals_blocked(w.robot_picker):
            w.robot_model.set_robots(c.robots(refresh=True))
            w.robot_model.set_networks(c.networks(refresh=True))
            row = w.robot_model.row_of(c.robot_name, c.target_kind)
            w.robot_picker.setCurrentIndex(max(0, row))
        self.update_model_label()
        problems = c.robot_problems
        if problems and problems != self._shown_problems:
            count = f"{len(problems)} robot file{'s' if len(problems) > 1 else ''}"
            details = "\n\n".join(problems)
            w.toast.show_message(f"{count} could not be read and {'are' if len(problems) > 1 else 'is'} "
                                 "not in the list.", action="Details", seconds=15,
                                 callback=lambda: w.banner.show_message(details))
        self._shown_problems = list(problems)

    def on_picked(self, row: int) -> None:
        if row < 0:
            return
        w, c = self.window, self.window.controller
        kind, name = w.robot_model.key_at(row)
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
            w.toast.show_message(f"New thread with {name}. “{session.thread.display_title}” stays with "
                                 f"{thread_robot}.")
        self.update_model_label()
        if c.session is None:
            w.threads.show_empty()
            w.docks.sync_network(reveal=kind == "network")

    def on_controller_changed(self, name: str) -> None:
        from ui.widgets.common import signals_blocked

        w = self.window
        with signals_blocked(w.robot_picker):
            row = w.robot_model.row_of(name, w.controller.target_kind)
            if row >= 0:
                w.robot_picker.setCurrentIndex(row)
        self.update_model_label()

    def focus_picker(self) -> None:
        w = self.window
        if not w.robot_picker.isEnabled():
            w.toast.show_message("Stop the run (Esc) to choose another robot or network.")
            return
        w.robot_picker.setFocus()
        w.robot_picker.showPopup()

    def update_picker(self) -> None:
        """The running thread keeps its robot: picking another one mid-run would only mislead."""
        running = self.window.controller.running
        self.window.robot_picker.setEnabled(not running)
        self.window.robot_picker.setToolTip("Stop the run (Esc) to choose another robot or network" if running
                                            else PICKER_TIP)

    def update_model_label(self) -> None:
        w, c = self.window, self.window.controller
        label, is_lm = c.model_label()
        w.model_label.setText(label)
        w.connect_link.setVisible(not is_lm)
        # The message goes to the open thread's robot (a thread keeps its robot), else to the picked one.
        thread = getattr(c.session, "thread", None) if c.session is not None else None
        w.composer.set_robot(getattr(thread, "robot", None) or c.robot_name)
        w.fit_robot_picker()  # the picked name whole (the picker may have been set with its signals blocked)
        w.status.show_target(what="Network" if c.target_kind == "network" else "Robot", name=c.robot_name,
                             model_label=label)

    # -- the robot editor --------------------------------------------------------------------------------
    def open_editor(self, *, new: bool = False) -> RobotEditor:
        """The robot editor, on the robot new threads talk to (or a new robot)."""
        from ui.robot_editor import RobotEditor

        w, c = self.window, self.window.controller
        if self.editor is None:
            self.editor = RobotEditor(c, w)
            self.editor.saved.connect(self.on_saved)
            self.editor.deleted.connect(self.on_deleted)
        thread = getattr(c.session, "thread", None) if c.session is not None else None
        name = getattr(thread, "robot", None) if getattr(thread, "kind", "robot") == "robot" else None
        self.editor.open_robot(name or (c.robot_name if c.target_kind == "robot" else None), new=new)
        return self.editor

    def on_saved(self, name: str, new: bool) -> None:
        """A robot file was written: every thread's next message uses it, and the picker lists it."""
        w, c = self.window, self.window.controller
        c.apply_config(c.config)  # threads build their robots again from the files at their next message
        self.refresh()
        if new and not c.running:
            row = w.robot_model.row_of(name, "robot")
            if row >= 0:
                w.robot_picker.setCurrentIndex(row)  # new threads talk to it (a thread keeps its robot)
        w.toast.show_message(f"Saved robot {name}: the next message uses it.")

    def on_deleted(self, name: str) -> None:
        w, c = self.window, self.window.controller
        c.apply_config(c.config)
        if c.robot_name == name and c.target_kind == "robot":
            c.set_robot(next((r.name for r in c.robots(refresh=True) if r.name != name), name))
        self.refresh()
        w.toast.show_message(f"Deleted robot {name}.")
