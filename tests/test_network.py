"""Networks: dependency order, real concurrency, routing, context, shared memory, failure and stop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workspace import events as ev
from workspace.memory import Memory
from workspace.messages import Message
from workspace.network import (
    Network,
    NetworkError,
    NetworkRunError,
    Route,
    Task,
    deep_merge,
    structured_targets,
)
from workspace.providers.testing import AgentInfo, Fail, FunctionProvider, Pause, ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.templates import Template
from workspace.tools import ToolContext, tool


def bot(name: str, provider: Any, **kw: Any) -> Robot:
    kw.setdefault("tools", "none")
    kw.setdefault("mcp", "none")
    if "template" not in kw:
        kw.setdefault("system_prompt", f"You are {name}.")
    return Robot(name, provider=provider, **kw)


def says(text: str) -> ScriptedProvider:
    return ScriptedProvider(default=text)


def echo(prefix: str) -> FunctionProvider:
    """Answers ``<prefix>: <the message it received>``."""
    return FunctionProvider(lambda messages, info: f"{prefix}: {messages[-1].content}")


async def collect(run: Any) -> list[ev.Event]:
    return [e async for e in run]


def check_stream(events: list[ev.Event]) -> ev.Event:
    """One shared, strictly increasing sequence; exactly one terminal event of the network's own run,
    the last one; every task's robot run that started ends with its own terminal event before it,
    carrying the network run's id as its parent."""
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    top = events[0].run_id
    terminals = [e for e in events if e.terminal and e.run_id == top]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    started = {e.run_id for e in events if isinstance(e, ev.RunStarted) and e.run_id != top}
    ended = [e for e in events if e.terminal and e.run_id != top]
    assert sorted(e.run_id for e in ended) == sorted(started)  # each task run ends, once
    assert all(e.parent_run_id == top for e in ended)
    for e in events:
        if isinstance(e, ev.TaskStarted | ev.TaskFinished | ev.Text | ev.ToolUse | ev.ToolResult):
            assert e.task, e
    return terminals[0]


def finished(events: list[ev.Event]) -> dict[str, ev.TaskFinished]:
    return {e.task or "": e for e in events if isinstance(e, ev.TaskFinished)}


def index(events: list[ev.Event], cls: type[ev.Event], task: str) -> int:
    return next(i for i, e in enumerate(events) if isinstance(e, cls) and e.task == task)


# -- structure ----------------------------------------------------------------------------------


def test_dsl_readers_and_robotlab_shapes() -> None:
    net = Network("support", concurrency=2)
    billing = bot("billing", says("ok"))
    net.task("classifier", bot("classifier", says("billing")))
    net.task("billing", billing, depends_on="optional", context={"department": "billing"}, tools=["refund"],
             memory=Memory())
    assert net.to_dict() == {"name": "support", "robots": ["classifier", "billing"],
                             "tasks": ["classifier", "billing"], "optional_tasks": ["billing"]}
    assert net.tasks["billing"].to_dict() == {"name": "billing", "robot": "billing",
                                               "context": {"department": "billing"}, "mcp": "inherit",
                                               "tools": ["refund"], "memory": True}
    assert "memory" not in net.tasks["classifier"].to_dict()
    assert net.robot("billing") is billing and net["nope"] is None
    assert net.concurrency == 2
    with pytest.raises(ValueError, match="already exists"):
        net.add_robot(billing)
    with pytest.raises(ValueError, match="already exists"):
        net.task("billing", billing)
    assert "graph" in net.to_mermaid()
    assert isinstance(net.visualize(), str) and isinstance(net.execution_plan(), str)
    assert net.memory.network_name == "support"


def test_task_validates_its_options() -> None:
    r = bot("r", says("x"))
    with pytest.raises(ValueError, match="depends_on"):
        Task("t", r, depends_on=["a", "optional"])
    with pytest.raises(ValueError, match="run options"):
        Task("t", r, context={"tools": ["x"]})
    with pytest.raises(ValueError, match="Invalid tools"):
        Task("t", r, tools="some")
    with pytest.raises(ValueError, match="concurrency"):
        Network("n", concurrency=0)


