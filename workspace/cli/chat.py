"""``robotlab chat [ROBOT]``: an interactive chat with a robot in the terminal.

The text streams as it comes; tool calls are short lines; approvals are asked inline; proposed file
changes (with ``--folder``) are reviewed hunk by hunk after each answer (:mod:`workspace.cli.review`).
Ctrl-C stops the running answer (a second Ctrl-C quits); Ctrl-C or Ctrl-D at an empty prompt quits.
Slash commands: see :data:`COMMANDS`. The chat is a thread like the window's (recorded unless
``--no-record``); ``--continue`` / ``--thread ID`` resume one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.cli.record import add_record_options

if TYPE_CHECKING:
    from workspace.approval import ApprovalDecision, ApprovalRequest
    from workspace.cli.chat_io import ChatInput
    from workspace.config import Config
    from workspace.providers.listing import ModelEntry
    from workspace.robot import Robot
    from workspace.session import ThreadSession, Workspace

DEFAULT_ROBOT = "assistant"

#: The slash commands, with what ``/help`` says of them.
COMMANDS: dict[str, str] = {
    "/model": "/model [NAME|N]  list the available models, or use NAME (or number N of the list) from the next "
              "message on (demo: the offline demo; default: the robot's own)",
    "/robot": "/robot [NAME]  list the robots, or start a new thread with robot NAME",
    "/review": "/review  review the proposed file changes that wait (with --folder)",
    "/undo": "/undo  undo the last change applied in this thread (with --folder)",
    "/export": "/export [FILE]  write the thread to FILE (.md, .json or .jsonl; default thread-<id>.md)",
    "/attach": "/attach [PATH]  send a file or image with the next message (inside --folder when given); "
               "alone: list what waits",
    "/detach": "/detach  drop the attachments waiting for the next message",
    "/compact": "/compact  summarise the earlier messages for the model now (every message stays in the thread)",
    "/memory": "/memory [keep|drop N]  the memory writes the robot proposed (review.memory: ask): list, keep or drop",
    "/new": "/new  start a new thread with the same robot",
    "/help": "/help  this list",
    "/exit": "/exit  leave the chat (also /quit, Ctrl-D, or Ctrl-C at an empty prompt)",
}
CHAT_EXIT_HELP = """exit status:
  0    the chat ended (/exit, Ctrl-D, Ctrl-C at an empty prompt, end of input)
  2    it could not start: bad usage or configuration (unknown robot, missing API key, no thread to continue)
  130  quit by a second Ctrl-C while an answer was stopping"""
KEYS_SHORT = "Enter sends; Alt+Enter or Esc Enter starts a new line; Ctrl-C stops an answer, or quits at an empty prompt"
KEYS_HELP = ("Enter sends; Alt+Enter, Esc Enter or Ctrl+J starts a new line; ↑/↓ go through what you typed "
             "before. Ctrl-C stops the answer that is streaming (twice: quits). Start a message with // to "
             "send a text beginning with /.")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "chat",
        help="chat with a robot in the terminal",
        description="An interactive chat with a robot: streaming answers, tool calls as short lines, approvals "
        "and the review of file changes inline, slash commands (/help). The chat is recorded as a thread the "
        "window lists (--no-record: not); --continue or --thread ID resumes one.",
        epilog="keys:\n  " + KEYS_HELP + "\n\ncommands:\n" + "\n".join(f"  {text}" for text in COMMANDS.values())
        + "\n\n" + CHAT_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("robot", nargs="?", help=f"robot name or robot .md file (default: {DEFAULT_ROBOT}; with "
                   "--continue or --thread: the thread's)")
    p.add_argument("--model", help="model id (default: the robot's, else the configured one; none: the offline demo)")
    p.add_argument("--api-base", help="base URL of an OpenAI-compatible or local server (Ollama, LM Studio, vLLM)")
    p.add_argument("--folder", dest="run_folder", metavar="DIR",
                   help="folder the robot may read and propose changes in")
    p.add_argument("--apply", choices=("review", "auto"), default=None,
                   help="proposed file changes: review each hunk after the answer (default), or apply them at once")
    p.add_argument("--yes", "-y", action="store_true",
                   help="approve every tool call that the approval policy would ask about")
    from workspace.cli.runs import add_otel_option

    add_otel_option(p)
    add_record_options(p, what="robot thread")
    p.set_defaults(func=cmd_chat)


def cmd_chat(args: argparse.Namespace) -> int:
    args.quit_signal = None
    try:
        return int(asyncio.run(_chat(args)))
    except (asyncio.CancelledError, KeyboardInterrupt):
        # A second Ctrl-C (or SIGTERM) quit the chat (see Chat.on_signal): like `robotlab run`.
        if args.quit_signal == signal.SIGTERM:
            print("\nTerminated.", file=sys.stderr)
            return 128 + signal.SIGTERM
        raise KeyboardInterrupt from None  # "Cancelled.", exit 130


async def _chat(args: argparse.Namespace) -> int:
    from workspace import paths
    from workspace.approval import ApprovalGate, ApprovalPolicy
    from workspace.cli.record import open_store, open_workspace, stored_reference, thread_to_continue
    from workspace.cli.run import kept_server, run_config, run_folder, switched
    from workspace.session.thread import thread_server

    folder = run_folder(args)
    config = run_config(args, folder)
    store = None
    thread = None
    if args.continue_thread or args.thread:
        store = open_store(args)
        name = None
        if args.robot:
            from workspace.catalog import load_robot

            name = load_robot(args.robot, folder=folder).name
        try:
            thread = thread_to_continue(store, args, kind="robot", robot=name)
        except BaseException:
            store.close()
            raise
    reference = args.robot or (stored_reference(thread, "robot_file") if thread else DEFAULT_ROBOT)
    model = args.model or (thread.metadata.get("model") if thread else None)
    chat = Chat(args, config=config, folder=folder, reference=reference)
    chat._api_base = kept_server(thread, args.model) if thread is not None and not args.api_base else None
    robot = chat.build_robot(reference, model, api_base=chat._api_base)
    gate = ApprovalGate(ApprovalPolicy.load(paths.approval_policy_file()), chat.ask_approval)
    workspace = open_workspace(args, config=config, folder=folder, approval=gate, store=store)
    chat.workspace = workspace
    chat.install_signal_handlers()
    try:
        if thread is not None:
            chat.session = workspace.open_thread(thread.id, robot=robot)
            if switched(thread, args.model, args.api_base):
                previous = thread.metadata.get("model") or chat.session.default_model()
                chat.session.record_model(robot.model, previous=str(previous) if previous else None,
                                          api_base=thread_server(robot))
        chat.robot = robot
        return await chat.loop()
    finally:
        from workspace.delegation import stopped_in_background

        chat.remove_signal_handlers()
        # What the answers' robots delegated in the background and still runs stops with the chat, stored as such.
        workspace.close(delegated=stopped_in_background("the chat ended"))


class Chat:
    """One chat in the terminal: the loop, the slash commands, approvals and reviews inline."""

    def __init__(self, args: argparse.Namespace, *, config: Config, folder: Path | None, reference: str) -> None:
        from workspace.cli.chat_io import LineInput, TerminalInput, stdio_is_terminal
        from workspace.cli.render import EventPrinter
        from workspace.cli.runs import QuestionAfterOutput

        self.args = args
        self.config = config
        self.folder = folder
        self.reference = reference
        self.workspace: Workspace | None = None
        self.session: ThreadSession | None = None
        self.robot: Robot | None = None
        self.out = sys.stdout
        self.printer = EventPrinter(self.out, preview=100)
        self.questions = QuestionAfterOutput(self.printer)
        self.input: ChatInput = TerminalInput([*COMMANDS, "/quit"]) if stdio_is_terminal() else LineInput()
        #: The answer streaming now (Ctrl-C stops it), and whether Ctrl-C stopped the last one.
        self.current: Any = None
        self.interrupted = False
        self._main: asyncio.Task[Any] | None = None
        self._signals: list[int] = []
        #: Files and images ``/attach`` added, sent with the next message.
        self.attachments: list[Any] = []
        #: The models ``/model`` listed last (``/model N`` picks one), and the server of the chosen one.
        self._listed_models: list[ModelEntry] = []
        self._api_base: str | None = None

    # -- Ctrl-C and SIGTERM, for the whole chat -------------------------------------------------------
    def install_signal_handlers(self) -> None:
        """Ctrl-C stops the streaming answer; a second one (or one between answers, while the terminal
        is not in the prompt's hands) quits, as does SIGTERM. At the prompt Ctrl-C is a key (see
        :mod:`workspace.cli.chat_io`). One handler for the whole chat, so no press falls between the
        end of an answer and the next prompt."""
        loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.on_signal, sig)
                self._signals.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
                pass

    def remove_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._signals:
            loop.remove_signal_handler(sig)
        self._signals = []

    def on_signal(self, sig: int) -> None:
        run = self.current
        if sig == signal.SIGINT and run is not None and not run.done and not self.interrupted:
            self.interrupted = True
            print("\nStopping the answer… (Ctrl-C again quits)", file=sys.stderr)
            from workspace.cli.runs import stop_run

            # And what its robots delegated in the background (an earlier answer's too, stored as stopped).
            stop_run(run, "interrupted (Ctrl-C)", workspace=self.workspace)
            return
        self.args.quit_signal = sig
        if self._main is not None:
            self._main.cancel()

    # -- output -------------------------------------------------------------------------------------
    def say(self, text: str, code: str = "2") -> None:
        self.printer.finish()
        self.out.write(self.printer._c(code, text) + "\n")
        self.out.flush()

    # -- robots ---------------------------------------------------------------------------------------
    def build_robot(self, reference: str, model: str | None, *, api_base: str | None = None) -> Robot:
        """The robot ``reference`` with ``model`` (None: its own), its provider ready; a missing key raises.
        ``api_base``: the server of a model from a local server's list (else --api-base)."""
        from workspace.catalog import load_robot
        from workspace.cli.run import check_robot_file
        from workspace.cli.runs import check_key
        from workspace.providers import is_offline, provider_for

        check_robot_file(reference)
        robot = load_robot(reference, folder=self.folder, config=self.config, model=model,
                           api_base=api_base or self.args.api_base)
        if not is_offline(robot.model):
            check_key(str(robot.model), robot.api_base or self.config.get("llm.api_base"))
        robot.provider = provider_for(robot.model, api_base=robot.api_base, config=self.config,
                                  folder_written=robot.api_base_in_folder)
        return robot

    def _session(self) -> ThreadSession:
        """The chat's thread, created with its first message."""
        if self.session is None:
            from workspace.cli.record import metadata, robot_file

            assert self.workspace is not None and self.robot is not None
            from workspace.session.thread import thread_server

            self.session = self.workspace.new_thread(self.robot.name, robot=self.robot, metadata=metadata(
                "chat", robot_file=robot_file(self.reference), model=self.args.model, api_base=thread_server(self.robot)))
        return self.session

    # -- the loop -------------------------------------------------------------------------------------
    def banner(self) -> None:
        assert self.robot is not None
        label = self.robot.provider.label or str(self.robot.model)
        where = f" · folder {self.folder}" if self.folder else ""
        self.say(f"Chat with {self.robot.name} · {label}{where}", "1")
        if self.session is not None:
            self.recap()
        recorded = "not recorded (--no-record)" if self.args.no_record else "recorded as a thread the window lists"
        self.say(f"{KEYS_SHORT}. /help lists the commands. This chat is {recorded}.")

    def recap(self) -> None:
        """Where a resumed chat left off: the thread and its last exchange."""
        from workspace.cli.render import printable

        assert self.session is not None
        thread = self.session.thread
        views = self.session.transcript()
        self.say(f"Resuming thread {thread.id[:8]} “{printable(thread.display_title, one_line=True)}” "
                 f"({len(views)} message(s) on this branch).")
        if thread.folder and (self.folder is None or str(self.folder) != thread.folder):
            self.say(f"(It worked in the folder {printable(thread.folder, one_line=True)}; start with --folder "
                     "to work there again.)")
        for view in views[-2:]:
            self.say(f"  you: {_short(view.user_text)}")
            if view.text:
                self.say(f"  {self.session.thread.robot}: {_short(view.text)}")

    async def loop(self) -> int:
        self.banner()
        while True:
            try:
                text = await self.input.message("› ")
            except (EOFError, KeyboardInterrupt):
                self.say("Bye.")
                return 0
            stripped = text.strip()
            if not stripped:
                continue
            if stripped.startswith("/") and not stripped.startswith("//"):
                if not await self.command(stripped):
                    self.say("Bye.")
                    return 0
                continue
            await self.send(text[1:] if stripped.startswith("//") else text)

    async def send(self, text: str) -> None:
        from workspace.cli.runs import EXIT_CANCELLED, print_events
        from workspace.errors import Error

        session = self._session()
        try:
            run = session.send(text, attachments=list(self.attachments)) if self.attachments else session.send(text)
        except (Error, RuntimeError, ValueError) as exc:  # the run could not start; the chat goes on
            self.say(f"✗ {exc}", "31")
            return
        self.attachments = []
        self.current, self.interrupted = run, False
        try:
            status, _ = await print_events(run, self.questions, signals=False)
            await run.wait()
        finally:
            self.current = None
        from workspace.cli.memory_writes import waiting_line

        waiting = waiting_line(self.robot)
        if waiting:
            self.say(waiting, "33")
        changes = session.changes
        if changes is None or not changes.pending_files:
            return
        if self.interrupted or status == EXIT_CANCELLED:  # stopped: nothing is asked now
            self.say(f"✎ {len(changes.pending_files)} proposed file change(s) wait: /review to review them.", "33")
            await asyncio.to_thread(session.save_changes)
            return
        await self.review()

    # -- approvals and the review -----------------------------------------------------------------
    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        from workspace.approval import ApprovalDecision, unsandboxed
        from workspace.cli.render import printable
        from workspace.cli.server_requests import ask_server_request, is_server_request

        if is_server_request(request):  # an MCP server's sampling or elicitation: its own questions
            if not self.args.yes:
                await self.questions.printed(request.call_id)
            try:
                return await ask_server_request(request, yes=self.args.yes, interactive=True, read=self.input.answer)
            except KeyboardInterrupt:
                if self.session is not None:
                    self.session.stop("interrupted (Ctrl-C)")
                return ApprovalDecision(approved=False, reason="cancel")
        if self.args.yes and not unsandboxed(request):  # a command without a sandbox is asked every time
            return ApprovalDecision(approved=True, scope="once", reason="--yes")
        await self.questions.printed(request.call_id)
        where = f"{request.server}/" if request.server else ""
        self.say(f"{request.robot} wants to call {where}{request.tool} with:", "33")
        self.say(printable(json.dumps(request.input, indent=2, ensure_ascii=False)), "0")
        if request.effects:  # what the call does, which the policy decided by
            self.say(printable("That means " + ", ".join(e.describe() for e in request.effects) + "."), "33")
        try:
            answer = (await self.input.answer("Approve? [y]es / [n]o / [t]his thread / [a]lways: ")).strip().lower()
        except EOFError:
            return ApprovalDecision(approved=False, reason="no answer in the terminal")
        except KeyboardInterrupt:  # Ctrl-C at the question stops the answer, as it does while it streams
            if self.session is not None:
                self.session.stop("interrupted (Ctrl-C)")
            return ApprovalDecision(approved=False, reason="stopped by the user (Ctrl-C)")
        if answer in ("y", "yes"):
            return ApprovalDecision(approved=True)
        if answer in ("t", "thread"):
            return ApprovalDecision(approved=True, scope="thread")
        if answer in ("a", "always"):
            return ApprovalDecision(approved=True, scope="always")
        try:
            reason = (await self.input.answer("Reason (sent to the robot): ")).strip()
        except (EOFError, KeyboardInterrupt):
            reason = ""
        return ApprovalDecision(approved=False, reason=reason or "denied in the terminal")

    async def review(self) -> None:
        """Review the thread's proposed changes hunk by hunk, apply what was accepted, record the decision."""
        from workspace.cli.review import settle_in_terminal
        from workspace.persistence import StoreError

        session = self.session
        changes = session.changes if session is not None else None
        if session is None or changes is None or not changes.pending_files:
            self.say("Nothing waits for review." if self.folder else "No folder is open (start with --folder).")
            return
        async def ask(question: str) -> str:
            try:
                return await self.input.answer(question)
            except KeyboardInterrupt:  # Ctrl-C: stop reviewing (what is not decided is not applied)
                raise EOFError("Ctrl-C") from None

        setting = session.verify_setting()
        if setting.notice:
            self.say(setting.notice, "33")
        verify = session.verify_changes if setting.command is not None else None
        result = await settle_in_terminal(changes, mode="review", printer=self.printer, ask=ask, verify=verify)
        turn_id = session.thread.current_turn_id
        if result is not None and result.settled and turn_id is not None:
            try:
                session.store.append_event(session.thread_id, turn_id, changes.decided_event())
            except StoreError as exc:
                self.say(f"could not record the review: {exc}", "31")
        await asyncio.to_thread(session.save_changes)

    # -- slash commands ---------------------------------------------------------------------------
    async def command(self, line: str) -> bool:
        """Run a slash command; False to leave the chat."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        name = name.lower()
        if name in ("/exit", "/quit"):
            return False
        if name == "/help":
            self.say("\n".join([*COMMANDS.values(), "", KEYS_HELP]), "0")
        elif name == "/model":
            await self.model_command(rest)
        elif name == "/robot":
            self.switch_robot(rest)
        elif name == "/new":
            self.session = None
            self.say(f"New thread with {self.robot.name if self.robot else '?'} (from your next message).")
        elif name == "/review":
            await self.review()
        elif name == "/undo":
            await self.undo()
        elif name == "/export":
            self.export(rest)
        elif name == "/attach":
            self.attach(rest)
        elif name == "/detach":
            self.say(f"Dropped {len(self.attachments)} attachment(s)." if self.attachments else "Nothing was attached.")
            self.attachments = []
        elif name == "/compact":
            await self.compact()
        elif name == "/memory":
            from workspace.cli.memory_writes import memory_command

            memory_command(self.robot, rest, self.say)
        else:
            self.say(f"Unknown command {name}. /help lists the commands (start with // to send a text "
                     "beginning with /).", "33")
        return True

    def attach(self, path: str) -> None:
        """``/attach PATH``: read the file now (a file that cannot be attached is said at once) and send it with
        the next message; ``/attach`` alone lists what waits."""
        from workspace.attachments import AttachmentLimits, coerce_attachments, describe_size
        from workspace.cli.render import printable
        from workspace.errors import Error

        if not path:
            if not self.attachments:
                self.say("Nothing attached. /attach PATH sends a file or an image with your next message.")
            for item in self.attachments:
                self.say(f"📎 {printable(item.origin)} ({item.mime}, {describe_size(item.size)})")
            return
        try:
            found = coerce_attachments([path.strip().strip("'\"")], folder=self.folder,
                                       limits=AttachmentLimits.from_config(self.config))
        except (Error, OSError) as exc:
            self.say(f"✗ {exc}", "31")
            return
        for item in found:
            self.attachments.append(item)
            self.say(f"📎 {printable(item.origin)} ({item.mime}, {describe_size(item.size)}) goes with your next "
                     "message (/detach drops it).")

    async def model_command(self, rest: str) -> None:
        """``/model``: the available models, numbered; ``/model N`` or ``/model NAME`` switches."""
        if not rest:
            await self.list_models()
            return
        api_base: str | None = None
        if rest.isdigit():
            listed = self._listed_models
            if not listed:
                self.say("List the models first: /model", "33")
                return
            index = int(rest)
            if not 1 <= index <= len(listed):
                self.say(f"There is no model {index}: /model lists {len(listed)}.", "33")
                return
            rest, api_base = listed[index - 1].id, listed[index - 1].api_base
        self.switch_model(rest, api_base=api_base)

    async def list_models(self) -> None:
        """The models the configured local server and the hosted providers with a key offer (the window's
        picker's list: :func:`workspace.providers.listing.list_models`), numbered for ``/model N``."""
        from workspace.cli.render import printable
        from workspace.providers.listing import list_models

        assert self.robot is not None
        base = self.args.api_base or self.robot.api_base
        found = await list_models(self.config, model=self.robot.model or None, api_base=base, refresh=True)
        self._listed_models = found.models
        self.say(f"Model: {self.robot.provider.label or self.robot.model}", "0")
        number = 0
        for source in found.sources:
            if source.models:
                self.say(f"{source.name}:", "1")
            for entry in source.models:
                number += 1
                mark = "*" if entry.id == self.robot.model else " "
                detail = f"  ({entry.detail})" if entry.detail else ""
                self.say(f"{mark}{number:>4}  {printable(entry.id, one_line=True)}{detail}", "0")
        for problem in found.problems:
            self.say(f"! {problem}", "33")
        if not found.sources:
            self.say("No local server is configured and no provider's API key is set: set one (e.g. OPENAI_API_KEY) "
                     "or the API base of a local server in Settings (llm.api_base).", "33")
        self.say("/model N or /model NAME uses that model from your next message on; /model default goes back to "
                 "the robot's own; /model demo: the offline demo.")

    def switch_model(self, model: str, *, api_base: str | None = None) -> None:
        from workspace.catalog import load_robot
        from workspace.cli import CLIError
        from workspace.errors import Error

        assert self.robot is not None
        previous = self.robot.model
        try:
            default = load_robot(self.reference, folder=self.folder, config=self.config).model
            chosen: str | None = None if model.lower() == "default" else model
            robot = self.build_robot(self.reference, chosen, api_base=api_base)
            if self.session is not None:
                self.session.use_robot(robot)
                from workspace.session.thread import thread_server

                self.session.record_model(robot.model, previous=previous, default=default,
                                          api_base=thread_server(robot), chosen=chosen)
        except (CLIError, Error, RuntimeError, ValueError) as exc:
            self.say(f"✗ {exc}", "31")
            return
        self.robot = robot
        self.args.model = chosen
        self._api_base = api_base
        own = " (the robot's own)" if chosen is None else ""
        self.say(f"Model: {robot.provider.label or robot.model}{own} from your next message on.")

    def switch_robot(self, name: str) -> None:
        from workspace.catalog import list_robots
        from workspace.cli import CLIError
        from workspace.errors import Error

        if not name:
            current = self.robot.name if self.robot is not None else ""
            for info in list_robots(self.folder):
                mark = "*" if info.name == current else " "
                self.say(f"{mark} {info.name:<20} {info.description or ''}", "0")
            self.say("/robot NAME starts a new thread with that robot.")
            return
        try:
            robot = self.build_robot(name, self.args.model)
        except (CLIError, Error) as exc:
            self.say(f"✗ {exc}", "31")
            return
        self.robot, self.reference, self.session = robot, name, None
        self.say(f"New thread with {robot.name} · {robot.provider.label or robot.model} (from your next message).")

    async def compact(self) -> None:
        """``/compact``: the model summarises the turns before the latest; the marker is recorded."""
        if self.session is None:
            self.say("Nothing to compact yet: the thread starts with your next message.")
            return
        from workspace.errors import ProviderError
        from workspace.persistence import StoreError

        self.say("Compacting: the model summarises the earlier messages…")
        try:
            event = await self.session.compact()
        except (ProviderError, RuntimeError, StoreError) as exc:
            self.say(f"Could not compact: {exc}. The conversation is unchanged.", "31")
            return
        if event is None:
            self.say("Nothing to compact: there is no earlier turn to summarise yet.")
            return
        self.printer(event)
        self.printer.finish()

    async def undo(self) -> None:
        if self.folder is None or self.session is None:
            self.say("Nothing to undo: " + ("no folder is open (start with --folder)." if self.folder is None
                                            else "nothing was applied in this chat yet."))
            return
        result = await self.session.undo_changes()  # the robot hears it with the next message
        self.say(result.message or ("Undone." if result.ok else "Could not undo."), "0" if result.ok else "31")
        for conflict in getattr(result, "conflicts", []) or []:
            self.say(f"  {getattr(conflict, 'message', conflict)}", "31")

    def export(self, target: str) -> None:
        from workspace.exports import export_thread

        if self.session is None:
            self.say("Nothing to export yet: send a message first.")
            return
        path = Path(target).expanduser() if target else Path(f"thread-{self.session.thread_id[:8]}.md")
        fmt = {".json": "json", ".jsonl": "jsonl"}.get(path.suffix.lower(), "md")
        try:
            text = export_thread(self.session.store, self.session.thread_id, fmt)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.say(f"✗ Could not write {path}: {exc.strerror or exc}", "31")
            return
        self.say(f"Wrote {path} ({fmt}).")


def _short(text: str, limit: int = 100) -> str:
    from workspace.cli.render import printable

    line = " ".join(text.split())
    line = line if len(line) <= limit else line[: limit - 1] + "…"
    return printable(line, one_line=True)
