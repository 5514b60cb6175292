"""The desktop application: QApplication + qasync, the composition root of the window.

``run_app(args)`` is what ``robotlab`` (no sub-command) calls. Options:
``--folder DIR``, ``--theme light|dark``, ``--offscreen-smoke`` (show the window, print
"main window shown", quit cleanly), ``--quit-after SECONDS``.

Shutdown is driven from ``aboutToQuit``: owned tasks are cancelled and awaited, running
runs record their end, the database is closed, and then the asyncio loop is closed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType, ModuleType

    from PySide6.QtCore import QCoreApplication

    from workspace.config import Config
    from workspace.providers.base import Provider

log = logging.getLogger("ui.app")

#: Milliseconds after the window is filled in before the model library starts loading in a thread.
PRELOAD_AFTER_MS = 150
#: When the common code lexers' joined rules are built (in a thread of their own), after the Markdown libraries load.
PREPARE_LEXERS_AFTER_MS = 5000

#: What the first thread opened imports (reading its turns, the inspector's contents, the first tool card): the
#: Markdown libraries' worker imports them after start-up, so the first click does not.
OPEN_MODULES = ("ui.transcript", "ui.compare.session", "ui.inspector.contents", "workspace.ask_user",
                "workspace.readable", "workspace.session.verify")

#: What filling the window in and making the docks' panes import besides the panes' own modules: a staged start-up
#: imports them in its worker thread with the widgets' modules, so that the window's thread imports nothing of its
#: own during start-up (``tests/ui/test_window_build_steps.py`` lists any it does).
AHEAD_MODULES = ("workspace.providers.demo", "workspace.providers.testing", "workspace.session.run_marks",
                 "workspace.cli", "workspace.knowledge", "workspace.mcp.manager", "workspace.mcp.lifecycle",
                 "workspace.mcp.requests", "ui.window.change_cards", "ui.mcp.resources", "pygments.styles.friendly",
                 "pygments.styles.monokai", "pygments.token")


def _load_open_libraries() -> None:
    """The Markdown libraries (:func:`ui.markdown.load_libraries`) and :data:`OPEN_MODULES`: no Qt, for a worker."""
    import importlib

    from ui import markdown

    markdown.load_libraries()
    for name in OPEN_MODULES:
        importlib.import_module(name)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="robotlab", description="RobotLab Workspace desktop window")
    parser.add_argument("--folder", help="the folder robots may read and propose changes in")
    parser.add_argument("--theme", choices=("light", "dark"), help="colour theme (default: the saved one)")
    parser.add_argument("--offscreen-smoke", action="store_true", help="show the window, print and quit")
    parser.add_argument("--quit-after", type=float, help="quit after this many seconds")
    parser.add_argument("--db", help=argparse.SUPPRESS)
    return parser.parse_args(list(argv))


def ensure_platform() -> None:
    """With no display on Linux, fall back to offscreen instead of letting Qt abort the process."""
    if sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"


def check_qt_binding() -> None:
    """Refuse PySide6 6.12.0 on Python 3.11: its wheels assume an immortal ``None`` (3.12+).

    Every void Qt call (``QLabel.setText``, ``QPainter.setPen``...) then drops a reference to
    ``None`` and a few thousand calls abort the interpreter ("none_dealloc"). pyproject pins
    ``PySide6-Essentials<6.12``; this names the fix if an environment has 6.12 anyway.
    """
    import PySide6

    version = tuple(int(p) for p in PySide6.__version__.split(".")[:2] if p.isdigit())
    if sys.version_info < (3, 12) and version == (6, 12):
        raise SystemExit(
            f"PySide6 {PySide6.__version__} crashes on Python {sys.version_info.major}.{sys.version_info.minor} "
            "(it drops references to None). Install a working version: "
            "pip install 'PySide6-Essentials>=6.8,<6.12' (scripts/run does this), or use Python 3.12+."
        )


def quicken_pyside_import_hook() -> None:
    """Make PySide6's import hook read each newly imported module's file instead of parsing it.

    Once PySide6 is loaded, every module imported after it (ours, and the thousand-odd modules of
    litellm loading in a worker thread) passes through ``shibokensupport.feature._mod_uses_pyside``,
    which calls ``inspect.getsource(module)`` (the tokenizer, the line cache) only to look for the
    word "PySide6" in it, for the ``__feature__`` switches this app never uses. That was a sixth of
    litellm's import time and much of the window's own start-up. Same question, same answer, asked
    of the file's bytes; anything but a plain ``.py`` file goes to the original. Nothing is changed
    when the hook is not there (another PySide6 version).
    """
    import sys

    feature = sys.modules.get("shibokensupport.feature")
    original = getattr(feature, "_mod_uses_pyside", None)
    if original is None or getattr(original, "quick", False):
        return

    def mod_uses_pyside(module: ModuleType) -> bool:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            return bool(original(module))
        try:
            with open(path, "rb") as source:
                return b"PySide6" in source.read()
        except OSError:
            return bool(original(module))

    mod_uses_pyside.quick = True  # type: ignore[attr-defined]
    feature._mod_uses_pyside = mod_uses_pyside  # type: ignore[union-attr]


#: How long a worker thread may keep the interpreter while the window's thread waits for it (s).
SWITCH_INTERVAL_S = 0.001


def get_app(argv: Sequence[str] | None = None) -> Any:
    """The QApplication (created once)."""
    ensure_platform()
    check_qt_binding()
    from PySide6.QtWidgets import QApplication

    quicken_pyside_import_hook()
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(argv) if argv is not None else ["robotlab"])
        app.setApplicationName("RobotLab Workspace")
        app.setOrganizationName("RobotLab")
        app.setDesktopFileName("io.github.robotlab.Workspace")
    # Closing the window starts an async shutdown (see run_app); Qt must not end the loop first. Also for
    # an application made elsewhere (a host program, a test plugin): its last window closing would end
    # qasync's loop under the coroutines still running on it.
    if isinstance(app, QApplication):
        app.setQuitOnLastWindowClosed(False)
    # The window's thread takes the interpreter back from a busy worker (a long thread's reads, an SDK's import)
    # within SWITCH_INTERVAL_S, not Python's default 5 ms: each return from Qt into Python (a paint, a slot, a
    # size hint) waits for it, and a step of the window crossing a few dozen times waited 300-400 ms behind the
    # workers reading a 10,000-turn thread while a search hit far up came in (200-230 ms at 1 ms).
    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
    return app


def quick_theme(folder: Path | None = None) -> str:
    """The saved theme without loading (and validating) the whole configuration: startup speed."""
    value = os.environ.get("ROBOT_LAB_UI__THEME")
    if value in ("light", "dark"):
        return value
    from workspace import paths

    files = [paths.user_config_file()]
    if folder is not None:
        files.append(paths.project_config_file(folder))
    theme_name = "light"
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        in_ui = False
        for line in text.splitlines():
            stripped = line.split("#", 1)[0].rstrip()
            if not stripped:
                continue
            if not line[0].isspace():
                in_ui = stripped.startswith("ui:")
            elif in_ui and stripped.strip().startswith("theme:"):
                found = stripped.split(":", 1)[1].strip().strip("'\"")
                if found in ("light", "dark"):
                    theme_name = found
    return theme_name


@dataclass(frozen=True, slots=True)
class StepTime:
    """One step of a staged start-up: where it stopped (``function:line`` of the innermost build generator),
    its wall time and the window thread's CPU time in it (the CPU time is what the step costs on a busy machine)."""

    name: str
    wall_ms: float
    cpu_ms: float