def test_deep_merge_rules() -> None:
    base = {"a": 1, "nested": {"x": 1, "y": {"deep": 1, "keep": True}}, "tags": ["a", "b"], 5: "five"}
    override = {"a": 2, "nested": {"y": {"deep": 2}, "z": 3}, "tags": ["c"]}
    merged = deep_merge(base, override)
    assert merged == {"a": 2, "nested": {"x": 1, "y": {"deep": 2, "keep": True}, "z": 3}, "tags": ["c"],
                      "5": "five"}
    assert base["nested"]["y"]["deep"] == 1  # inputs untouched


async def test_problems_are_reported_before_anything_runs() -> None:
    p = says("x")
    net = Network("bad")
    net.task("a", bot("a", p), depends_on=["b"])
    net.task("b", bot("b", p), depends_on=["a"])
    net.task("c", bot("c", p), depends_on=["nope"])
    with pytest.raises(NetworkError, match="unknown task 'nope'"):
        net.stream("go")
    net2 = Network("cycle")
    net2.task("a", bot("a", p), depends_on=["b"])
    net2.task("b", bot("b", p), depends_on=["a"])
    with pytest.raises(NetworkError, match=r"cycle: (a -> b -> a|b -> a -> b)"):
        net2.stream("go")
    net3 = Network("route")
    net3.task("a", bot("a", p), route=Route({"x": "b"}))
    net3.task("b", bot("b", p))
    with pytest.raises(NetworkError, match="depends_on: optional"):
        await net3.arun("go")
    assert p.history == []


def test_structured_targets() -> None:
    names = ["billing", "technical", "general_help"]
    assert structured_targets("billing", names) == ["billing"]
    assert structured_targets("**Technical**.", names) == ["technical"]
    assert structured_targets('```json\n{"activate": ["billing", "general help"]}\n```', names) == [
        "billing", "general_help"]
    assert structured_targets("Looks like money.\nroute: billing", names) == ["billing"]
    assert structured_targets("This is about billing and more.", names) == []
    assert structured_targets('{"route": "unknown"}', names) == []


# -- running ------------------------------------------------------------------------------------


async def test_dependency_order_and_messages() -> None:
    net = Network("chain")
    net.task("first", bot("first", echo("first")))
    net.task("second", bot("second", echo("second")), depends_on=["first"])
    net.task("side", bot("side", echo("side")), depends_on=["first"])
    net.task("last", bot("last", echo("last")), depends_on=["second", "side"])
    run = net.stream("hello")
    events = await collect(run)
    terminal = check_stream(events)
    assert isinstance(terminal, ev.RunFinished)
    assert index(events, ev.TaskFinished, "first") < index(events, ev.TaskStarted, "second")
    assert index(events, ev.TaskFinished, "first") < index(events, ev.TaskStarted, "side")
    assert index(events, ev.TaskFinished, "second") < index(events, ev.TaskStarted, "last")
    assert index(events, ev.TaskFinished, "side") < index(events, ev.TaskStarted, "last")
    result = run.result
    assert result is not None and result.status == "done"
    assert result["first"].last_text_content == "first: hello"
    assert result["second"].last_text_content == "second: first: hello"
    # Several upstream tasks: their answers in depends_on order, each under a heading.
    assert run.tasks["last"].message == "## second\n\nsecond: first: hello\n\n## side\n\nside: first: hello"
    assert result.last_task == "last" and result.value is result["last"]
    assert set(result.by_robot) == {"first", "second", "side", "last"}
    assert result.context["run_params"] == {}
    assert next(e.task for e in events if isinstance(e, ev.TaskStarted)) == "first"


def barrier_provider(arrived: list[str], everyone: asyncio.Event, needed: int, name: str,
                     timeout: float = 5.0) -> FunctionProvider:
    async def fn(messages: list[Message], info: AgentInfo) -> str:
        arrived.append(name)
        if len(arrived) >= needed:
            everyone.set()
        try:
            await asyncio.wait_for(everyone.wait(), timeout)
        except TimeoutError:
            return "alone"
        return "together"

    return FunctionProvider(fn)


