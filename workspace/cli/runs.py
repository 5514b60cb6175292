"""What ``robotlab run`` and ``robotlab network run`` share: their options, template parameters,
approval in the terminal, stopping on signals, printing the events and settling proposed changes.

A leaf of the CLI package: both commands import it, it imports neither.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from typing import Any

#: Exit statuses of ``robotlab run`` and ``robotlab network run`` (``robotlab run --help`` lists them).
EXIT_OK = 0
#: The run failed (the model or a tool failed it; the error is on stderr, or the run_failed line).
EXIT_FAILED = 1
#: Bad usage or configuration: nothing ran (unknown robot, missing key, bad file, bad option).
EXIT_USAGE = 2
#: The run stopped at the turn limit (``--max-turns``, ``agent.max_turns``) with the robot wanting to go on.
EXIT_TURN_LIMIT = 3
#: The run ended but its end could not be saved in the threads database (a full disk, a database locked
#: too long): the reason is on stderr and in the run's lines ("The end of the run could not be saved: ...").
#: A run that failed, stopped or hit the turn limit keeps that status.
EXIT_NOT_SAVED = 4
#: Stopped: Ctrl-C (128 + SIGINT); SIGTERM gives 143 (128 + 15).
EXIT_CANCELLED = 130

EXIT_STATUS_HELP = """exit status:
  0    the run finished
  1    the run failed (the error is on stderr; with --json also the run_failed line)
  2    nothing ran: bad usage or configuration (unknown robot, missing API key, bad file)
  3    stopped at the turn limit (--max-turns, agent.max_turns): the robot wanted to go on
  4    the run ended but its end could not be saved in the threads database (disk full): the reason
       is on stderr; free some space, the thread keeps what was saved before
  130  stopped by Ctrl-C (143: by SIGTERM)
  141  the reader of the output went away (`robotlab run ... | head -1`)"""

OUTPUT_HELP = """output:
  default  the text as it streams, tool calls and approvals as short lines (colours on a terminal)
  --plain  only the final answer on stdout, when the run ends (what llm prints), for shell scripts;
           questions, the review and errors go to stderr
  --json   one JSON object per event on stdout (JSON Lines, e.g. `| jq -c 'select(.kind=="text")'`);
           questions and the review go to stderr"""


def add_run_options(p: argparse.ArgumentParser, *, who: str) -> None:
    """The options ``run`` and ``network run`` share."""
    p.add_argument("--model", help="model id, e.g. openai/gpt-4o-mini or ollama_chat/llama3.1 (default: the robot's, "
                   "else the configured one; none: the offline demo)")
    p.add_argument("--api-base", help="base URL of an OpenAI-compatible or local server (Ollama, LM Studio, vLLM)")
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON object per event (JSON Lines)")
    output.add_argument("--plain", action="store_true",
                        help="print only the final answer (on stdout, when the run ends): for pipes and scripts")
    p.add_argument("--folder", dest="run_folder", metavar="DIR", help=f"folder {who} may read and propose changes in")
    p.add_argument(
        "--apply",
        choices=("review", "auto", "never"),
        default=None,
        help="what to do with proposed file changes (with --folder): review each hunk in the terminal "
        "(default when interactive), apply them all, or never write them. Default otherwise: they stay pending "
        "in the thread for `robotlab changes apply --thread ID` (the command is printed)",
    )
    p.add_argument("--yes", "-y", action="store_true",
                   help="approve every tool call that the approval policy would ask about, and MCP servers' sampling "
                   "requests (their requests for input get their defaults)")
    p.add_argument("--context", choices=("compact", "truncate", "error"), default=None,
                   help="when the conversation outgrows the model's context window: compact (summarise older "
                   "messages; the default, or llm.context_policy), truncate (leave out the oldest turns) or error "
                   "(fail before sending)")
    add_otel_option(p)


def add_otel_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--otel", action="store_true",
                   help="export the run as OpenTelemetry spans over OTLP (the OTEL_EXPORTER_OTLP_* variables say "
                   "where; needs pip install 'robotlab-workspace[otel]'); also tracing.otel in the configuration")


def tracing_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """``--otel``: the configuration override that switches tracing on (after checking it can be)."""
    if not getattr(args, "otel", False):
        return {}
    import os

    from workspace import tracing
    from workspace.cli import CLIError

    if not tracing.available():
        raise CLIError("--otel needs OpenTelemetry: pip install 'robotlab-workspace[otel]' "
                       "(opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)")
    os.environ[tracing.ENV_SWITCH] = "true"  # the option wins over the environment's setting
    return {"tracing": {"otel": True}}


def template_params(items: list[str]) -> dict[str, Any]:
    from workspace.cli import CLIError
    from workspace.network import NETWORK_RUN_OPTIONS
    from workspace.robot_runs import RUN_OPTIONS

    reserved = set(RUN_OPTIONS) | set(NETWORK_RUN_OPTIONS) | {"message"}
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise CLIError(f"--param {item!r}: write KEY=VALUE, e.g. --param customer_name=Ada")
        if key.strip() in reserved:
            raise CLIError(f"--param {key.strip()}: that name is a run option, not a template variable; "
                           f"use another name (reserved: {', '.join(sorted(reserved))})")
        try:
            params[key.strip()] = json.loads(value)
        except ValueError:
            params[key.strip()] = value
    return params


class SignalStop:
    """What :func:`stop_on_signals` saw: the signal that stopped the run (None: none did)."""

    signal: int | None = None

    @property
    def status(self) -> int | None:
        """The exit status for it (128 + the signal: 130 for Ctrl-C, 143 for SIGTERM)."""
        return 128 + self.signal if self.signal is not None else None


@contextlib.contextmanager
def stop_on_signals(run: Any) -> Iterator[SignalStop]:
    """While ``run`` streams: Ctrl-C (SIGINT) or SIGTERM stops it the way the app's Stop does, so the
    output still ends with ``run_cancelled`` (and what was done so far); a second one gives up at once
    (KeyboardInterrupt: "Cancelled.", exit 130). The handlers that were there before come back after."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    seen = SignalStop()
    presses = 0

    def stop(sig: int, reason: str) -> None:
        nonlocal presses
        presses += 1
        seen.signal = seen.signal or sig
        if presses > 1 and main is not None:
            main.cancel()
            return
        stop_run(run, reason)  # first: a terminal gone (its reader killed) makes the print below raise
        with contextlib.suppress(OSError, ValueError):
            print("\nCancelled. Stopping the run… (Ctrl-C again quits at once)", file=sys.stderr)

    installed: list[tuple[int, Any]] = []
    for sig, reason in ((signal.SIGINT, "interrupted (Ctrl-C)"), (signal.SIGTERM, "terminated (SIGTERM)")):
        try:
            previous = signal.getsignal(sig)
            loop.add_signal_handler(sig, stop, sig, reason)
            installed.append((sig, previous))
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            pass
    try:
        yield seen
    except asyncio.CancelledError:
        if presses > 1:
            raise KeyboardInterrupt from None
        raise
    finally:
        for number, previous in installed:
            loop.remove_signal_handler(number)
            with contextlib.suppress(TypeError, ValueError):  # asyncio.Runner's own Ctrl-C handling
                signal.signal(number, previous)


