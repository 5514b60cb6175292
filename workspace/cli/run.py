"""``robotlab run ROBOT "message"``: run a robot headless and print its events.

Every run is recorded as a thread of the app's database (the window lists it, marked as from the
terminal) unless ``--no-record``; ``--continue`` / ``--thread ID`` send the message in an earlier
thread, the robot getting the conversation so far.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.cli.record import add_record_options, looks_like_path
from workspace.cli.runs import (
    EXIT_STATUS_HELP,
    OUTPUT_HELP,
    QuestionAfterOutput,
    add_run_options,
    check_key,
    make_printer,
    print_events,
    run_reporting_failure,
    saved_status,
    settle_changes,
    settle_recorded,
    template_params,
    terminal_approval,
)

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.persistence import Store, ThreadInfo


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a robot on a message and print what it does",
        description="Run a robot (a name from `robotlab robots list`, or a robot/template .md file) on one "
        "message, streaming its text and tool calls. The run is recorded as a thread the window lists "
        "(--no-record: not); --continue or --thread ID sends the message in an earlier thread, and then "
        "ROBOT may be left out.",
        epilog=f"{OUTPUT_HELP}\n\n{EXIT_STATUS_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("robot", help="robot name or path to a robot .md file")
    p.add_argument("message", nargs="*", help="the message to send")
    add_run_options(p, who="the robot")
    p.add_argument("--max-turns", type=positive_int, metavar="N", help="stop after this many model turns (N >= 1)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="a variable for the robot's template (VALUE may be JSON); repeatable")
    p.add_argument("--attach", "-a", action="append", default=[], metavar="FILE",
                   help="send a file with the message: text (up to 100 KB), a PDF's text, or an image (PNG, JPEG, "
                   "GIF, WebP) for a model that takes images; inside --folder when one is given; repeatable")
    p.add_argument("--output-schema", metavar="FILE",
                   help="a JSON Schema file the answer must match (structured output): --plain prints the "
                   "object as JSON, --json has it in run_finished's result.output_data")
    p.add_argument("--narrate", action="store_true",
                   help="also write RobotLab's Narrator lines on stderr as the robot works (each model call, "
                   "each tool call with its first argument, each tool error), whatever the output format")
    add_record_options(p, what="robot thread")
    p.set_defaults(func=cmd_run)


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1 (argparse reports the error and exits 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give 1 or more") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {value})")
    return value


def check_robot_file(name: str) -> None:
    """A robot argument that is a path must name an existing file (else the error would be "unknown robot")."""
    from workspace.cli import CLIError

    if not looks_like_path(name):
        return
    path = Path(name)
    if path.is_dir():
        raise CLIError(f"{name} is a folder; give a robot .md file or a robot name (see `robotlab robots list`)")
    if not path.is_file():
        raise CLIError(f"robot file not found: {name} (no such file: {path.absolute()}). Check the path, or give "
                       "a robot name from `robotlab robots list`.")


def output_schema(path: str) -> dict[str, Any]:
    """``--output-schema FILE``: the JSON Schema in the file, checked."""
    import json

    from workspace.cli import CLIError
    from workspace.errors import ConfigurationError
    from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

    file = Path(path)
    try:
        schema = json.loads(read_text_bounded(file, CONFIG_FILE_BYTES, "output schema"))
    except ConfigurationError as exc:  # a FIFO, a device, more than the limit: the message names the fix
        raise CLIError(f"--output-schema {exc}") from exc
    except OSError as exc:
        raise CLIError(f"--output-schema {path}: cannot read it ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise CLIError(f"--output-schema {path}: not JSON ({exc}); give a JSON Schema file like "
                       '{"type": "object", "properties": {...}, "required": [...]}') from exc
    from workspace.output import OutputSchema, OutputValidationError

    try:
        OutputSchema.of(schema)
    except OutputValidationError as exc:
        raise CLIError(f"--output-schema {path}: {exc}") from exc
    return dict(schema)


def cmd_run(args: argparse.Namespace) -> int:
    _warm_up(args)
    return run_reporting_failure(args, _run, who=args.robot)


def _warm_up(args: argparse.Namespace) -> None:
    """While the configuration and the robot are read: import the template engine and, for a model given on
    the command line that an OpenAI-compatible server serves, the openai SDK (the first token comes sooner)."""
    import threading

    from workspace.shared_imports import settle_shared_imports

    # pydantic whole on this thread before the worker starts (the openai SDK builds on it, and this thread
    # imports it too, not always through the lock settle_shared_imports holds): two threads importing its
    # inner modules at once can break it ("partially initialized module 'pydantic._internal._validators'").
    settle_shared_imports()

    def work() -> None:
        try:
            import jinja2.sandbox  # noqa: F401

            if args.model:
                from workspace.providers import preload

                preload(args.model, args.api_base, None, litellm=False)
        except Exception:  # the run itself loads (and reports) what is missing
            pass

    threading.Thread(target=work, name="robotlab-warm-up", daemon=True).start()


def run_config(args: argparse.Namespace, folder: Path | None) -> Config:
    """The configuration of a command-line run: the files, then ``--model``, ``--api-base`` and
    ``--apply auto`` (the review mode of the thread's change set)."""
    from workspace.cli.trust import warn_if_untrusted
    from workspace.config import load_config
    from workspace.providers import preload_in_background

    overrides: dict[str, Any] = {}
    if args.model:
        overrides.setdefault("llm", {})["model"] = args.model
    if args.api_base:
        overrides.setdefault("llm", {})["api_base"] = args.api_base
    # What --apply says, whatever the files say (the folder's review.mode is not the command line's).
    overrides["review"] = {"mode": "auto" if getattr(args, "apply", None) == "auto" else "review"}
    from workspace.cli.runs import tracing_overrides

    overrides.update(tracing_overrides(args))
    config = load_config(folder, overrides=overrides)
    if not args.model:  # the configured model's openai SDK loads in a thread while the robot is read
        preload_in_background(config.get("llm.model"), args.api_base or config.get("llm.api_base"), config,
                              litellm=False)
    warn_if_untrusted(config)
    return config


def run_folder(args: argparse.Namespace) -> Path | None:
    from workspace.cli import CLIError

    folder_arg = getattr(args, "run_folder", None) or getattr(args, "folder", None)
    folder = Path(folder_arg).resolve() if folder_arg else None
    if folder is not None and not folder.is_dir():
        raise CLIError(f"--folder {folder_arg}: no such folder")
    return folder


def known_robot(word: str, folder: Path | None) -> bool:
    """Whether ``word`` names a robot (a robot file, or a robot of the catalog)."""
    if looks_like_path(word):
        return Path(word).is_file()
    from workspace.catalog import list_robots

    return any(info.name == word for info in list_robots(folder))


def continued_thread(args: argparse.Namespace, folder: Path | None,
                     store: Store) -> tuple[ThreadInfo, str | None, str]:
    """For ``--continue`` / ``--thread``: the thread, the robot given (None: the thread's), the message.

    ROBOT may be left out: the first word is the robot only when more words follow and it names a
    robot (a robot file or a robot of the catalog); ``--continue`` then takes that robot's latest thread.
    """
    from workspace.cli.record import thread_to_continue
    from workspace.persistence import ThreadInfo

    words = [args.robot, *args.message]
    given: str | None = None
    if len(words) >= 2 and known_robot(words[0], folder):
        given, words = words[0], words[1:]
    name = None
    if given is not None:
        name = given
        if looks_like_path(given):
            from workspace.catalog import load_robot

            name = load_robot(given, folder=folder).name
    thread = thread_to_continue(store, args, kind="robot", robot=name)
    assert isinstance(thread, ThreadInfo)
    return thread, given, " ".join(words)


def kept_server(thread: ThreadInfo, model: str | None) -> str | None:
    """The server a continued thread goes on with when no ``--api-base`` is given: the one it was held with
    (its metadata's ``api_base``), unless ``--model`` names another model than the thread's (a switch)."""
    stored = thread.metadata.get("api_base")
    if not (isinstance(stored, str) and stored):
        return None
    return stored if not model or model == thread.metadata.get("model") else None


def switched(thread: ThreadInfo, model: str | None, api_base: str | None) -> bool:
    """Whether ``--model`` / ``--api-base`` switch a continued thread to another model or server (the user's
    explicit choice, recorded as a ``model_changed`` event)."""
    from workspace.urls import without_credentials

    if model and thread.metadata.get("model") != model:
        return True
    return bool(api_base) and without_credentials(str(api_base)) != (thread.metadata.get("api_base") or "")


async def _run(args: argparse.Namespace) -> int:
    from workspace.catalog import load_robot
    from workspace.cli import CLIError
    from workspace.cli.record import (
        metadata,
        open_store,
        open_workspace,
        recorded_hint,
        robot_file,
        stored_reference,
    )
    from workspace.providers import is_offline, provider_for
    from workspace.session.thread import thread_server

    folder = run_folder(args)
    config = run_config(args, folder)
    from workspace.cli.changes import warn_interrupted_applies

    warn_interrupted_applies(folder)  # a crash cut an apply short: say so before anything else is written
    continuing = bool(args.continue_thread or args.thread)
    store: Store | None = None
    thread: ThreadInfo | None = None
    reference = args.robot
    model = args.model
    if continuing:
        store = open_store(args)
        try:
            thread, given, message = continued_thread(args, folder, store)
        except BaseException:
            store.close()
            raise
        reference = given or stored_reference(thread, "robot_file")
        explicit_base = args.api_base
        args.api_base = args.api_base or kept_server(thread, model)
        model = model or thread.metadata.get("model")
    else:
        message = " ".join(args.message)
        if not message.strip():
            raise CLIError(f"give the message after the robot: robotlab run {args.robot} \"your message\" "
                           "(or --continue \"message\" to go on with the latest thread)")
    check_robot_file(reference)
    robot = load_robot(reference, folder=folder, config=config, model=model, api_base=args.api_base)
    if not is_offline(robot.model):
        check_key(robot.model, robot.api_base or config.get("llm.api_base"))
    robot.provider = provider_for(robot.model, api_base=robot.api_base, config=config,
                                  folder_written=robot.api_base_in_folder)
    from workspace.catalog import bus_peers

    bus_peers(robot, folder=folder, config=config, model=model, api_base=args.api_base)  # ``bus: name``: its peers answer
    if args.context:
        robot.context_policy = args.context
    if args.narrate:
        from workspace.narrator import Narrator

        robot.on(Narrator)
    printer = QuestionAfterOutput(make_printer(args))
    approval = terminal_approval(args, printer)
    options: dict[str, Any] = template_params(args.param)
    if args.max_turns is not None:
        options["max_turns"] = args.max_turns
    if args.output_schema:
        options["output_type"] = output_schema(args.output_schema)
    if args.attach:  # read (and refused) before anything is recorded or sent
        from workspace.attachments import AttachmentLimits, coerce_attachments

        options["attachments"] = coerce_attachments(args.attach, folder=folder,
                                                    limits=AttachmentLimits.from_config(config))

    if args.no_record:
        changes = None
        if folder is not None:
            from workspace.changes import ChangeSet

            changes = ChangeSet(folder, mode="auto" if args.apply == "auto" else "review")
            options["folder"] = folder
            options["changes"] = changes
        if store is not None and thread is not None:  # --continue without recording: the conversation so far
            robot.history = store.history_messages(thread.id)
            store.close()
        run = robot.stream(message, **options, approval=approval)
        args.run_started = True
        status, stopped = await print_events(run, printer)
        await settle_changes(changes, args, stopped, printer, verify=_verify_for(config, robot, folder, changes))
        _memory_not_kept(robot)
        return status

    workspace = open_workspace(args, config=config, folder=folder, approval=approval, store=store)
    try:
        if thread is not None:
            session = workspace.open_thread(thread.id, robot=robot)
            if switched(thread, args.model, explicit_base):
                previous = thread.metadata.get("model") or session.default_model()
                session.record_model(robot.model, previous=str(previous) if previous else None,
                                     api_base=thread_server(robot))
        else:
            session = workspace.new_thread(robot.name, robot=robot, metadata=metadata(
                "run", robot_file=robot_file(args.robot), model=args.model, api_base=thread_server(robot)))
        run = session.send(message, **options)
        args.run_started = True
        status, stopped = await print_events(run, printer)
        await run.wait()
        status = saved_status(run, status, printer)
        await settle_recorded(session, args, stopped, printer)
        _memory_not_kept(robot)
        if not args.json and not args.plain:
            recorded_hint(session.thread_id)
        return status
    finally:
        from workspace.delegation import stopped_in_background

        # What the run's robots delegated in the background and still runs stops with the command, stored as such.
        workspace.close(delegated=stopped_in_background("robotlab run ended"))


def _memory_not_kept(robot: Any) -> None:
    """The memory writes the run proposed for review end with it: said on stderr (workspace.cli.memory_writes)."""
    from workspace.cli.memory_writes import not_kept_lines

    for line in not_kept_lines(robot):
        print(line, file=sys.stderr)


def _verify_for(config: Any, robot: Any, folder: Path | None, changes: Any) -> Any:
    """The verify step of an unrecorded run's review (None: no verify command; a folder's own ignored when
    untrusted, said on stderr)."""
    from workspace.session.verify import run_verify, verify_command

    if changes is None:
        return None
    setting = verify_command(config, robot, folder=folder)
    if setting.notice:
        print(f"robotlab: {setting.notice}", file=sys.stderr)
    command = setting.command
    if command is None:
        return None

    async def verify(subset: str) -> Any:
        return await run_verify(command, changes, subset=subset)

    return verify