async def test_independent_tasks_really_overlap() -> None:
    arrived: list[str] = []
    everyone = asyncio.Event()
    net = Network("wide")
    for name in ("a", "b", "c"):
        net.task(name, bot(name, barrier_provider(arrived, everyone, 3, name)))
    result = await asyncio.wait_for(net.arun("go"), 10)
    # Each robot only answers "together" once all three are inside their model call at once.
    assert {n: r.last_text_content for n, r in result.results.items()} == {
        "a": "together", "b": "together", "c": "together"}


async def test_concurrency_limit_runs_one_at_a_time() -> None:
    arrived: list[str] = []
    everyone = asyncio.Event()
    net = Network("narrow", concurrency=1)
    for name in ("a", "b"):
        net.task(name, bot(name, barrier_provider(arrived, everyone, 2, name, timeout=0.2)))
    result = await net.arun("go")
    assert result.results["a"].last_text_content == "alone"
    assert result.results["b"].last_text_content == "together"  # a had arrived before b started


def counting_provider(running: list[int], peak: list[int]) -> FunctionProvider:
    """Records how many model calls are inside at once (``running[0]``) and the most ever (``peak[0]``)."""
    async def fn(messages: list[Message], info: AgentInfo) -> str:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        try:
            await asyncio.sleep(0.05)
        finally:
            running[0] -= 1
        return "done"

    return FunctionProvider(fn)