def stop_run(run: Any, reason: str, *, workspace: Any = None) -> None:
    """Stop ``run`` the way the window's Stop does: the run, and the work its robots delegated in the background
    (in its thread's runs; a run of no thread, in this run), which would otherwise go on until the process ends.
    ``workspace``: the thread's (:class:`~workspace.session.Workspace`), which stores the end of a delegate's run
    that went on after the run that started it ended (an earlier answer of ``robotlab chat``) with the reason
    (:func:`stopped_by`), so the thread's lane says so when it is opened again."""
    from workspace.delegation import owner_of, stop_delegations

    run.cancel(reason)
    owner = owner_of(run)
    if owner is None:
        return
    if workspace is not None and getattr(run, "thread_id", None) == owner:
        workspace.stop_delegated(owner, reason=stopped_by(reason))
    else:
        stop_delegations(owner)


def stopped_by(how: str) -> str:
    """Why a delegate's run that went on in the background stopped when the command line stopped it: ``how`` is
    what happened to the command ("interrupted (Ctrl-C)", "terminated (SIGTERM)")."""
    from workspace.delegation import stopped_in_background

    return stopped_in_background(f"robotlab was {how}")


def run_reporting_failure(args: argparse.Namespace, main: Any, *, who: str) -> int:
    """``asyncio.run(main(args))``; with ``--json``, a failure before the run started still gives the
    stream its one terminal event (a ``run_failed`` line on stdout) before the error on stderr."""
    from workspace.cli import CLIError
    from workspace.errors import Error

    args.run_started = False
    try:
        return int(asyncio.run(main(args)))
    except (CLIError, Error) as exc:
        if getattr(args, "json", False) and not args.run_started:
            from workspace import events as ev

            failed = ev.RunFailed(run_id="", robot=who, error=str(exc), error_type=type(exc).__name__)
            print(ev.to_json(failed), flush=True)
        raise


