"""The window's ``/`` commands: ``/compact`` and the MCP prompts of the current robot's servers.

What the composer's completion offers comes from here (:meth:`SlashCommands.items`): the built-in commands
at once, and the prompts of the robot's MCP servers as they were last listed; opening the completion lists
them again in a task (starting a server if needed), and the list updates when they arrive.

Choosing a prompt: a prompt with arguments opens a small form first; then ``prompts/get`` is asked and the
prompt's messages are put in the message box for the person to read, change and send (nothing is sent by
itself). A prompt that also has assistant messages goes in as one labelled exchange
(:func:`workspace.mcp.resources.prompt_text`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ui.chat.composer.slash import PromptForm, SlashItem

if TYPE_CHECKING:
    from ui.chat.composer.composer import Composer
    from ui.services import Services

log = logging.getLogger("ui.window.slash")

BUILTINS = (
    SlashItem("compact", "Summarise the older messages now; the model is sent the summary in their place"),
)
#: How long listing one server's prompts may take before the completion stops waiting for it.
LIST_TIMEOUT = 15.0


class SlashCommands:
    def __init__(self, services: Services) -> None:
        self.services = services
        #: The message box (set by :meth:`connect`).
        self.composer: Composer | None = None
        #: The MCP manager once the MCP servers dock has it (None: no MCP, or not yet).
        self._manager: Any = None
        #: The prompts of each server, as last listed.
        self.prompts: dict[str, list[SlashItem]] = {}
        self.problems: dict[str, str] = {}
        self._listing: asyncio.Task[None] | None = None
        #: The open argument form (tests fill it in).
        self.form: PromptForm | None = None

    def connect(self, composer: Composer) -> None:
        """Offer the commands in ``composer`` (its "/" menu) and run the one chosen."""
        self.composer = composer
        composer.slash_source = self.items
        composer.slash_opened.connect(self.refresh)
        composer.command_chosen.connect(self.run)

    # -- what is offered -------------------------------------------------------------------------------------
    def manager(self) -> Any:
        return self._manager

    def set_manager(self, manager: Any) -> None:
        """The MCP manager whose servers' prompts are offered."""
        self._manager = manager

    def servers(self) -> list[str]:
        """The MCP servers of the thread's robot (or of the robot picked for a new thread)."""
        from workspace.tools import selection

        manager = self.manager()
        if manager is None:
            return []
        c = self.services.session
        robot = getattr(c.session, "robot", None) if c.session is not None else None
        if robot is None:
            robot = next((r for r in c.robots() if getattr(r, "name", None) == c.robot_name), None)
        config = c.config
        level = selection.resolve_chain(config.get("agent.mcp", "all") if config is not None else "all",
                                        getattr(robot, "mcp_config", "inherit"))
        try:
            statuses = {s.name: s for s in manager.statuses()}
        except Exception:
            return []
        names = list(statuses) if level == selection.ALL else [str(n) for n in level if isinstance(n, str)]
        return [n for n in names if n in statuses and not statuses[n].disabled]

    def items(self) -> tuple[list[SlashItem], str]:
        servers = self.servers()
        items = list(BUILTINS)
        for server in servers:
            items.extend(self.prompts.get(server, []))
        waiting = self._listing is not None and not self._listing.done()
        note = "Listing the MCP servers' prompts…" if waiting and any(s not in self.prompts for s in servers) else ""
        return items, note

    def refresh(self) -> None:
        """List the prompts of the robot's servers again (in a task; the completion updates when done)."""
        manager = self.manager()
        servers = self.servers()
        if manager is None or not servers or (self._listing is not None and not self._listing.done()):
            return

        async def one(server: str) -> None:
            try:
                listed = await asyncio.wait_for(manager.list_prompts(server), LIST_TIMEOUT)
            except Exception as exc:
                self.problems[server] = str(exc)
                return
            self.problems.pop(server, None)
            self.prompts[server] = [
                SlashItem(f"{server}:{p['name']}", str(p.get("description") or p.get("title") or ""), server=server,
                          prompt=str(p["name"]), arguments=tuple(dict(a) for a in p.get("arguments") or []))
                for p in listed if p.get("name")
            ]

        async def all_of_them() -> None:
            await asyncio.gather(*(one(s) for s in servers))
            if self.composer is not None:
                self.composer.refresh_slash()

        self._listing = self.services.tasks.spawn(all_of_them(), name="mcp-prompts-list")
        if self.composer is not None:
            self.composer.refresh_slash()  # "Listing…" while it goes

    # -- what a choice does ----------------------------------------------------------------------------------
    def run(self, item: SlashItem) -> None:
        if not item.is_prompt:
            if item.name == "compact":
                self.compact()
            return
        if item.arguments:
            form = self.form = PromptForm(item, self.services.shell)
            form.accepted.connect(lambda: self.insert(item, form.values()))
            form.finished.connect(lambda _result: self._form_closed(form))
            form.open()
        else:
            self.insert(item, {})

    def _form_closed(self, form: PromptForm) -> None:
        if self.form is form:
            self.form = None
        form.deleteLater()
        if self.composer is not None:
            self.composer.focus()

    def insert(self, item: SlashItem, values: dict[str, str]) -> None:
        """Ask the server for the prompt with ``values`` and put its messages in the message box."""
        from workspace.mcp.resources import prompt_text

        manager, notices, composer = self.manager(), self.services.notices, self.composer
        if manager is None or composer is None or item.server is None or item.prompt is None:
            return
        server, prompt = item.server, item.prompt

        async def go() -> None:
            try:
                result = await manager.get_prompt(server, prompt, values)
            except Exception as exc:
                notices.banner(f"The prompt /{item.name} could not be used: {exc}")
                return
            text = prompt_text(result)
            if not text.strip():
                notices.toast(f"The prompt /{item.name} has no messages.")
                return
            composer.set_text(text)
            composer.focus()

        self.services.tasks.spawn(go(), name=f"mcp-prompt-{server}")

    def compact(self) -> None:
        """``/compact``: summarise the conversation before its latest turn now (workspace ThreadSession.compact)."""
        from ui.chat.model.presenter import compaction_text

        notices, c = self.services.notices, self.services.session
        session = c.session
        if session is None:
            notices.toast("Nothing to compact yet: this thread has no messages.")
            return
        if not c.idle:
            notices.toast("A run is in progress: /compact works once it has finished.")
            return

        async def go() -> None:
            try:
                event = await session.compact()
            except Exception as exc:
                notices.banner(f"The conversation could not be compacted: {exc}")
                return
            if event is None:
                notices.toast("Nothing to compact yet: the conversation is only its latest turn.")
                return
            c.thread_opened.emit(session)  # the chat shows the compaction's marker where it is stored
            notices.toast(compaction_text(event))

        c.tasks.spawn(go(), name="compact")