@pytest.mark.parametrize(("options", "expected"), [
    ({"max_concurrent_robots": 4}, 4),                       # RobotLab's example 31: six analysts, four at once
    ({"max_concurrent_robots": 2, "concurrency": 3}, 2),     # the tighter of the two holds
    ({"max_concurrent_robots": 5, "concurrency": 3}, 3),
    ({}, 6),                                                 # no cap: all six together
])
async def test_max_concurrent_robots_bounds_the_tasks_running_at_once(options: dict[str, Any],
                                                                       expected: int) -> None:
    running, peak = [0], [0]
    net = Network("launch", **options)
    for i in range(6):
        net.task(f"analyst{i}", bot(f"analyst{i}", counting_provider(running, peak)))
    assert net.task_limit == (None if not options else expected)
    assert f"concurrency: {expected if options else 'no limit'})" in net.execution_plan()
    result = await asyncio.wait_for(net.arun("assess"), 10)
    assert peak[0] == expected
    assert [r.last_text_content for r in result.results.values()] == ["done"] * 6


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "4"])
def test_max_concurrent_robots_refuses_what_is_not_a_positive_number(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_concurrent_robots must be a positive number or None"):
        Network("n", max_concurrent_robots=bad)


@pytest.mark.parametrize("how", ["rule", "json", "router", "plain"])
async def test_routing_runs_exactly_one_optional_task(how: str) -> None:
    answers = {"rule": "This looks like a technical problem.", "json": '{"activate": "technical"}',
               "router": "anything", "plain": "technical"}
    net = Network("triage")
    options: dict[str, Any] = {}
    if how == "rule":
        options["route"] = Route({"billing": "billing", "technical": "technical"}, default="general")
    if how == "router":
        options["router"] = lambda result: "technical"
    net.task("classifier", bot("classifier", says(answers[how])), **options)
    specialists = {name: echo(name) for name in ("billing", "technical", "general")}
    for name, provider in specialists.items():
        net.task(name, bot(name, provider), depends_on="optional")
    run = net.stream("My app crashes on start")
    events = await collect(run)
    check_stream(events)
    done = finished(events)
    assert {n: e.status for n, e in done.items()} == {
        "classifier": "done", "technical": "done", "billing": "skipped", "general": "skipped"}
    assert "not activated" in (done["billing"].error or "")
    assert [len(p.history) for p in specialists.values()] == [0, 1, 0]
    # Routing forwards the request: the specialist answers the customer's message.
    assert run.result is not None
    assert run.result["technical"].last_text_content == "technical: My app crashes on start"
    assert run.tasks["technical"].activated_by == "classifier"
    assert run.result.activated == {"technical": "classifier"}
    assert run.result.last_task == "technical"


async def test_route_default_and_no_route() -> None:
    net = Network("triage")
    net.task("classifier", bot("classifier", says("no idea")),
             route=Route({"billing": "billing"}, default="general"))
    net.task("billing", bot("billing", says("b")), depends_on="optional")
    net.task("general", bot("general", says("g")), depends_on="optional")
    result = await net.arun("hi")
    assert result.statuses == {"classifier": "done", "billing": "skipped", "general": "done"}

    net = Network("nothing")
    net.task("classifier", bot("classifier", says("no idea")))
    net.task("billing", bot("billing", says("b")), depends_on="optional")
    net.task("after", bot("after", says("a")), depends_on=["billing"])
    result = await net.arun("hi")
    assert result.statuses == {"classifier": "done", "billing": "skipped", "after": "skipped"}
    assert result.tasks["after"].reason == "all its dependencies were skipped"


async def test_router_naming_an_unknown_task_fails_the_run() -> None:
    net = Network("r")
    net.task("classifier", bot("classifier", says("x")), router=lambda result: "nope")
    net.task("billing", bot("billing", says("b")), depends_on="optional")
    with pytest.raises(NetworkRunError, match="not an optional task") as info:
        await net.arun("hi")
    assert info.value.task == "classifier"


async def test_context_deep_merged_over_run_params_reaches_templates() -> None:
    provider = ScriptedProvider(default="ok")
    template = Template.parse(
        "{{ customer.name }}/{{ customer.tier }}/{{ customer.region }}|{{ tags | join(',') }}|{{ company }}"
        "|{{ network_message }}|{{ message }}"
    )
    net = Network("ctx", context={"company": "Acme", "tags": ["net"]})
    net.task("t", bot("t", provider, template=template),
             context={"customer": {"tier": "gold", "region": "eu"}, "tags": ["task"]})
    await net.arun("hello", customer={"name": "Ada", "tier": "basic"}, tags=["run", "more"])
    assert provider.history[0].system == "Ada/gold/eu|task|Acme|hello|hello"


async def test_input_modes() -> None:
    provider = FunctionProvider(lambda messages, info: f"got {messages[-1].content}")
    net = Network("inputs")
    net.task("a", bot("a", says("A says hi")))
    net.task("run_msg", bot("run_msg", provider), depends_on=["a"], input="run")
    net.task("templ", bot("templ", echo("templ")), depends_on=["a"],
             input="Q: {{ message }} / A: {{ upstream.a }} / {{ topic }}")
    result = await net.arun("original", topic="tea")
    assert result["run_msg"].last_text_content == "got original"
    assert result["templ"].last_text_content == "templ: Q: original / A: A says hi / tea"


async def test_parallel_group_as_a_dependency() -> None:
    net = Network("groups")
    with net.parallel("analysis") as group:
        group.task("x", bot("x", says("X")))
        group.task("y", bot("y", says("Y")))
    net.task("join", bot("join", echo("join")), depends_on=["analysis"])
    result = await net.arun("go")
    assert result["join"].last_text_content == "join: ## x\n\nX\n\n## y\n\nY"
    assert net.groups == {"analysis": ["x", "y"]}
    assert 'subgraph' in net.to_mermaid()


async def test_same_robot_in_two_tasks_runs_one_at_a_time() -> None:
    shared = bot("shared", echo("s"))
    net = Network("shared").task("a", shared).task("b", shared)
    result = await net.arun("go")
    assert result.statuses == {"a": "done", "b": "done"}
    assert len(shared.history) == 4  # one conversation, two turns


# -- memory -------------------------------------------------------------------------------------


@tool
async def stamp(key: str, context: ToolContext) -> str:
    """Write the key after a pause (async, so writers interleave)."""
    await asyncio.sleep(0.01)
    assert context.memory is not None
    context.memory.set(key, f"from {context.robot}")
    return "ok"


async def test_memory_writes_are_attributed_under_concurrency() -> None:
    arrived: list[str] = []
    everyone = asyncio.Event()
    names = [f"w{i}" for i in range(6)]

    def provider(name: str) -> FunctionProvider:
        async def fn(messages: list[Message], info: AgentInfo) -> Any:
            if messages[-1].is_tool_result:
                return "done"
            arrived.append(name)
            if len(arrived) == len(names):
                everyone.set()
            await asyncio.wait_for(everyone.wait(), 5)  # everyone writes at the same moment
            tool_name = "remember" if name in ("w0", "w1", "w2") else "stamp"
            args = {"key": f"k_{name}", "value": name} if tool_name == "remember" else {"key": f"k_{name}"}
            return [ToolCall(tool_name, args)]

        return FunctionProvider(fn)

    net = Network("writers")
    for name in names:
        net.task(name, bot(name, provider(name), tools=["remember", stamp]))
    events = await collect(net.stream("go"))
    check_stream(events)
    for name in names:
        assert net.memory.history(f"k_{name}")[-1].writer == name
    changes = [e for e in events if isinstance(e, ev.MemoryChanged)]
    assert sorted(c.key for c in changes) == sorted(f"k_{n}" for n in names)  # once per change
    for change in changes:
        assert change.writer == change.task == change.robot == change.key[2:]
        assert change.network_name == "writers"
        # The change comes after the tool call that made it, in that task's stream.
        use = next(i for i, e in enumerate(events) if isinstance(e, ev.ToolUse) and e.task == change.task)
        assert use < events.index(change)


async def test_wait_for_a_key_written_by_another_task() -> None:
    reader_provider = ScriptedProvider(default="read it")
    writer_script = ScriptedProvider([
        [Pause(0.05), ToolCall("remember", {"key": "answer", "value": 42})], "stored"])
    net = Network("waiting")
    net.task("writer", bot("writer", writer_script, tools=["remember"]))
    net.task("reader", bot("reader", reader_provider, template=Template.parse("The answer is {{ answer }}.")),
             wait_for="answer", wait_timeout=5)
    run = net.stream("go")
    events = await collect(run)
    assert isinstance(check_stream(events), ev.RunFinished)
    assert reader_provider.history[0].system == "The answer is 42."
    # The reader started at once (both are entry tasks) and waited for the writer.
    assert index(events, ev.TaskStarted, "reader") < index(events, ev.MemoryChanged, "writer")
    assert await net.wait_for("answer", timeout=0.1) == 42


async def test_wait_for_times_out_and_fails_the_task() -> None:
    net = Network("waiting")
    net.task("reader", bot("reader", says("never")), wait_for=["missing"], wait_timeout=0.05)
    events = await collect(net.stream("go"))
    terminal = check_stream(events)
    assert isinstance(terminal, ev.RunFailed)
    assert terminal.task == "reader" and "missing" in terminal.error
    assert terminal.error_type == "AwaitTimeout"
    assert finished(events)["reader"].status == "failed"


async def test_a_wait_nothing_in_the_network_can_end_is_said_and_a_write_from_outside_ends_it() -> None:
    net = Network("waiting")
    net.task("writer", bot("writer", says("done, and I wrote nothing")))
    net.task("reader", bot("reader", says("read it")), wait_for=["missing"])  # no wait_timeout
    run = net.stream("go")
    events: list[ev.Event] = []

    async def watch() -> None:
        async for event in run:
            events.append(event)
            if isinstance(event, ev.RunStatus) and event.state == "notice":
                net.memory["missing"] = "at last"  # what the notice says can still end the wait

    await asyncio.wait_for(watch(), 10)
    notices = [e for e in events if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert len(notices) == 1 and notices[0].task == "reader"
    assert "'missing'" in notices[0].detail and "wait_timeout" in notices[0].detail
    assert index(events, ev.TaskFinished, "writer") < events.index(notices[0])  # said once the writer ended
    assert isinstance(check_stream(events), ev.RunFinished)
    assert finished(events)["reader"].status == "done"


async def test_a_wait_another_task_may_still_end_is_not_called_stuck() -> None:
    writer_script = ScriptedProvider([
        [Pause(0.2), ToolCall("remember", {"key": "answer", "value": 42})], "stored"])
    net = Network("waiting")
    net.task("writer", bot("writer", writer_script, tools=["remember"]))
    net.task("reader", bot("reader", says("read it")), wait_for="answer")
    events = await asyncio.wait_for(collect(net.stream("go")), 10)
    assert isinstance(check_stream(events), ev.RunFinished)
    assert not [e for e in events if isinstance(e, ev.RunStatus) and e.state == "notice"]


async def test_broadcast_reaches_handlers_and_memory() -> None:
    net = Network("news")
    seen: list[dict[str, Any]] = []
    got = asyncio.Event()

    async def handler(message: dict[str, Any]) -> None:
        seen.append(message)
        got.set()

    assert net.on_broadcast(handler) is net
    with pytest.raises(ValueError, match="Handler required"):
        net.on_broadcast()
    net.broadcast({"event": "analysis_started"})
    await asyncio.wait_for(got.wait(), 2)
    assert seen[0]["payload"] == {"event": "analysis_started"} and seen[0]["network"] == "news"
    assert net.memory.get("_network_broadcast")["payload"] == {"event": "analysis_started"}


async def test_a_tool_can_broadcast_inside_a_task() -> None:
    @tool
    def announce(text: str, context: ToolContext) -> str:
        """Tell every robot."""
        context.network.broadcast({"text": text})
        return "sent"

    net = Network("tools")
    net.task("a", bot("a", ScriptedProvider([[ToolCall("announce", {"text": "hi"})], "ok"]), tools=[announce]))
    events = await collect(net.stream("go"))
    change = next(e for e in events if isinstance(e, ev.MemoryChanged))
    assert change.key == "_network_broadcast" and change.writer == "a" and change.task == "a"


# -- failure and stop ---------------------------------------------------------------------------


async def test_a_failing_task_fails_the_run_and_stops_the_others() -> None:
    hold = asyncio.Event()
    slow = ScriptedProvider([[Pause(event=hold), "too late"]])
    net = Network("fails")
    net.task("quick", bot("quick", says("quick done")))
    net.task("slow", bot("slow", slow))
    net.task("broken", bot("broken", ScriptedProvider([[Pause(0.05), Fail("boom")]])))
    net.task("after", bot("after", says("x")), depends_on=["broken"])
    run = net.stream("go")
    events = await collect(run)
    terminal = check_stream(events)
    assert isinstance(terminal, ev.RunFailed)
    assert terminal.task == "broken" and "boom" in terminal.error and "broken" in terminal.error
    done = finished(events)
    assert done["quick"].status == "done"
    assert done["broken"].status == "failed" and "boom" in (done["broken"].error or "")
    assert done["slow"].status == "cancelled"
    assert done["after"].status == "cancelled" and "not run" in (done["after"].error or "")
    result = terminal.partial
    assert result.status == "failed" and result.failed_task == "broken"
    assert result["quick"].last_text_content == "quick done"  # finished tasks keep their results
    assert "slow" not in result.results

    net2 = Network("fails")
    net2.task("broken", bot("broken", ScriptedProvider([Fail("boom")])))
    with pytest.raises(NetworkRunError) as info:
        await net2.arun("go")
    assert info.value.task == "broken" and info.value.result.status == "failed"


async def test_an_exception_before_the_robot_runs_fails_that_task() -> None:
    net = Network("bad-template")
    net.task("t", bot("t", says("x"), template=Template.parse("{{ 1 / 0 }}")))
    events = await collect(net.stream("go"))
    terminal = check_stream(events)
    assert isinstance(terminal, ev.RunFailed) and terminal.task == "t"


async def test_stop_mid_run_cancels_every_running_task() -> None:
    hold = asyncio.Event()
    net = Network("stop")
    net.task("done_first", bot("done_first", says("early")))
    net.task("a", bot("a", ScriptedProvider([["partial ", Pause(event=hold), "never"]])), depends_on=["done_first"])
    net.task("b", bot("b", ScriptedProvider([[Pause(event=hold), "never"]])), depends_on=["done_first"])
    net.task("c", bot("c", says("x")), depends_on=["a"])
    run = net.stream("go")
    events: list[ev.Event] = []
    started: set[str] = set()
    async for event in run:
        events.append(event)
        if isinstance(event, ev.TaskStarted):
            started.add(event.task or "")
            if {"a", "b"} <= started:
                run.cancel("enough")
    terminal = check_stream(events)
    assert isinstance(terminal, ev.RunCancelled) and terminal.reason == "enough"
    done = finished(events)
    assert done["done_first"].status == "done"
    assert done["a"].status == "cancelled" and done["b"].status == "cancelled" and done["c"].status == "cancelled"
    assert run.result is not None and run.result.status == "cancelled"
    assert run.result["done_first"].last_text_content == "early"
    assert not hold.is_set()


async def test_stop_before_start_and_consumer_leaving() -> None:
    net = Network("stop").task("a", bot("a", ScriptedProvider([[Pause(5), "x"]])))
    run = net.stream("go")
    run.cancel()
    events = await collect(run)
    assert isinstance(check_stream(events), ev.RunCancelled)

    net = Network("leave").task("a", bot("a", ScriptedProvider([["x", Pause(5), "y"]])))
    run = net.stream("go")
    async for event in run:
        if isinstance(event, ev.TextDelta):
            break
    for _ in range(200):  # the abandoned iterator is closed by the loop soon after
        if run.done:
            break
        await asyncio.sleep(0.01)
    assert run.done and isinstance(run.terminal, ev.RunCancelled)
    assert run.tasks["a"].status == "cancelled"


async def test_stopping_a_task_robot_directly_stops_the_network() -> None:
    hold = asyncio.Event()
    net = Network("stop").task("a", bot("a", ScriptedProvider([["x", Pause(event=hold)]])))
    run = net.stream("go")
    events = []
    async for event in run:
        events.append(event)
        if isinstance(event, ev.TextDelta):
            agent_run = run.tasks["a"].agent_run
            assert agent_run is not None
            agent_run.cancel("from the dock")
    terminal = check_stream(events)
    assert isinstance(terminal, ev.RunCancelled) and "from the dock" in terminal.reason


async def test_result_serializes_and_round_trips_through_events() -> None:
    net = Network("json").task("a", bot("a", says("hello"))).task("b", bot("b", says("bye")), depends_on=["a"])
    events = await collect(net.stream("go", customer="Ada"))
    terminal = events[-1]
    data = terminal.to_dict()
    assert data["result"]["network"] == "json" and data["result"]["last_task"] == "b"
    assert data["result"]["tasks"]["a"]["status"] == "done"
    assert data["result"]["output"][0]["content"] == "bye"  # the last result, RobotResult-shaped
    again = ev.event_from_dict(data)
    assert again.result.last_text_content == "bye"  # type: ignore[attr-defined]
    from workspace.network import NetworkResult

    restored = NetworkResult.from_dict(data["result"])
    assert restored.results["a"].last_text_content == "hello" and restored.last_task == "b"


async def test_task_state_is_what_a_dock_needs() -> None:
    net = Network("dock").task("a", bot("a", says("hello")))
    run = net.stream("go")
    assert run.statuses == {"a": "waiting"}
    seen: list[str] = []
    async for _event in run:
        seen.append(run.tasks["a"].status)
    state = run.tasks["a"]
    assert "running" in seen and state.status == "done"
    assert state.run_id and state.duration is not None and state.text == "hello"
    assert isinstance(state.events[0], ev.TaskStarted)
    assert any(isinstance(e, ev.RunStarted) and e.run_id == state.run_id for e in state.events)
    graph = net.graph()
    assert graph["nodes"][0]["name"] == "a" and graph["edges"] == []
    assert "fill:" in net.to_mermaid(status=run.statuses)


def test_blocking_run_outside_a_loop() -> None:
    result = Network("sync").task("a", bot("a", says("hi"))).run("go")
    assert result.last_text_content == "hi"


def test_run_options_are_checked() -> None:
    net = Network("opts").task("a", bot("a", says("hi")))
    with pytest.raises(TypeError, match="not an option of a network run"):
        net.stream("go", network_memory=Memory())


async def test_run_level_provider_and_tools_reach_every_task() -> None:
    provider = ScriptedProvider(default="from the run")
    net = Network("opts").task("a", bot("a", says("own"), tools=["remember"]))
    result = await net.arun("go", provider=provider, tools="none")
    assert result.last_text_content == "from the run"
    assert provider.history[0].tool_names == []