def saved_status(run: Any, status: int, printer: Any) -> int:
    """The exit status once a recorded run (:class:`~workspace.session.RecordedRun`) has ended:
    :data:`EXIT_NOT_SAVED` when its end could not be written to the database (said on stderr with
    ``--plain`` and ``--json``; the terminal's lines already showed the run's notice), else ``status``."""
    reason = getattr(run, "save_error", None)
    if not reason:
        return status
    if getattr(printer, "json_lines", False) or getattr(printer, "plain", False):
        from workspace.cli.render import printable
        from workspace.session.recording import NOT_SAVED

        sys.stderr.write(f"robotlab: {NOT_SAVED.lower()}: {printable(reason)}\n")
        sys.stderr.flush()
    return EXIT_NOT_SAVED if status == EXIT_OK else status


def hit_turn_limit(event: Any) -> bool:
    """Whether ``event`` ends a run (or a network's task) that stopped at the turn limit."""
    from workspace import events as ev

    if not isinstance(event, ev.RunFinished | ev.TaskFinished) or (isinstance(event, ev.RunFinished) and event.nested):
        return False  # a run inside the run (a task's run: its task_finished counts; a robot used as a tool)
    return getattr(event.result, "stop_reason", None) == "max_turns"


async def print_events(run: Any, printer: Any, *, signals: bool = True) -> tuple[int, SignalStop]:
    """Print every event of ``run`` (Ctrl-C and SIGTERM stop it, see :func:`stop_on_signals`, unless
    ``signals=False``: the caller handles them); the exit status: 0, 1 when it failed, 3 when it (or a
    network's task) stopped at the turn limit, 130 when it was cancelled (128 + the signal when one
    stopped it)."""
    from workspace import events as ev

    status = EXIT_OK
    limited: list[str] = []
    with stop_on_signals(run) if signals else contextlib.nullcontext(SignalStop()) as stopped:
        async for event in run:
            printer(event)
            if event.nested and event.terminal:
                pass  # a run inside the run ended (a network's task, a robot used as a tool): not the run
            elif isinstance(event, ev.RunFailed):
                status = EXIT_FAILED
            elif isinstance(event, ev.RunCancelled):
                status = EXIT_CANCELLED
            elif hit_turn_limit(event):
                limited.append(event.task or event.robot)
                if isinstance(event, ev.RunFinished):
                    status = EXIT_TURN_LIMIT
    printer.finish()
    if limited and status == EXIT_OK:
        status = EXIT_TURN_LIMIT  # a network whose tasks ran out of turns
    if status == EXIT_TURN_LIMIT and (getattr(printer, "json_lines", False) or getattr(printer, "plain", False)):
        # The text printer says it in its output; JSON and plain output say it where people look.
        print(f"robotlab: stopped at the turn limit ({', '.join(limited)}): the robot wanted to go on. Raise it "
              f"with --max-turns N (or agent.max_turns in the configuration). Exit status {EXIT_TURN_LIMIT}.",
              file=sys.stderr)
    return (stopped.status if stopped.status is not None else status), stopped