def step_name(steps: Iterator[None]) -> str:
    """Where a step generator (and the generators it delegates to) stands: ``module.function:line``, innermost
    three, outermost first; "" for an iterator that is no generator."""
    parts: list[str] = []
    gen: Any = steps
    while gen is not None and getattr(gen, "gi_frame", None) is not None:
        frame = gen.gi_frame
        module = frame.f_globals.get("__name__", "?").rpartition(".")[2]
        key = getattr(frame.f_locals.get("spec"), "key", None)  # a dock's steps: which dock
        parts.append(f"{module}.{frame.f_code.co_name}:{frame.f_lineno}" + (f"[{key}]" if key else ""))
        gen = gen.gi_yieldfrom
    return " > ".join(parts[-3:])


class Application:
    """Composition root: the task owner, the bridge, the controller and the main window.

    With ``defer=True`` only the window is built; :meth:`finish_startup` (called after the
    first paint) loads the configuration, opens the database and fills the window in.
    """

    def __init__(self, *, folder: Path | None = None, theme_name: str | None = None, provider: Provider | None = None,
                 db_path: Path | str | None = None, config: Config | None = None, defer: bool = False) -> None:
        from ui import theme
        from ui.bridge import RunBridge
        from ui.controller import Controller
        from ui.main_window import MainWindow
        from ui.tasks import TaskOwner

        self.app = get_app()
        self.folder = folder
        # litellm (a model it serves) loads in a process of its own: its import never freezes the window
        # (llm.litellm_process: same keeps it in this process).
        from workspace.providers.registry import set_litellm_process

        set_litellm_process("separate")
        self.tasks = TaskOwner(on_error=self._on_task_error)
        self.bridge = RunBridge()
        self.controller = Controller(bridge=self.bridge, tasks=self.tasks, folder=folder, provider=provider,
                                     db_path=db_path, config=config)
        self.theme_name = theme_name or quick_theme(folder)
        theme.apply_theme(self.app, self.theme_name)
        self.app.setWindowIcon(theme.app_icon())
        self.window = MainWindow(self.controller, theme_name=self.theme_name, build=not defer)
        self._closed = False
        self.started = False
        self.loaded = False
        #: Every pane is in its dock: start-up is over (the libraries the first message needs load after it).
        self.whole = False
        #: The thread left open when the window was last closed (read by start-up's worker).
        self._last_thread: str | None = None
        #: Each step a staged start-up ran on the window's thread, in order (``bench/bench_ui_startup.py`` prints them).
        self.step_times: list[StepTime] = []
        #: The chat's warm-up steps (:meth:`ui.chat.view.chat.ChatView.warm_up_steps`) run so far, each its wall and
        #: CPU time, and whether they are all done.
        self.warm_times: list[StepTime] = []
        self.warmed = False
        #: Whether start-up has paused the garbage collector (until the inspector is built).
        self._gc_paused = False
        from ui.idle import IdleWatch

        #: Whether the window is idle, for what waits for that (started once the window is whole).
        self.idle = IdleWatch()
        if defer:
            from workspace.shared_imports import pause_gc

            # What start-up builds lives as long as the window; collecting it midway only freezes it.
            pause_gc()
            self._gc_paused = True
        else:
            self.finish_startup()

    def finish_startup(self, *, staged: bool = False) -> None:
        """Build the widgets, load the configuration, open the workspace (database), fill them in.

        ``staged``: after building the widgets, let them paint, then load the data on the next
        turns of the event loop (the inspector panes and the MCP manager last).
        """
        if self.started:
            return
        self.started = True
        if staged:
            from PySide6.QtCore import QTimer

            QTimer.singleShot(0, lambda: self.tasks.spawn(self._build_staged(), name="start-up"))
        else:
            self.window.build()
            self._load(staged=False)

    async def _build_staged(self) -> None:
        """The widgets' modules imported in a worker thread (the window's thread would hold still for
        them, about a second), then the widgets made a part per turn of the event loop, then :meth:`_load_staged`."""
        import asyncio

        from ui.main_window import import_build_modules

        # The loop of the spawn, not asyncio.to_thread's running one (see _load_markdown).
        more = [*self.window.docks.pane_modules(), *AHEAD_MODULES]
        await asyncio.get_running_loop().run_in_executor(None, import_build_modules, more)
        if self._closed:
            return
        self._run_steps(self.window.build_steps(), then=self._spawn_load)

    def _spawn_load(self) -> None:
        self.tasks.spawn(self._load_staged(), name="start-up")

    async def _load_staged(self) -> None:
        """:meth:`_load` with what holds the interpreter for long and needs no widget in worker threads: the
        configuration (pydantic's import and the files' validation), then the database opened and the
        thread list read (the window paints meanwhile; a frame at most between the steps)."""
        import asyncio

        self.controller.window_loop = asyncio.get_running_loop()
        config_problem = await asyncio.to_thread(self._read_config)
        if self._closed:
            return
        # The last folder's settings file read and checked in the worker too (the window's thread does not wait).
        reopen = self.folder is None and config_problem is None
        if reopen and await asyncio.to_thread(self._set_last_folder) and not self._closed:
            self._folder_reopened()
        await asyncio.to_thread(self._open_workspace)
        if not self._closed:
            self._load(staged=True, config_problem=config_problem, opened=True)

    def _read_config(self) -> str | None:
        """The configuration, loaded (None), or why it could not be (the defaults are used meanwhile)."""
        try:
            self.controller.config  # noqa: B018 - load it now to report problems
        except Exception as exc:  # a broken config file must not stop the window
            import copy

            from workspace.config import DEFAULTS, Config

            self.controller._config = Config(copy.deepcopy(DEFAULTS), {}, self.folder)
            return str(exc)
        return None

    def _reopen_folder_unless(self, config_problem: str | None) -> None:
        if self.folder is None and config_problem is None:
            self._reopen_folder()

    def _open_workspace(self) -> None:
        """The database opened and what the window shows first read from it (Qt-free: any thread)."""
        self.controller.open()
        self.controller.robots(refresh=True)
        self.controller.networks(refresh=True)
        self.window.threads.read_ahead()  # (and the list's rows made of it)
        self._last_thread = self.controller.last_thread()
        if self._last_thread is not None:  # its turns are made in start-up's steps: what they need loaded here first
            _load_open_libraries()

    def _load(self, *, staged: bool, config_problem: str | None = None, opened: bool = False) -> None:
        if not opened:
            config_problem = self._read_config()
            self._reopen_folder_unless(config_problem)
            self.controller.open()
        if not staged:
            self.window.docks.build_inspector()
            for _ in self._fill_steps(config_problem, opened=opened):
                pass
            self._after_inspector()
            return
        # One part per turn of the event loop (the window paints in between), then the inspector's panes.
        self._run_steps(self._staged_fill(config_problem, opened=opened), then=self._after_inspector)

    def _staged_fill(self, config_problem: str | None, *, opened: bool) -> Iterator[None]:
        yield from self._fill_steps(config_problem, opened=opened)
        yield from self.window.docks.inspector_steps()

    def _fill_steps(self, config_problem: str | None, *, opened: bool) -> Iterator[None]:
        """The window filled in from the session, a part at a time: the robots, the thread list, the thread
        left open, what start-up has to say. ``loaded`` when done."""
        self.window.robots.refresh(reread=not opened)  # (read in the worker that opened the database)
        self.window.models.update()  # the robot's model, from the configuration read since the widgets were built
        yield
        self.window.threads.refresh()
        yield
        self.window.threads.show_empty()
        # (read in the worker that opened the database; else here)
        last = self._last_thread if opened else self.controller.last_thread()
        if last is not None:  # back where the user left off
            yield
            if opened:  # its first widgets of each kind at the cost of the second (the libraries loaded by the worker)
                from ui import markdown

                markdown.warm_up()
                yield from self.window.chat.warm_up_steps()
                self.warmed = True
            self.window.threads.open(last)
        yield
        if config_problem:
            self.window.banner.show_message(f"{config_problem}\n\nThe app uses the default settings until the "
                                            "file is fixed.")
        elif self.controller.store_error:
            self.window.settings_flow.offer_store_retry()
        else:
            self.window.folder_flow.offer_trust()
            self.window.folder_flow.offer_recovery()
        self._warn_ignored_env()
        self.loaded = True
        self.window.take_early_keys()

    def _reopen_folder(self) -> None:
        """No ``--folder``: the folder that was open when the window was last closed, if it is still there."""
        if self._set_last_folder():
            self._folder_reopened()

    def _set_last_folder(self) -> bool:
        """The last folder set on the controller (before the workspace is opened: no widget, any thread), if it is
        still there and its settings can be read."""
        folder = self.window.memory.last_folder()
        if folder is None:
            return False
        try:
            self.controller.set_folder(folder)
        except Exception as exc:  # a bad config file in it: start without it, and say why
            log.info("could not reopen the folder %s: %s", folder, exc)
            return False
        return True

    def _folder_reopened(self) -> None:
        self.folder = self.controller.folder
        self.window.status.update_folder()

    def _run_steps(self, steps: Iterator[None], *, then: Callable[[], None]) -> None:
        """One step of ``steps`` per turn of the event loop (the window paints in between), then ``then``."""
        import time

        from PySide6.QtCore import QTimer

        def step() -> None:
            if self._closed:
                return
            wall, cpu = time.perf_counter(), time.thread_time()
            name = step_name(steps)  # where the step starts: the last one (the end of the generator) has no frame
            try:
                with self.window.building():
                    next(steps)
            except StopIteration:
                self.step_times.append(StepTime(f"{name} (last)", (time.perf_counter() - wall) * 1000,
                                                (time.thread_time() - cpu) * 1000))
                then()
                return
            except Exception as exc:  # a part that cannot be built: say so, and start the rest anyway
                log.exception("building the window's docks")
                if not self.window.built:  # the window itself: nothing to go on with
                    raise
                self.window.banner.show_message(f"Part of the window could not be built: {type(exc).__name__}: "
                                                f"{exc}. The conversation still works; the log has the details.")
                then()
                return
            self.step_times.append(StepTime(step_name(steps), (time.perf_counter() - wall) * 1000,
                                            (time.thread_time() - cpu) * 1000))
            # The next step two turns of the event loop from here: Qt does what this step left it (its widgets'
            # polish, the layouts, their paint: events posted before the first hop) in the next turn, and its
            # timers run before the step after it. With one hop the next step ran in the same pass of the posted
            # events as that work, the two one stall (the Tool calls pane's step with the thread opened before it:
            # 75-90 ms of CPU at load 9).
            QTimer.singleShot(0, lambda: QTimer.singleShot(0, step))

        QTimer.singleShot(0, step)

    def _after_inspector(self) -> None:
        """The window is whole: load, in worker threads, what the first message will need."""
        from PySide6.QtCore import QTimer

        self.whole = True
        self._resume_gc()
        # From now on, what may wait for the window to be idle does (the lexers' compiling thread): ui.idle.
        self.idle.start()
        self.window.take_early_keys()  # (start-up stopped early: the window takes its keys from now on)
        # The model library (litellm: seconds) loads in a worker thread once the full window has painted,
        # so the first message waits only for what is left of it.
        QTimer.singleShot(PRELOAD_AFTER_MS, self.controller.preload_provider)
        # Highlighting needs markdown-it and pygments (~60 ms to import and build lexers): in a worker.
        QTimer.singleShot(PRELOAD_AFTER_MS, self._load_markdown)

    def _resume_gc(self) -> None:
        if self._gc_paused:
            from workspace.shared_imports import resume_gc

            self._gc_paused = False
            resume_gc()

    def _load_markdown(self) -> None:
        if self._closed:
            return
        import asyncio

        from PySide6.QtCore import QTimer

        from ui import markdown

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no running loop (tests driving the window without one)
            markdown.warm_up()
            return

        async def load() -> None:
            from workspace.shared_imports import gc_paused

            def work() -> None:
                with gc_paused():
                    _load_open_libraries()

            # The loop of the spawn, not asyncio.to_thread's running one: a test's loop may stop before this task's
            # first step, which Qt then runs between two runs of the loop (when none is running).
            await loop.run_in_executor(None, work)
            if self._closed:
                return
            if not self.warmed:  # (start-up did it before reopening a thread)
                markdown.warm_up()  # what is left: a few ms on this thread
                self._warm_chat()
            # The common lexers' joined rules, by a thread of their own once the start is well over: compiling
            # them holds the interpreter a few hundred ms, and during start-up that made the window's steps wait
            # for it (worst stall 6 -> 20-34 ms, quiet).
            QTimer.singleShot(PREPARE_LEXERS_AFTER_MS, lambda: None if self._closed else markdown.prepare_lexers())

        self.tasks.spawn(load(), name="load the Markdown libraries")

    def _warm_chat(self) -> None:
        """What the first widget of each kind in the chat pays once in the process, paid now: a kind a step, two
        turns of the event loop apart (Qt's work for one step before the next), each a few ms."""
        import time

        from PySide6.QtCore import QTimer

        steps = self.window.chat.warm_up_steps()

        def step() -> None:
            if self._closed:
                return
            wall, cpu = time.perf_counter(), time.thread_time()
            if next(steps, StopIteration) is StopIteration:
                self.warmed = True
                return
            self.warm_times.append(StepTime(f"chat warm-up {len(self.warm_times) + 1}", (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000))
            QTimer.singleShot(0, lambda: QTimer.singleShot(0, step))

        QTimer.singleShot(0, step)

    def _warn_ignored_env(self) -> None:
        """ROBOT_LAB_ variables without SECTION__KEY do nothing: say so, as the CLI does."""
        from workspace.cli import unknown_env_variables

        ignored = unknown_env_variables()
        if ignored:
            self.window.toast.show_message(
                f"Ignored environment variable{'s' if len(ignored) > 1 else ''} {', '.join(ignored)}: settings are "
                "named ROBOT_LAB_<SECTION>__<KEY> (two underscores), e.g. ROBOT_LAB_LLM__MODEL.", seconds=15)

    def _on_task_error(self, name: str, exc: BaseException) -> None:
        window = getattr(self, "window", None)
        if window is not None:
            window.banner.show_message(f"Something went wrong ({name}): {type(exc).__name__}: {exc}")

    async def aclose(self) -> None:
        """Stop runs, cancel owned tasks, close the workspace and the database."""
        if self._closed:
            return
        self._closed = True
        self._resume_gc()
        self.idle.stop()
        workspace = self.controller.workspace
        if workspace is not None:
            from workspace.delegation import STOPPED_AT_QUIT

            try:
                # (The window's close stopped the delegated work already; anything left is stored the same way.)
                await workspace.aclose(timeout=3.0, delegated=STOPPED_AT_QUIT)
            except Exception as exc:
                log.warning("closing the workspace: %s", exc)
        pane = self.window.docks.mcp_pane
        if pane is not None:
            try:
                import asyncio

                await asyncio.wait_for(pane.aclose(), timeout=3.0)
            except Exception as exc:
                log.warning("closing MCP sessions: %s", exc)
        await self.tasks.shutdown(timeout=3.0)
        self._close_store()

    def close_now(self) -> None:
        """Synchronous close (no running loop): cancel and close what can be closed."""
        if self._closed:
            return
        self._closed = True
        self._resume_gc()
        self.idle.stop()
        self.tasks.cancel_all()
        self.controller.close()
        self._close_store()

    def _close_store(self) -> None:
        store = self.controller.store
        if store is not None and not store.closed:
            try:
                store.close()
            except Exception as exc:
                log.warning("closing the database: %s", exc)


def new_event_loop(app: QCoreApplication | None = None) -> Any:
    """The window's event loop on the QApplication (``ui.event_loop.WindowLoop``: qasync's), set as the current
    loop (close it when done)."""
    import asyncio

    from ui.event_loop import WindowLoop

    loop = WindowLoop(app or get_app())
    asyncio.set_event_loop(loop)
    return loop


def run_app(args: Sequence[str] | argparse.Namespace | None = None) -> int:
    """Open the window and run until it is closed; returns the exit status."""
    ns = args if isinstance(args, argparse.Namespace) else parse_args(list(args or []))
    from workspace.logsetup import setup_logging
    from workspace.secrets import install_output_redaction

    install_output_redaction()  # what the window prints on the terminal (and a crash report): redacted
    setup_logging(log_file=True)
    folder = Path(ns.folder).expanduser().resolve() if ns.folder else None
    if folder is not None and not folder.is_dir():
        print(f"robotlab: --folder {ns.folder}: no such folder", file=sys.stderr)
        return 2
    app = get_app(sys.argv[:1])
    from PySide6.QtCore import QTimer

    # Paint the window first, then load the configuration and the database (startup speed).
    root = Application(folder=folder, theme_name=ns.theme, db_path=ns.db, defer=True)
    import asyncio

    # Closing the window starts the async shutdown; the loop ends when it is done (qasync #39).
    app.setQuitOnLastWindowClosed(False)
    closed = asyncio.Event()
    root.window.closed.connect(closed.set)
    app.aboutToQuit.connect(closed.set)
    # Before start-up opens anything: a Ctrl-C from then on closes the window cleanly (installed later, one that
    # came while the database opened went to Python's default handler, inside a Qt slot, and was lost).
    signals = quit_on_signals(app, root.window.close_without_asking)  # the terminal asked: no question
    root.window.show()
    app.processEvents()
    loop = new_event_loop(app)
    root.finish_startup(staged=True)
    if ns.offscreen_smoke:
        def smoke() -> None:
            print("main window shown", flush=True)
            root.window.close()

        QTimer.singleShot(300, smoke)
    if ns.quit_after:
        QTimer.singleShot(int(ns.quit_after * 1000), root.window.close_without_asking)

    async def main() -> None:
        await closed.wait()
        await root.aclose()

    status = 0
    try:
        with loop:
            loop.run_until_complete(main())
    except RuntimeError as exc:  # the Qt loop was ended from outside (session end): close what we can
        log.debug("event loop ended early: %s", exc)
        root.close_now()
    finally:
        signals.restore()
        if not loop.is_closed():
            loop.close()
        asyncio.set_event_loop(None)
    return signals.status or status


class SignalQuit:
    """Ctrl-C (SIGINT) and SIGTERM for the window: the first closes it as the close button does
    (runs stop and are recorded, the database is closed), a second quits at once. Qt's event loop
    runs in C++, so Python would only see the signal at its next bytecode: the signal's wakeup fd
    is a socket a :class:`QSocketNotifier` watches, which wakes the loop to run the handler."""

    def __init__(self, app: QCoreApplication, close: Callable[[], object]) -> None:
        import signal
        import socket

        from PySide6.QtCore import QSocketNotifier

        self.app = app
        self.close = close
        self.status = 0
        self._previous: dict[int, Any] = {}
        self._read, self._write = socket.socketpair()
        for sock in (self._read, self._write):
            sock.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno())
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._drain)
        for number in (signal.SIGINT, signal.SIGTERM):
            self._previous[number] = signal.signal(number, self._handle)

    def _drain(self, *_: Any) -> None:
        try:
            self._read.recv(256)
        except OSError:
            pass

    def _handle(self, number: int, frame: FrameType | None) -> None:
        from PySide6.QtCore import QTimer

        if self.status:  # a second one: quit now (run_app closes what it can)
            log.warning("second signal %d: quitting at once", number)
            self.app.exit(128 + number)
            return
        self.status = 128 + number
        print("\nClosing the window… (Ctrl-C again quits at once)", file=sys.stderr, flush=True)
        QTimer.singleShot(0, self.close)

    def restore(self) -> None:
        import signal

        self._notifier.setEnabled(False)
        for number, previous in self._previous.items():
            try:
                signal.signal(number, previous if previous is not None else signal.SIG_DFL)
            except (TypeError, ValueError):
                pass
        signal.set_wakeup_fd(self._previous_fd)
        self._read.close()
        self._write.close()


def quit_on_signals(app: QCoreApplication, close: Callable[[], object]) -> SignalQuit:
    """Make Ctrl-C in the terminal that started the window close it cleanly (see :class:`SignalQuit`)."""
    return SignalQuit(app, close)
