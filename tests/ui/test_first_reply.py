"""The window loads what the first message needs in the background, and a run's waits reach the bridge."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import running_app, wait_until
from workspace import events as ev
from workspace.config import load_config


async def test_the_model_library_loads_after_the_window_is_filled_in(db_path: Path) -> None:
    with FakeLLMServer() as server:
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1"}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            from workspace import templates

            templates._compiled.clear()
            job = root.controller.preload_provider()
            assert isinstance(job, asyncio.Future)  # on the loop's executor: its threads are up for the first run
            await asyncio.wait_for(job, timeout=30)
            assert templates._compiled  # the assistant's template is compiled before the first message
            root.controller.provider = object()
            assert root.controller.preload_provider() is None  # a given provider: nothing to load


async def test_the_window_fills_its_docks_a_step_at_a_time_with_the_collector_paused(db_path: Path) -> None:
    """Start-up as ``robotlab`` does it: the panes are made in steps (the window paints between them), the
    garbage collector waits until they are all there, and no step is done twice."""
    import gc

    from tests.fakes.app_window import close_app
    from ui.app import Application

    assert gc.isenabled()
    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        assert not gc.isenabled()  # what start-up builds lives as long as the window
        root.window.show()
        root.finish_startup(staged=True)
        docks = root.window.docks
        steps = docks.inspector_steps()
        assert steps is docks.inspector_steps()  # one iterator: a step is never done twice
        await wait_until(lambda: root.loaded, timeout=30, what="the window to be filled in")
        await wait_until(lambda: docks.network_pane is not None, timeout=30, what="the last pane")
        assert docks.tool_pane is not None and docks.memory_pane is not None and docks.changes_pane is not None
        assert docks["changes"].widget() is docks.changes_pane
        await wait_until(lambda: gc.isenabled(), timeout=30, what="the collector to restart")
        docks.build_inspector()  # after the steps: nothing left to do
        assert docks["changes"].widget() is docks.changes_pane
    finally:
        await close_app(root)
    # (a worker's import started at start-up may still hold its pause for a moment: it must end)
    await wait_until(lambda: gc.isenabled(), timeout=30, what="the collector to run again after the window closed")


async def test_a_pane_that_cannot_be_built_is_said_and_start_up_goes_on(db_path: Path, monkeypatch: Any) -> None:
    import gc

    import ui.mcp.pane
    from tests.fakes.app_window import close_app
    from ui.app import Application

    def broken(context: Any) -> Any:
        raise RuntimeError("no MCP pane today")

    monkeypatch.setattr(ui.mcp.pane, "make_pane", broken)
    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.show()
        root.finish_startup(staged=True)
        await wait_until(lambda: gc.isenabled(), timeout=30, what="the rest of start-up")
        assert "no MCP pane today" in root.window.banner.text
        assert root.window.docks.changes_pane is not None  # what came before it is there
    finally:
        await close_app(root)


async def test_a_pane_made_when_its_dock_first_shows_says_so_when_it_cannot_be(db_path: Path,
                                                                              monkeypatch: Any) -> None:
    import ui.network.pane
    from tests.fakes.app_window import close_app
    from ui.app import Application

    def broken(context: Any) -> Any:
        raise RuntimeError("no network pane today")

    monkeypatch.setattr(ui.network.pane, "make_pane", broken)
    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.show()
        root.finish_startup(staged=True)
        await wait_until(lambda: root.whole, timeout=60, what="the start-up")
        assert "no network pane today" not in root.window.banner.text  # not made yet: nobody looked
        docks = root.window.docks
        docks.focus_dock("network")  # the Network dock shows: its pane is made, and cannot be
        assert "no network pane today" in root.window.banner.text
        assert docks.network_pane is None and docks["network"].widget() is not None  # the dock stays, empty
    finally:
        await close_app(root)


async def test_a_window_built_at_once_builds_what_the_steps_left(db_path: Path) -> None:
    from tests.fakes.app_window import close_app
    from ui.app import Application

    root = Application(db_path=db_path, theme_name="light", defer=True)
    try:
        root.window.build()
        docks = root.window.docks
        steps = docks.inspector_steps()
        while docks.tool_pane is None:
            next(steps)
        assert docks.changes_pane is None  # one pane per step
        docks.build_inspector()
        assert docks.changes_pane is not None and docks["changes"].widget() is docks.changes_pane
    finally:
        await close_app(root)


def test_pyside_s_import_hook_reads_files_and_answers_as_before() -> None:
    import json
    import sys

    import ui.app
    from ui.app import get_app

    get_app()
    feature = sys.modules["shibokensupport.feature"]
    quick = feature._mod_uses_pyside
    assert getattr(quick, "quick", False)
    assert quick(ui.app) is True and quick(json) is False and quick(sys) is False  # sys: no file


async def test_a_runs_waits_reach_the_bridge(db_path: Path) -> None:
    statuses: list[Any] = []
    with FakeLLMServer() as server:
        server.enqueue(Reply.error(429, retry_after=0.05), Reply.say("Hello", reasoning="Thinking first."))
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1"}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            thinking: list[str] = []

            def seen(event: Any) -> None:
                if isinstance(event, ev.RunStatus):
                    statuses.append(event)
                elif isinstance(event, ev.ReasoningDelta):
                    thinking.append(event.text)

            root.bridge.view_event.connect(seen)
            assert root.controller.send("hi")
            await wait_until(lambda: root.controller.idle and statuses, timeout=30, what="the run to end")
            assert "".join(thinking) == "Thinking first."
    states = [s.state for s in statuses]
    assert "retrying" in states and states.index("retrying") < states.index("streaming")
    assert next(s for s in statuses if s.state == "retrying").retry_in == 0.05


async def test_an_answer_cut_at_the_token_limit_can_be_continued(db_path: Path) -> None:
    with FakeLLMServer() as server:
        server.enqueue(Reply.say("The first half", finish_reason="length"), Reply.say(" and the rest."))
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1"}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            ended: list[Any] = []
            root.bridge.run_ended.connect(ended.append)
            assert not root.controller.continue_()  # no thread yet
            assert root.controller.send("Tell me")
            await wait_until(lambda: root.controller.idle and ended, timeout=30, what="the first run")
            assert ended[0].result.stop_reason == "length"
            assert root.controller.continue_()
            await wait_until(lambda: root.controller.idle and len(ended) == 2, timeout=30, what="the continuation")
            assert ended[1].result.last_text_content == " and the rest."
        assert server.requests[1]["messages"][-2]["content"] == "The first half"


async def test_the_window_runs_litellm_in_a_process_of_its_own(db_path: Path) -> None:
    """A model litellm serves: the warm-up starts litellm's process, which asks the model's window; the
    reply comes through it, streamed into the chat, with the run's states on the way."""
    from workspace.providers.litellm_process import SeparateLiteLLMProvider, litellm_process

    with FakeLLMServer() as server:
        server.enqueue(Reply.say("Hello from the other process", reasoning="Thinking there."))
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "provider": "litellm",
                                                        "api_base": server.base_url + "/v1"}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            await asyncio.wait_for(root.controller.preload_provider(), timeout=120)
            assert litellm_process().running
            robot = root.controller.workspace.load_robot(root.controller.robot_name)
            assert isinstance(robot.provider, SeparateLiteLLMProvider)
            assert robot.provider.known_context_window()[0]  # asked by the warm-up: the first message waits for nothing
            texts: list[str] = []
            root.bridge.text_appended.connect(lambda _r, _b, text: texts.append(text))
            assert root.controller.send("hi")
            await wait_until(lambda: root.controller.idle and texts, timeout=60, what="the run to end")
            assert "".join(texts) == "Hello from the other process"


def test_the_window_takes_the_interpreter_back_from_workers_within_a_millisecond() -> None:
    # Every return from Qt into Python waits for the interpreter; behind a busy worker (a long thread's reads)
    # Python's default 5 ms a wait made one step of the window 300-400 ms.
    import sys

    from ui.app import SWITCH_INTERVAL_S, get_app

    get_app()
    assert sys.getswitchinterval() <= SWITCH_INTERVAL_S <= 0.001
