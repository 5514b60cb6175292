"""What new threads talk to, for the window's session model: the robots and networks found, the one picked, its
model's label, and the warm-up of what the first message to it needs.
A link of the chain of classes :class:`ui.controller.Controller` is made of (``ui/controller_parts/``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ui.controller_parts.state import SessionState

if TYPE_CHECKING:
    import asyncio
    import threading

    from workspace.catalog import RobotInfo
    from workspace.network import Network, NetworkInfo

log = logging.getLogger("ui.controller")


class Targets(SessionState):
    """The robots and networks new threads talk to, and the warm-up of the first message's needs."""

    def robots(self, *, refresh: bool = False) -> list[RobotInfo]:
        """The robots the catalog finds (read once; ``refresh=True`` reads the folders again)."""
        if self.workspace is None:
            return []
        robots = self._robots
        if robots is None or refresh:
            problems: list[str] = []
            try:
                robots = self._robots = list(self.workspace.robots(problems=problems))
                self.robot_problems = problems
            except Exception as exc:
                self._emit_problem(f"Could not list the robots: {exc}")
                return []
        return list(robots)

    def robot_names(self) -> list[str]:
        return [r.name for r in self.robots()]

    def set_robot(self, name: str) -> None:
        if name != self.robot_name or self.network_name is not None:
            self.robot_name = name
            self.network_name = None
            self.robot_changed.emit(name)
            self.preload_provider()

    def preload_provider(self) -> asyncio.Future[None] | threading.Thread | None:
        """Load what the first message to the current robot needs — its template, and the model library
        (litellm and its model map, or the openai SDK for an OpenAI-compatible server) — in a worker thread,
        so the first message waits only for what is left (the import takes seconds; the window keeps
        painting). Returns the future or thread doing it (None: nothing to load)."""
        if self.provider is not None or self.workspace is None or self.network_name is not None:
            return None
        import threading

        workspace, name = self.workspace, self.robot_name

        def work() -> None:
            try:
                from workspace.shared_imports import settle_shared_imports

                settle_shared_imports()  # pydantic whole first: the window's schemas wait on it, never half of it
                workspace.warm_up(name)
            except Exception as exc:  # the first message reports what is wrong, with its own words
                log.debug("warming up robot %s failed: %s", name, exc)

        import asyncio

        try:
            # On the loop's executor: its worker threads then exist before the first message needs one.
            return asyncio.get_running_loop().run_in_executor(None, work)
        except RuntimeError:  # no running loop (tests without one): a thread of its own
            thread = threading.Thread(target=work, name="robotlab-warm-up", daemon=True)
            thread.start()
            return thread

    @property
    def target_kind(self) -> str:
        """What new threads talk to: "robot" or "network"."""
        return "network" if self.network_name is not None else "robot"

    def networks(self, *, refresh: bool = False) -> list[NetworkInfo]:
        """The networks found (project, user, shipped), read once unless ``refresh``."""
        if self.workspace is None:
            return []
        networks = self._networks
        if networks is None or refresh:
            try:
                networks = self._networks = list(self.workspace.networks())
            except Exception as exc:
                self._emit_problem(f"Could not list the networks: {exc}")
                return []
            self._network_cache.clear()
        return list(networks)

    def set_network(self, name: str) -> None:
        """New threads run the network ``name``."""
        if name != self.network_name:
            self.network_name = name
            self.robot_name = name
            self.robot_changed.emit(name)

    def network_for_dock(self) -> tuple[Network | None, str | None]:
        """(the Network to draw, or None; a note when it cannot be loaded) for the current thread,
        or for the picked network when no thread is open."""
        session = self.session
        try:
            if session is not None:
                if session.is_network:
                    return session.network, None
                return None, None
            if self.network_name is not None:
                network = self._network_cache.get(self.network_name)
                if network is None:
                    network = self._network_cache[self.network_name] = self.require_workspace().load_network(
                        self.network_name)
                return network, None
        except Exception as exc:
            return None, f"The network could not be loaded: {exc}"
        return None, None

    def model_label(self, robot_name: str | None = None) -> tuple[str, bool]:
        """(label, is_language_model) for the robot's model."""
        if self.provider is not None:
            return str(self.provider.label), bool(self.provider.is_language_model)
        from workspace.providers import is_offline
        from workspace.providers.demo import DEMO_LABEL

        name = robot_name or self.robot_name
        session = self.session
        chosen = (session.chosen_model
                  if session is not None and robot_name is None and not session.is_network else None)
        if chosen:  # the open thread was switched to another model
            return (DEMO_LABEL, False) if is_offline(chosen) else (chosen, True)
        model: str | None = None
        for info in self.robots():
            if info.name == name:
                model = info.model
        model = model or self.config.get("llm.model")
        if is_offline(model):
            return DEMO_LABEL, False
        return str(model), True