class QuestionAfterOutput:
    """Wraps a printer so that a question asked during a run waits until what came before it is printed.

    The agent asks for an approval as soon as it emits ``approval_requested``; the printer consumes the
    events in another task and may still be streaming the text that led to the call. Without this the
    question would appear mid-sentence, and the rest of the text under it. ``await printed(call_id)``
    returns once the printer has printed that request (at most ``timeout`` seconds later).
    """

    def __init__(self, printer: Any, *, timeout: float = 2.0) -> None:
        self.printer = printer
        self.timeout = timeout
        self._seen: set[str] = set()
        self._waiting: dict[str, asyncio.Future[None]] = {}

    def __getattr__(self, name: str) -> Any:  # json_lines, plain, out, _color... of the printer
        return getattr(self.printer, name)

    def __call__(self, event: Any) -> None:
        from workspace import events as ev

        self.printer(event)
        if isinstance(event, ev.ApprovalRequested):
            end_line = getattr(self.printer, "end_line", None)
            if callable(end_line):
                end_line()  # end a streamed line: the question starts on its own
            waiter = self._waiting.pop(event.id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            else:
                self._seen.add(event.id)

    def finish(self) -> None:
        self.printer.finish()

    async def printed(self, call_id: str) -> None:
        if call_id in self._seen:
            self._seen.discard(call_id)
            return
        waiter = self._waiting.setdefault(call_id, asyncio.get_running_loop().create_future())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), self.timeout)
        self._waiting.pop(call_id, None)


def make_printer(args: argparse.Namespace) -> Any:
    """The printer of ``run``'s output: text, ``--json`` lines or ``--plain`` (the final answer)."""
    from workspace.cli.render import EventPrinter, PlainPrinter

    if getattr(args, "plain", False):
        return PlainPrinter()
    return EventPrinter(json_lines=bool(getattr(args, "json", False)))


def machine_output(args: argparse.Namespace) -> bool:
    """Whether stdout carries output for programs (``--json``, ``--plain``): questions go to stderr."""
    return bool(getattr(args, "json", False) or getattr(args, "plain", False))


async def settle_changes(changes: Any, args: argparse.Namespace, stopped: SignalStop, printer: Any, *,
                         verify: Any = None, thread_id: str | None = None) -> Any:
    """What ``--apply`` says to do with the run's proposed changes (a review in the terminal when
    interactive); a run stopped by a signal writes nothing. The ApplyResult, or None. ``verify``: runs the
    verify command on a subset (see :func:`workspace.cli.review.settle_in_terminal`).

    With no ``--apply`` and no terminal to review in (stdin is not one, or ``--json``), a recorded run's
    proposal (``thread_id``) stays pending in its thread for ``robotlab changes apply``
    (:func:`workspace.cli.review.keep_pending`); an unrecorded run's has nowhere to wait and is not applied."""
    from workspace.cli.review import keep_pending, settle_in_terminal

    if changes is None or not getattr(changes, "files", None):
        return None
    mode = args.apply or ("review" if sys.stdin.isatty() and not args.json else None)
    why = "--apply never"
    if stopped.signal is not None:
        mode, why = "never", "the run was stopped"  # by the user or the system: nothing of the run is written
    elif mode is None and thread_id is not None:
        await keep_pending(changes, thread_id=thread_id, printer=printer, verify=verify)
        return None
    elif mode is None:
        mode, why = "never", "no terminal to review them in, and --no-record keeps no thread for them to wait in"
    return await settle_in_terminal(changes, mode=mode, printer=printer, verify=verify if mode != "never" else None,
                                    never_why=why)


