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


def add_run_options(p: argparse.ArgumentParser, *, who: str) -> None:
    """The options ``run`` and ``network run`` share."""
    p.add_argument("--model", help="model id, e.g. openai/gpt-4o-mini or ollama_chat/llama3.1 (default: the robot's, "
                   "else the configured one; none: the offline demo)")
    p.add_argument("--api-base", help="base URL of an OpenAI-compatible or local server (Ollama, LM Studio, vLLM)")
    p.add_argument("--json", action="store_true", help="print one JSON object per event")
    p.add_argument("--folder", dest="run_folder", help=f"folder {who} may read and propose changes in")
    p.add_argument(
        "--apply",
        choices=("review", "auto", "never"),
        default=None,
        help="what to do with proposed file changes (with --folder): review each hunk in the terminal "
        "(default when interactive), apply them all, or never write (default otherwise)",
    )
    p.add_argument("--yes", "-y", action="store_true",
                   help="approve every tool call that the approval policy would ask about")
    p.add_argument("--context", choices=("compact", "truncate", "error"), default=None,
                   help="when the conversation outgrows the model's context window: compact (summarise older "
                   "messages; the default, or llm.context_policy), truncate (leave out the oldest turns) or error "
                   "(fail before sending)")


def template_params(items: list[str]) -> dict[str, Any]:
    from workspace.cli import CLIError
    from workspace.network import NETWORK_RUN_OPTIONS
    from workspace.robot import RUN_OPTIONS

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
        print("\nCancelled. Stopping the run… (Ctrl-C again quits at once)", file=sys.stderr)
        run.cancel(reason)

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


async def print_events(run: Any, printer: Any) -> tuple[int, SignalStop]:
    """Print every event of ``run`` (Ctrl-C and SIGTERM stop it, see :func:`stop_on_signals`); the exit
    status: 0, 1 when it failed, 130 when it was cancelled (128 + the signal when one stopped it)."""
    from workspace import events as ev

    status = 0
    with stop_on_signals(run) as stopped:
        async for event in run:
            printer(event)
            if isinstance(event, ev.RunFailed):
                status = 1
            elif isinstance(event, ev.RunCancelled):
                status = 130
    printer.finish()
    return (stopped.status if stopped.status is not None else status), stopped


async def settle_changes(changes: Any, args: argparse.Namespace, stopped: SignalStop, printer: Any) -> None:
    """What ``--apply`` says to do with the run's proposed changes (a review in the terminal when
    interactive); a run stopped by a signal writes nothing."""
    if changes is None or not getattr(changes, "files", None):
        return
    mode = args.apply or ("review" if sys.stdin.isatty() and not args.json else "never")
    if stopped.signal is not None:
        mode = "never"  # stopped by the user or the system: nothing of the run is written
    from workspace.cli.review import settle_in_terminal

    await settle_in_terminal(changes, mode=mode, printer=printer)


def check_key(model: str, api_base: str | None) -> None:
    from workspace import secrets
    from workspace.cli import CLIError

    if api_base or secrets.provider_prefix(model) in secrets.LOCAL_PROVIDERS:
        return
    if secrets.export_key_for(model):
        return
    var = secrets.key_var_for(model)
    raise CLIError(
        f"The model '{model}' needs an API key: set {var} (export {var}=...) or store it from the app's "
        "Settings. To run without a key, use a local server, e.g. --model ollama_chat/llama3.1 "
        "--api-base http://localhost:11434, or leave --model out for the offline demo."
    )


def terminal_approval(args: argparse.Namespace) -> Any:
    from workspace import paths
    from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest

    policy = ApprovalPolicy.load(paths.approval_policy_file())

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        if args.yes:
            return ApprovalDecision(approved=True, scope="once", reason="--yes")
        if not sys.stdin.isatty():
            return ApprovalDecision(
                approved=False,
                reason=f"'{request.tool}' needs approval; rerun with --yes or allow it in {paths.approval_policy_file()}",
            )
        from workspace.cli.review import read_terminal_line

        # With --json, stdout carries only JSON lines: the question goes to stderr.
        out = sys.stderr if getattr(args, "json", False) else sys.stdout
        where = f"{request.server}/" if request.server else ""
        args_text = json.dumps(request.input, indent=2, ensure_ascii=False)
        prompt = f"\n{request.robot} wants to call {where}{request.tool} with:\n{args_text}\nApprove? [y]es / [n]o / [a]lways: "
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
