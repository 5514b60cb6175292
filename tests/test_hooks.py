"""Hooks (RobotLab 0.2.6): order, short-circuits, contexts and scope, ported from RobotLab's
``test/robot_lab/hooks_test.rb`` and its hooks guide, against scripted models."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import workspace
from workspace import events as ev
from workspace import hooks
from workspace.errors import RunFailedError
from workspace.hooks import (
    CompactionHookContext,
    Generation,
    Hook,
    LearnHookContext,
    RunHookContext,
)
from workspace.messages import Message, TextMessage, ToolResultMessage
from workspace.network import Network
from workspace.providers.testing import AgentInfo, Fail, FunctionProvider, ScriptedProvider, ToolCall
from workspace.result import RobotResult
from workspace.robot import Robot
from workspace.tools import tool

LOG: list[str] = []


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    LOG.clear()
    workspace.clear_hooks()
    yield
    workspace.clear_hooks()


def bot(name: str, provider: Any, **kw: Any) -> Robot:
    kw.setdefault("tools", "none")
    kw.setdefault("mcp", "none")
    return Robot(name, system_prompt=f"You are {name}.", provider=provider, **kw)


def echo() -> FunctionProvider:
    def reply(messages: list[Message], _info: AgentInfo) -> str:
        last = messages[-1]
        return f"{last.content} response" if isinstance(last, TextMessage) else "done"

    return FunctionProvider(reply)


def tracer(label: str) -> type[Hook]:
    """A handler that logs every run-family callback with ``label``."""

    async def around_run(cls: type[Hook], ctx: RunHookContext, call_next: Any) -> Any:
        LOG.append(f"{label}:around_run:open")
        value = await call_next()
        LOG.append(f"{label}:around_run:close")
        return value

    return type(f"Tracer{label.title()}", (Hook,), {
        "before_run": classmethod(lambda cls, ctx: LOG.append(f"{label}:before_run")),
        "around_run": classmethod(around_run),
        "after_run": classmethod(lambda cls, ctx: LOG.append(f"{label}:after_run")),
    })


# -- the Hook class -----------------------------------------------------------------------------------
def test_namespace_is_the_class_name_in_snake_case() -> None:
    class AuditHook(Hook):
        pass

    class HTTPClient(Hook):
        pass

    class Named(Hook):
        namespace = "mine"

    assert (AuditHook.namespace, HTTPClient.namespace, Named.namespace) == ("audit_hook", "http_client", "mine")
    assert Hook.namespace is None


def test_bad_registrations_name_the_fix() -> None:
    class Fine(Hook):
        pass

    with pytest.raises(TypeError, match="register the class itself"):
        Fine()
    with pytest.raises(TypeError, match="must be a workspace.Hook subclass"):
        workspace.on(lambda ctx: None)  # type: ignore[arg-type]  # RobotLab's old block form
    with pytest.raises(TypeError, match="did you mean 'before_run'"):
        type("Typo", (Hook,), {"before_runn": classmethod(lambda cls, ctx: None)})
    with pytest.raises(TypeError, match="must be a workspace.Hook subclass"):
        bot("a", ScriptedProvider(default="x")).stream("hi", hooks=["NotAHook"])


# -- order and changes ------------------------------------------------------------------------------
async def test_levels_are_additive_and_the_first_around_is_the_outermost() -> None:
    workspace.on(tracer("global"))
    network_hook = tracer("network")
    robot = bot("r", ScriptedProvider(default="ok")).on(tracer("robot"))
    net = Network("n").on(network_hook)
    await robot.arun("hi", hooks=[tracer("run")], network=net)
    assert LOG == [
        "global:before_run", "network:before_run", "robot:before_run", "run:before_run",
        "global:around_run:open", "network:around_run:open", "robot:around_run:open", "run:around_run:open",
        "run:around_run:close", "robot:around_run:close", "network:around_run:close", "global:around_run:close",
        "global:after_run", "network:after_run", "robot:after_run", "run:after_run",
    ]


async def test_a_global_before_run_changes_the_request_the_model_and_later_hooks_see() -> None:
    seen: list[str] = []

    class Changer(Hook):
        @classmethod
        def before_run(cls, ctx: RunHookContext) -> None:
            ctx.request = "changed"

    class Watcher(Hook):
        @classmethod
        async def before_run(cls, ctx: RunHookContext) -> None:  # async before hooks are awaited
            await asyncio.sleep(0)
            seen.append(ctx.request)

    workspace.on(Changer)
    result = await bot("r", echo()).arun("original", hooks=Watcher)
    assert seen == ["changed"]
    assert result.last_text_content == "changed response"


async def test_an_around_run_hook_can_skip_the_model_and_its_value_is_the_result() -> None:
    provider = ScriptedProvider(default="from the model")

    class Cache(Hook):
        @classmethod
        async def around_run(cls, ctx: RunHookContext, call_next: Any) -> Any:
            return "cached answer"

    robot = bot("r", provider).on(Cache)
    result = await robot.arun("hi")
    assert result.last_text_content == "cached answer"
    assert provider.history == []  # the model was never asked

    class Forgetful(Hook):
        @classmethod
        async def around_run(cls, ctx: RunHookContext, call_next: Any) -> Any:
            await call_next()  # and forgets to return it: said, not a silent None

    with pytest.raises(RunFailedError, match="return the value of 'await call_next"):
        await bot("s", ScriptedProvider(default="x")).arun("hi", hooks=[Forgetful])


async def test_after_run_sees_the_response_and_one_context_is_shared() -> None:
    seen: dict[str, Any] = {}

    class Timer(Hook):
        @classmethod
        def before_run(cls, ctx: RunHookContext) -> None:
            ctx.local.mark = "set in before_run"

        @classmethod
        def after_run(cls, ctx: RunHookContext) -> None:
            seen["mark"] = ctx.local.mark
            seen["reply"] = ctx.response.last_text_content
            seen["unset"] = ctx.local.never_set

    await bot("r", ScriptedProvider(default="the answer")).arun("hi", hooks=[Timer])
    assert seen == {"mark": "set in before_run", "reply": "the answer", "unset": None}


async def test_local_is_per_namespace_ext_reads_another_and_context_seeds_local() -> None:
    seen: dict[str, Any] = {}

    class First(Hook):
        @classmethod
        def before_run(cls, ctx: RunHookContext) -> None:
            ctx.local.value = 1

    class Second(Hook):
        @classmethod
        def before_run(cls, ctx: RunHookContext) -> None:
            seen["own"] = ctx.local.value
            seen["first"] = ctx.ext("first").value
            seen["seeded"] = ctx.local.level

    robot = bot("r", ScriptedProvider(default="ok")).on(First).on(Second, context={"level": "debug"})
    await robot.arun("hi")
    assert seen == {"own": None, "first": 1, "seeded": "debug"}
    with pytest.raises(RuntimeError, match="No hook namespace active"):
        RunHookContext().local  # noqa: B018


async def test_on_error_sees_the_robot_and_the_error_and_does_not_swallow_it() -> None:
    seen: list[str] = []

    class Errors(Hook):
        @classmethod
        def on_error(cls, ctx: RunHookContext) -> None:
            seen.append(f"{ctx.robot.name}: {ctx.error}")

    workspace.on(Errors)
    with pytest.raises(RunFailedError, match="the model is down"):
        await bot("failing", ScriptedProvider([Fail("the model is down", status_code=400)])).arun("hi")
    assert seen == ["failing: the model is down"]


async def test_hooks_of_one_run_do_not_leak_into_the_next() -> None:
    robot = bot("r", ScriptedProvider(default="ok"))
    await robot.arun("one", hooks=[tracer("once")])
    LOG.clear()
    await robot.arun("two")
    assert LOG == []


# -- model and tool calls ------------------------------------------------------------------------------
def _tool_robot(provider: Any, calls: list[str], **kw: Any) -> Robot:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        calls.append(key)
        return f"value of {key}"

    return bot("r", provider, tools=[lookup], **kw)


async def test_llm_generation_fires_per_model_call_with_the_tool_calls_between() -> None:
    events: list[str] = []

    class Trace(Hook):
        @classmethod
        def before_llm_generation(cls, ctx: Any) -> None:
            events.append(f"before_llm:{ctx.iteration}")

        @classmethod
        def after_llm_generation(cls, ctx: Any) -> None:
            events.append(f"after_llm:{ctx.iteration}:{len(ctx.generation_response.calls)}")

        @classmethod
        def before_tool_call(cls, ctx: Any) -> None:
            events.append(f"before_tool:{ctx.tool_name}:{ctx.tool_args}")

        @classmethod
        def after_tool_call(cls, ctx: Any) -> None:
            events.append(f"after_tool:{ctx.tool_result}")

    provider = ScriptedProvider([[ToolCall("lookup", {"key": "k"})], "done"])
    calls: list[str] = []
    await _tool_robot(provider, calls).arun("go", hooks=[Trace])
    assert events == ["before_llm:0", "after_llm:0:1", "before_tool:lookup:{'key': 'k'}",
                      "after_tool:value of k", "before_llm:1", "after_llm:1:0"]


async def test_an_around_tool_call_hook_can_short_circuit_the_tool() -> None:
    class ShortCircuit(Hook):
        @classmethod
        async def around_tool_call(cls, ctx: Any, call_next: Any) -> Any:
            ctx.tool_result = "short"

    provider = ScriptedProvider([[ToolCall("lookup", {"key": "k"})], "done"])
    calls: list[str] = []
    result = await _tool_robot(provider, calls).arun("go", hooks=[ShortCircuit])
    assert calls == []  # the tool never ran
    sent = [m for m in provider.history[1].messages if isinstance(m, ToolResultMessage)]
    assert sent[0].content == {"data": "short"}
    assert result.tool_calls[0].content == {"data": "short"}


async def test_an_around_llm_generation_hook_can_answer_instead_of_the_model() -> None:
    provider = ScriptedProvider(default="from the model")

    class Canned(Hook):
        @classmethod
        async def around_llm_generation(cls, ctx: Any, call_next: Any) -> Any:
            return Generation(text="canned")

    result = await bot("r", provider).arun("hi", hooks=[Canned])
    assert result.last_text_content == "canned"
    assert provider.history == []


async def test_the_scope_follows_asyncio_tasks_started_inside_a_run() -> None:
    class Marker(Hook):
        pass

    seen: list[tuple[Any, ...]] = []

    @tool
    async def probe() -> str:
        """Look at the hook scope from a task of its own."""
        async def inner() -> tuple[Any, ...]:
            return tuple(r.handler for r in hooks.current_scope())

        seen.append(await asyncio.create_task(inner()))
        return "ok"

    robot = bot("r", ScriptedProvider([[ToolCall("probe")], "done"]), tools=[probe])
    await robot.arun("go", hooks=[Marker])
    assert seen == [(Marker,)]
    assert hooks.current_scope() == ()  # the test's own task is not in the run's scope


# -- networks ---------------------------------------------------------------------------------------------
async def test_network_hooks_fire_in_order_and_see_the_network_and_task() -> None:
    events: list[str] = []

    class Observer(Hook):
        @classmethod
        def before_network_run(cls, ctx: Any) -> None:
            events.append(f"before_network_run:{ctx.network.name}")

        @classmethod
        def before_task(cls, ctx: Any) -> None:
            events.append(f"before_task:{ctx.task_name}:{ctx.robot.name}")

        @classmethod
        def before_run(cls, ctx: Any) -> None:
            events.append(f"before_run:{ctx.network.name}:{ctx.task}")

        @classmethod
        def after_task(cls, ctx: Any) -> None:
            events.append(f"after_task:{ctx.result.last_text_content}")

        @classmethod
        def after_network_run(cls, ctx: Any) -> None:
            events.append(f"after_network_run:{ctx.result.status}")

    net = Network("pipeline").on(Observer)
    net.task("first", bot("alice", ScriptedProvider(default="hello")))
    result = await net.arun("go")
    assert result.status == "done"
    assert events == ["before_network_run:pipeline", "before_task:first:alice", "before_run:pipeline:first",
                      "after_task:hello", "after_network_run:done"]


async def test_around_task_can_replace_the_result_and_around_network_run_can_skip_the_tasks() -> None:
    class Replace(Hook):
        @classmethod
        async def around_task(cls, ctx: Any, call_next: Any) -> Any:
            await call_next()
            return RobotResult(robot_name=ctx.robot.name, output=[TextMessage(role="assistant", content="replaced")])

    net = Network("n").on(Replace)
    net.task("only", bot("a", ScriptedProvider(default="original")))
    result = await net.arun("go")
    assert result.tasks["only"].result.last_text_content == "replaced"

    provider = ScriptedProvider(default="never")

    class Skip(Hook):
        @classmethod
        async def around_network_run(cls, ctx: Any, call_next: Any) -> Any:
            from workspace.result import NetworkResult

            return NetworkResult(network=ctx.network.name, status="done", tasks={}, order=[], params={},
                                 message="", failed_task=None, error=None, duration=0.0, memory=ctx.memory)

    skipped = Network("m").on(Skip)
    skipped.task("t", bot("b", provider))
    assert (await skipped.arun("go")).status == "done"
    assert provider.history == []


async def test_on_error_fires_for_a_failing_network_hook() -> None:
    seen: list[str] = []

    class Broken(Hook):
        @classmethod
        def before_task(cls, ctx: Any) -> None:
            raise RuntimeError("hook exploded")

        @classmethod
        def on_error(cls, ctx: Any) -> None:
            seen.append(f"{ctx.event}:{ctx.error}")

    net = Network("n").on(Broken)
    net.task("t", bot("b", ScriptedProvider(default="x")))
    run = net.stream("go")
    await run.wait()
    assert run.result is not None and run.result.status == "failed" and "hook exploded" in (run.result.error or "")
    assert seen == ["on_error:hook exploded"]


# -- compaction and learn --------------------------------------------------------------------------------
async def test_on_compaction_gives_the_summary_and_the_model_is_not_asked() -> None:
    seen: dict[str, Any] = {}

    class OwnSummary(Hook):
        @classmethod
        def before_compaction(cls, ctx: CompactionHookContext) -> None:
            seen["before"] = (ctx.robot.name, len(ctx.messages_before), ctx.strategy)

        @classmethod
        def on_compaction(cls, ctx: CompactionHookContext) -> None:
            ctx.compacted_messages = "They talked about the weather."

        @classmethod
        def after_compaction(cls, ctx: CompactionHookContext) -> None:
            seen["after"] = ctx.compacted_messages

    provider = ScriptedProvider(default="an answer")
    robot = bot("r", provider).on(OwnSummary)
    await robot.arun("first")
    await robot.arun("second")
    asked = len(provider.history)
    event = await robot.compact()
    assert event is not None and event.summary == "They talked about the weather."
    assert len(provider.history) == asked  # no summary request
    assert seen == {"before": ("r", 4, "manual"), "after": "They talked about the weather."}


async def test_without_on_compaction_the_model_summarises_and_after_compaction_sees_it() -> None:
    seen: list[Any] = []

    class Watch(Hook):
        @classmethod
        def after_compaction(cls, ctx: CompactionHookContext) -> None:
            seen.append(ctx.compacted_messages)

    robot = bot("r", ScriptedProvider(default="an answer")).on(Watch)
    await robot.arun("first")
    await robot.arun("second")
    event = await robot.compact()
    assert event is not None and seen == [event.summary] and event.summary


async def test_the_learn_family_dispatches_with_on_learn() -> None:
    events: list[str] = []

    class Persist(Hook):
        @classmethod
        def before_learn(cls, ctx: LearnHookContext) -> None:
            events.append(f"before:{ctx.text}")

        @classmethod
        async def on_learn(cls, ctx: LearnHookContext) -> None:
            events.append(f"on_learn:{ctx.stored}")

    learnt: list[str] = []
    ctx = LearnHookContext(robot=None, text="prefers metric units", learnings_before=())
    registrations = hooks.collect(hooks.GLOBAL, run=hooks.per_run([Persist]))

    async def core() -> bool:
        learnt.append(ctx.text)
        ctx.stored = True
        await hooks.call_each(registrations, "on_learn", ctx)
        return True

    assert await hooks.dispatch("learn", ctx, registrations, core) is True
    assert learnt == ["prefers metric units"]
    assert events == ["before:prefers metric units", "on_learn:True"]


def test_every_family_and_hook_name_is_known() -> None:
    assert set(hooks.FAMILIES) == {"run", "llm_generation", "tool_call", "network_run", "task", "compaction",
                                   "learn"}
    assert {"on_error", "on_compaction", "on_learn", "around_learn", "before_compaction"} <= hooks.HOOK_NAMES


async def test_no_hooks_means_no_hook_contexts() -> None:
    """With nothing registered the loop takes its old path: a run's spec carries no hooks."""
    run = bot("r", ScriptedProvider(default="ok")).stream("hi")
    assert run.spec.hooks == ()
    assert isinstance(await run.wait(), ev.RunFinished)
