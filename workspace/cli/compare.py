"""``robotlab run ROBOT "message" --compare MODEL[,MODEL...]`` (or ``--robots A,B``): candidates at once.

The candidates are ROBOT (with ``--model``'s model, else its own) and then each MODEL of ``--compare`` (ROBOT
with that model) or each robot of ``--robots``: 2 to 4 in all. They run at the same time
(:mod:`workspace.session.compare`); requests to one server are bounded by its concurrency, so candidates of a
local server queue unless ``llm.max_concurrent_requests`` allows more.

Each candidate is recorded as a thread of its own; the threads are linked by the ``comparison`` id in their
metadata (with ``candidate``: 0, 1, ... and ``candidate_label``). With ``--folder``, each candidate's proposed
changes stay pending in its thread, nothing is written: ``robotlab changes list`` shows every candidate's
hunks, ``robotlab changes apply --take ID...`` applies the chosen ones as one set
(:mod:`workspace.cli.combined`).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workspace import events as ev
    from workspace.robot import Robot
    from workspace.session import ThreadSession
    from workspace.session.compare import CandidateResult


def register(sub: Any) -> None:
    """``--compare`` and ``--robots`` on ``robotlab run`` (registered after it: this module builds on
    :mod:`workspace.cli.run`, which knows nothing of comparisons)."""
    run = sub.choices["run"]
    add_compare_options(run)
    run.set_defaults(func=cmd_run_or_compare)


def cmd_run_or_compare(args: argparse.Namespace) -> int:
    """``robotlab run``: a comparison when ``--compare`` or ``--robots`` is given, else one run."""
    if wanted(args):
        return cmd_compare(args)
    from workspace.cli.run import cmd_run

    return cmd_run(args)


def add_compare_options(p: argparse.ArgumentParser) -> None:
    """``--compare`` and ``--robots``."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--compare", metavar="MODEL[,MODEL...]",
                       help="also run the message with these models (ROBOT with each), all at once: 2-4 candidates "
                       "with ROBOT's own; each answer is shown under its model, with --folder each candidate's "
                       "changes wait for `robotlab changes list` / `changes apply --take`")
    group.add_argument("--robots", metavar="ROBOT[,ROBOT...]",
                       help="also run the message with these robots, all at once (as --compare, robots instead of "
                       "models; a robot may be given twice to run it several times)")


def wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "compare", None) or getattr(args, "robots", None))


def _names(text: str, option: str) -> list[str]:
    from workspace.cli import CLIError

    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise CLIError(f"{option} {text!r}: an empty name; give names separated by commas, e.g. {option} a,b")
    return names


def _check(args: argparse.Namespace) -> None:
    from workspace.cli import CLIError
    from workspace.session.compare import MAX_CANDIDATES

    if args.continue_thread or args.thread:
        raise CLIError("--compare and --robots start new threads (one per candidate); leave out --continue/--thread")
    if getattr(args, "apply", None) == "auto":
        raise CLIError("--compare and --robots keep every candidate's changes pending: leave out --apply auto, then "
                       "take hunks with `robotlab changes apply --take ID...`")
    if (getattr(args, "run_folder", None) or getattr(args, "folder", None)) and args.no_record:
        raise CLIError("With --folder the candidates' changes wait for review in their threads: leave out --no-record")
    if args.output_schema:
        raise CLIError("--output-schema is for one run; leave it out with --compare and --robots")
    extra = _names(args.compare, "--compare") if args.compare else _names(args.robots, "--robots")
    if not 1 <= len(extra) <= MAX_CANDIDATES - 1:
        raise CLIError(f"{'--compare' if args.compare else '--robots'}: give 1 to {MAX_CANDIDATES - 1} names (with "
                       f"ROBOT's own that is 2 to {MAX_CANDIDATES} candidates), not {len(extra)}")


