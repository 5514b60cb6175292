"""The thread's model: the composer's picker, the list of available models, and the switch.

The list comes from :func:`workspace.providers.listing.list_models` in a qasync task (never on the
event loop's time: its questions to servers run in worker threads, with a short timeout), and is
kept for :data:`LIST_SECONDS` (the core caches per endpoint too). Choosing a model switches the open
thread (:meth:`workspace.session.ThreadSession.set_model`: the thread's metadata, and a
``model_changed`` event the chat's presenter shows where the switch happened); with no thread open the
choice waits for the thread the next message creates (``controller.pending_model``). A new thread
starts with the robot's own model.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from ui.chat.composer.composer import Composer
    from ui.services import Services
    from workspace.providers.listing import ModelListing

log = logging.getLogger("ui.models")

#: Seconds the window's list is kept before the menu asks again.
LIST_SECONDS = 60.0


class ModelChoice(QObject):
    """Keeps the picker in step with the open thread and switches its model."""

    #: The open thread's model was switched: the thread's ModelChanged event (None: nothing to show), for
    #: the chat ("Model changed to X") and the header's model line.
    switched = Signal(object)

    def __init__(self, services: Services) -> None:
        super().__init__(services.shell)
        self.services = services
        self.picker: Any = None
        self.listing: ModelListing | None = None
        self._listed_at = 0.0
        self._task: Any = None

    def build(self, composer: Composer) -> None:
        """The picker, at the side of ``composer``."""
        from ui.chat.composer.model_picker import ModelPicker

        self.picker = ModelPicker(composer)
        composer.add_side_widget(self.picker)

    def follow(self) -> None:
        """Follow the session (its thread, robot, configuration and runs) and the picker's choices."""
        c = self.services.session
        self.picker.chosen.connect(self.choose)
        self.picker.wanted.connect(lambda refresh: self.load(refresh=bool(refresh)))
        c.thread_opened.connect(lambda _session: self.update())
        c.robot_changed.connect(lambda _name: self.update())
        c.config_changed.connect(self.on_config_changed)
        # At a run's end the thread's robot may be built again (Settings changed meanwhile): the picker asks again.
        c.bridge.running_changed.connect(lambda running: self.picker.set_running(True) if running else self.update())
        self.update()

    # -- showing ----------------------------------------------------------------------------------
    def current(self) -> tuple[str | None, str | None, bool]:
        """(the model the next message goes to, the robot's own, whether that is the robot's own)."""
        c = self.services.session
        session = c.session
        if session is not None and not getattr(session, "is_network", False):
            try:
                robot = session.robot
                chosen = getattr(session, "chosen_model", None)
                default = session.default_model() if chosen else robot.model
                return robot.model, default, not chosen
            except Exception as exc:  # a robot file gone: the picker says what it can
                log.debug("the thread's model is unknown: %s", exc)
        default = self._default_of(c.robot_name)
        pending = getattr(c, "pending_model", None)
        if pending is not None:
            return pending[0], default, False
        return default, default, True

    def _default_of(self, robot_name: str) -> str | None:
        from workspace.providers import is_offline

        c = self.services.session
        if c.provider is not None:
            return str(c.provider.model_id or "") or None
        model = next((getattr(i, "model", None) for i in c.robots() if getattr(i, "name", None) == robot_name), None)
        if not model and not getattr(c, "config_loaded", True):
            return None  # start-up reads the configuration in a worker thread, then shows the picker again
        model = model or c.config.get("llm.model")
        return None if is_offline(model) else str(model)

    def update(self) -> None:
        if self.picker is None:
            return
        c = self.services.session
        network = c.target_kind == "network" and (c.session is None or getattr(c.session, "is_network", False))
        self.picker.setVisible(not network)  # a network's tasks' robots choose their own models
        model, default, is_default = self.current()
        self.picker.set_current(model, default=default, is_default=is_default)
        self.picker.set_running(c.running)

    def on_config_changed(self) -> None:
        """Settings (or the configuration file) changed: the robot's own model may be another one now, and
        the servers and keys that list models too."""
        self.listing = None
        self._listed_at = 0.0
        if self.picker is not None:
            self.picker.set_listing(None)
        self.update()

    # -- the list ---------------------------------------------------------------------------------
    def load(self, *, refresh: bool = False) -> None:
        """Ask for the available models in the background (unless the list is recent)."""
        if self._task is not None and not self._task.done():
            return
        if not refresh and self.listing is not None and time.monotonic() - self._listed_at < LIST_SECONDS:
            return
        c = self.services.session
        self.picker.set_listing(self.listing, loading=True)
        self._task = c.tasks.spawn(self._load(refresh), name="list-models")

    async def _load(self, refresh: bool) -> None:
        from workspace.providers.listing import ModelListing, list_models

        c = self.services.session
        model, _default, _ = self.current()
        try:
            listing = await list_models(c.config, refresh=refresh,
                                        extra={model: None} if model and model != c.config.get("llm.model") else None)
        except Exception as exc:  # list_models reports failures as reasons; this is a bug's safety net
            log.warning("listing the models failed: %s", exc)
            listing = ModelListing()
        self.listing = listing
        self._listed_at = time.monotonic()
        if self.picker is not None:
            try:
                self.picker.set_listing(listing)
            except RuntimeError:  # the window closed meanwhile
                pass

    # -- switching --------------------------------------------------------------------------------
    def choose(self, model: str | None, api_base: str | None) -> None:
        c = self.services.session
        if c.running:
            self.services.notices.toast("Stop the run (Esc) to choose another model.")
            self.update()
            return
        session = c.session
        if session is None or getattr(session, "is_network", False):
            default = self._default_of(c.robot_name)
            c.pending_model = None if model is None or model == default else (model, api_base)
            self.update()
            return
        try:
            event = session.set_model(model, api_base=api_base)
        except Exception as exc:
            c.problem.emit(f"Could not switch the model: {exc}")
            self.update()
            return
        self.update()
        self.switched.emit(event)


__all__ = ["LIST_SECONDS", "ModelChoice"]
