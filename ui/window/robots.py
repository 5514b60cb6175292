"""The robot picker (robots, then networks) and the model line under the thread's title."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ui import theme

if TYPE_CHECKING:
    from ui.main_window import MainWindow

PICKER_TIP = "The robot or network for new threads (a thread keeps its robot or network)"


class Robots:
    """What new threads talk to: the picker follows the controller and the controller the picker."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        #: The robot files' problems last shown (a toast), so the same ones are not shown again.
        self._shown_problems: list[str] = []

    def connect(self) -> None:
        w = self.window
        w.robot_picker.currentIndexChanged.connect(self.on_picked)
        w.controller.robot_changed.connect(self.on_controller_changed)

    def retheme(self) -> None:
        from ui.widgets.lanes import network_icon

        muted = theme.colors().muted
        self.window.robot_model.icons = {"robot": theme.icon("robot", muted, 16), "network": network_icon(muted, 16)}

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
        w.status.show_target(what="Network" if c.target_kind == "network" else "Robot", name=c.robot_name,
                             model_label=label)