def _robots(args: argparse.Namespace, folder: Any, config: Any) -> tuple[list[Robot], list[str]]:
    from workspace.catalog import load_robot
    from workspace.cli.run import check_robot_file
    from workspace.cli.runs import check_key
    from workspace.providers import is_offline, provider_for
    from workspace.session.compare import Candidate, candidate_labels

    specs: list[Candidate]
    if args.compare:
        specs = [Candidate(args.robot, model=args.model)] + [Candidate(args.robot, model=m)
                                                             for m in _names(args.compare, "--compare")]
    else:
        specs = [Candidate(name, model=args.model) for name in [args.robot, *_names(args.robots, "--robots")]]
    robots: list[Robot] = []
    for spec in specs:
        assert isinstance(spec.robot, str)
        check_robot_file(spec.robot)
        robot = load_robot(spec.robot, folder=folder, config=config, model=spec.model, api_base=args.api_base)
        if not is_offline(robot.model):
            check_key(robot.model, robot.api_base or config.get("llm.api_base"))
        robot.provider = provider_for(robot.model, api_base=robot.api_base, config=config,
                                      folder_written=robot.api_base_in_folder)
        if args.context:
            robot.context_policy = args.context
        robots.append(robot)
    return robots, candidate_labels(specs, robots)


def cmd_compare(args: argparse.Namespace) -> int:
    from workspace.cli.runs import run_reporting_failure

    _check(args)
    return run_reporting_failure(args, _run, who=args.robot)


async def _run(args: argparse.Namespace) -> int:
    from workspace.cli import CLIError
    from workspace.cli.changes import warn_interrupted_applies
    from workspace.cli.record import metadata, open_workspace, robot_file
    from workspace.cli.run import run_config, run_folder
    from workspace.cli.runs import stop_on_signals, template_params, terminal_approval
    from workspace.session.compare import CandidateResult, run_candidates
    from workspace.session.thread import thread_server

    message = " ".join(args.message)
    if not message.strip():
        raise CLIError(f"give the message after the robot: robotlab run {args.robot} \"your message\" --compare ...")
    folder = run_folder(args)
    config = run_config(args, folder)
    warn_interrupted_applies(folder)
    robots, labels = _robots(args, folder, config)
    given = [args.robot] * len(robots) if args.compare else [args.robot, *_names(args.robots, "--robots")]
    options: dict[str, Any] = template_params(args.param)
    if args.max_turns is not None:
        options["max_turns"] = args.max_turns
    if args.attach:
        from workspace.attachments import AttachmentLimits, coerce_attachments

        options["attachments"] = coerce_attachments(args.attach, folder=folder,
                                                    limits=AttachmentLimits.from_config(config))
    approval = terminal_approval(args, None)
    printer = _Printer(args, labels)
    comparison = uuid.uuid4().hex[:12]
    workspace = open_workspace(args, config=config, folder=folder, approval=approval)
    try:
        # (run_config made review.mode "review": every candidate proposes, nothing is written)
        started: list[tuple[CandidateResult, Any]] = []
        sessions: list[ThreadSession] = []
        for index, (robot, label) in enumerate(zip(robots, labels, strict=True)):
            session = workspace.new_thread(robot.name, robot=robot, metadata=metadata(
                "run", robot_file=robot_file(given[index]), model=robot.model, api_base=thread_server(robot),
                comparison=comparison, candidate=index, candidate_label=label, candidates=len(robots)))
            sessions.append(session)
            result = CandidateResult(index=index, label=label, robot=robot.name, model=robot.model,
                                     thread_id=session.thread_id)
            run = session.send(message, candidate=index, **options)
            started.append((result, run))
        args.run_started = True
        # Ctrl-C stops every candidate, and what their robots delegated in the background (stored as stopped so)
        with stop_on_signals(_Every([run for _, run in started], workspace=workspace)) as stopped:
            results = await run_candidates(started, on_event=printer)
            for _, run in started:
                await run.wait()
        if stopped.status is not None:
            printer.summary(results, {})
            return stopped.status
        notes = await _proposals(sessions, printer) if folder is not None else {}
        printer.summary(results, notes)
        return 0 if all(r.status == "finished" for r in results) else 1
    finally:
        from workspace.delegation import stopped_in_background

        # What the candidates' robots delegated in the background and still runs stops with the command, stored as
        # such (as for one run).
        workspace.close(delegated=stopped_in_background("robotlab run ended"))