async def settle_recorded(session: Any, args: argparse.Namespace, stopped: SignalStop, printer: Any) -> None:
    """:func:`settle_changes` for a recorded thread: the decision is recorded on the thread's turn
    (``change_decided``, as the window's apply does) and what is still unsettled, or unheard by the
    model, is kept with the thread, so ``--continue`` tells the model what happened to its proposal."""
    changes = session.changes
    if changes is None:
        return
    setting = session.verify_setting()
    if setting.notice:
        print(f"robotlab: {setting.notice}", file=sys.stderr)
    verify = session.verify_changes if setting.command is not None else None
    result = await settle_changes(changes, args, stopped, printer, verify=verify, thread_id=session.thread_id)
    turn_id = session.thread.current_turn_id
    if turn_id is not None and result is not None and result.settled:
        from workspace.persistence import StoreError

        with contextlib.suppress(StoreError):
            session.store.append_event(session.thread_id, turn_id, changes.decided_event())
    await asyncio.to_thread(session.save_changes)


def check_key(model: str, api_base: str | None) -> None:
    from workspace import secrets
    from workspace.cli import CLIError

    if api_base or secrets.provider_prefix(model) in secrets.LOCAL_PROVIDERS:
        return
    var = secrets.key_var_for(model)
    if var is None or secrets.get_key(var):  # a keyring key goes to the provider, not into the environment
        return
    raise CLIError(
        f"The model '{model}' needs an API key: set {var} (export {var}=...) or store it from the app's "
        "Settings. To run without a key, use a local server, e.g. --model ollama_chat/llama3.1 "
        "--api-base http://localhost:11434, or leave --model out for the offline demo."
    )


def terminal_approval(args: argparse.Namespace, printer: Any = None) -> Any:
    """The approval gate of a command-line run: the policy file, and questions asked in the terminal
    (after what the run printed so far, when ``printer`` is a :class:`QuestionAfterOutput`)."""
    from workspace import paths
    from workspace.approval import (
        ApprovalDecision,
        ApprovalGate,
        ApprovalPolicy,
        ApprovalRequest,
        unsandboxed,
    )

    policy = ApprovalPolicy.load(paths.approval_policy_file())

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        from workspace.cli.server_requests import ask_server_request, is_server_request

        if is_server_request(request):  # an MCP server's sampling or elicitation: its own questions
            interactive = sys.stdin.isatty()
            if interactive and not args.yes and isinstance(printer, QuestionAfterOutput):
                await printer.printed(request.call_id)
            return await ask_server_request(request, yes=args.yes, out=sys.stderr if machine_output(args) else sys.stdout,
                                            interactive=interactive)
        if args.yes and not unsandboxed(request):  # a command without a sandbox is asked every time
            return ApprovalDecision(approved=True, scope="once", reason="--yes")
        if not sys.stdin.isatty():
            return ApprovalDecision(
                approved=False,
                reason=f"'{request.tool}' needs approval; rerun with --yes or allow it in {paths.approval_policy_file()}",
            )
        from workspace.cli.review import read_terminal_line

        if isinstance(printer, QuestionAfterOutput):
            await printer.printed(request.call_id)

        # With --json or --plain, stdout carries only the output: the question goes to stderr.
        out = sys.stderr if machine_output(args) else sys.stdout
        where = f"{request.server}/" if request.server else ""
        args_text = json.dumps(request.input, indent=2, ensure_ascii=False)
        from workspace.cli.render import printable

        does = "".join(f"\nThat means {printable(e.describe())}." for e in request.effects[:1]) + "".join(
            f"\n  and {printable(e.describe())}." for e in request.effects[1:])
        prompt = (f"\n{request.robot} wants to call {where}{request.tool} with:\n{args_text}{does}\n"
                  "Approve? [y]es / [n]o / [a]lways: ")
        try:
            answer = (await read_terminal_line(prompt, out=out)).strip().lower()
        except EOFError:  # the terminal closed (Ctrl-D): no answer is a no
            return ApprovalDecision(approved=False, reason="no answer in the terminal (end of input)")
        if answer in ("y", "yes"):
            return ApprovalDecision(approved=True)
        if answer in ("a", "always"):
            return ApprovalDecision(approved=True, scope="always")
        try:
            reason = (await read_terminal_line("Reason (sent to the robot): ", out=out)).strip()
        except EOFError:
            reason = ""
        return ApprovalDecision(approved=False, reason=reason or "denied in the terminal")

    return ApprovalGate(policy, ask)