async def _proposals(sessions: list[ThreadSession], printer: _Printer) -> dict[int, list[str]]:
    """Per candidate: what it proposed and, with a verify command in force, the verify run on its own
    proposal in the sandbox (each candidate's own layer over the folder; recorded in its thread)."""
    import asyncio

    from workspace.isolation import IsolationError, SandboxUnavailable

    notes: dict[int, list[str]] = {}
    checks = []
    for index, session in enumerate(sessions):
        changes = session.changes
        if changes is None or not changes.pending_files:
            notes[index] = ["proposed no file change"]
            continue
        counts = changes.counts()
        names = ", ".join(fc.display_path for fc in changes.pending_files[:4])
        more = f" and {len(changes.pending_files) - 4} more" if len(changes.pending_files) > 4 else ""
        notes[index] = [f"proposed: {names}{more} ({counts.hunks} hunk{'s' if counts.hunks != 1 else ''}, "
                        f"+{counts.added} -{counts.removed})"]
        if session.verify_setting().command is not None:
            checks.append((index, session))
    try:
        verified = await asyncio.gather(*(s.verify_changes("proposed") for _, s in checks))
    except (SandboxUnavailable, IsolationError) as exc:
        print(f"robotlab: the verify command could not run: {exc}", file=sys.stderr)
        return notes
    for (index, _), event in zip(checks, verified, strict=True):
        if event is None:
            continue
        printer.verified(event.replace(candidate=index))
        notes[index].append(event.describe())
    return notes


class _Every:
    """The candidates' runs as one for :func:`~workspace.cli.runs.stop_on_signals`: a stop stops them all, and what
    their robots delegated in the background; ``workspace`` (the candidates' threads') stores the end of a delegate's
    run that went on after its candidate's run ended, with why, so its lane says so when the thread is opened."""

    def __init__(self, runs: list[Any], *, workspace: Any) -> None:
        self.runs = runs
        self.workspace = workspace

    def cancel(self, reason: str) -> None:
        from workspace.cli.runs import stop_run

        for run in self.runs:
            stop_run(run, reason, workspace=self.workspace)


class _Printer:
    """The output of a comparison: ``--json`` prints every event as it comes (each with its ``candidate``);
    otherwise a line as each candidate ends, then each answer under its name with its tokens and time."""

    def __init__(self, args: argparse.Namespace, labels: list[str]) -> None:
        self.json = bool(args.json)
        self.plain = bool(args.plain)
        self.labels = labels

    def __call__(self, event: ev.Event) -> None:
        from workspace import events as ev

        if self.json:
            print(ev.to_json(event), flush=True)
            return
        if event.terminal and not event.nested and event.candidate is not None and not self.plain:
            word = {"run_finished": "finished", "run_failed": "failed", "run_cancelled": "stopped"}[event.kind]
            print(f"  candidate {event.candidate} ({self.labels[event.candidate]}) {word}", file=sys.stderr, flush=True)

    def verified(self, event: ev.VerifyFinished) -> None:
        from workspace import events as ev

        if self.json:
            print(ev.to_json(event), flush=True)

    def summary(self, results: list[CandidateResult], notes: dict[int, list[str]]) -> None:
        from workspace.cli.render import printable

        if self.json:
            return
        for r in results:
            if self.plain:
                print(f"== {r.label} ==")
                print(r.text if r.status == "finished" else f"({r.status}: {r.error})")
                continue
            print(f"\n── candidate {r.index}: {printable(r.label, one_line=True)} ── {_figures(r)}")
            if r.status != "finished":
                print(f"{r.status}: {printable(r.error or '', one_line=True)}")
            elif r.text:
                print(printable(r.text))
            for note in notes.get(r.index, []):
                print(f"  {printable(note, one_line=True)}")
            if notes and r.thread_id is not None:
                print(f"  (thread {r.thread_id[:8]})")
        if notes and not self.plain and results and results[0].thread_id:
            first = results[0].thread_id[:8]
            print(f"\nThe proposed changes wait for review: `robotlab changes list --thread {first}` lists every "
                  f"candidate's hunks, `robotlab changes apply --thread {first} --take ID...` applies the ones you "
                  "choose.", file=sys.stderr)


def _figures(r: CandidateResult) -> str:
    parts = [f"{r.usage.input_tokens} → {r.usage.output_tokens} tokens"]
    if r.ttft is not None:
        parts.append(f"first token {r.ttft:.2f} s")
    parts.append(f"{r.duration:.2f} s")
    return " · ".join(parts)
