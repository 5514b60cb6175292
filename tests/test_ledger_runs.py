"""The budget ledger in the agent loop (RobotLab's ``Budget::Ledger`` wiring), on the loopback server.

Each model call holds the whole remaining budget before it is sent and settles what the server reported
after it; a spent budget stops a run before anything is sent; the call that passes the limit is made and
then the run fails with RobotLab's message; a failed call gives its reservation back; a network's parallel
tasks sharing a ledger take turns, so the shared budget is passed at most by one call.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.loopback_robots import get_weather, loopback_robot

from ui.chat.model.presenter import ChatPresenter
from workspace import events as ev
from workspace.cli.render import EventPrinter
from workspace.config import load_config
from workspace.ledger import BudgetExceeded, Ledger
from workspace.network import Network
from workspace.network.loader import load_network
from workspace.robot import Robot


def robot(llm_server: FakeLLMServer, *, name: str = "r", kind: str = "lean", **options: Any) -> Robot:
    return loopback_robot(llm_server, name, provider="litellm" if kind == "litellm" else "auto", tools=[get_weather],
                          **options)


async def events_of(run: Any) -> list[ev.Event]:
    async def go() -> list[ev.Event]:
        return [e async for e in run]
    return await asyncio.wait_for(go(), timeout=60)  # bounds a hang only


def record(llm_server: FakeLLMServer, ledger: Ledger, replies: list[Reply]) -> list[tuple[dict[str, float], float]]:
    """Answer with ``replies`` in order; note what the ledger held and had consumed as each request arrived."""
    seen: list[tuple[dict[str, float], float]] = []

    def reply(body: dict[str, Any]) -> Reply:
        seen.append((ledger.reserved, ledger.consumed.get("tokens", 0)))
        return replies[len(seen) - 1]

    llm_server.reply_fn = reply
    return seen


async def test_each_call_holds_what_remains_and_settles_what_it_used(llm_server: FakeLLMServer) -> None:
    r = robot(llm_server, token_budget=1000)
    assert r.ledger is not None and r.ledger.limits == {"tokens": 1000}
    seen = record(llm_server, r.ledger, [Reply.tool("get_weather", {"city": "Oslo"}, usage=(50, 10)),
                                     Reply.say("Sunny.", usage=(60, 20))])
    result = await r.arun("Weather?")
    assert result.last_text_content == "Sunny."
    assert seen == [({"tokens": 1000}, 0), ({"tokens": 940}, 60)]  # the whole rest, then the rest after 60
    assert r.ledger.consumed == {"tokens": 140, "cost": 0} and r.ledger.reserved == {}
    # The ledger spans the robot's life: the next run starts from what is left.
    seen2 = record(llm_server, r.ledger, [Reply.say("Again.", usage=(5, 5))])
    await r.arun("Once more")
    assert seen2 == [({"tokens": 860}, 140)] and r.ledger.consumed["tokens"] == 150


async def test_a_spent_budget_stops_the_run_before_anything_is_sent(llm_server: FakeLLMServer) -> None:
    ledger = Ledger(limits={"tokens": 100}, consumed={"tokens": 100})
    r = robot(llm_server, ledger=ledger)
    with pytest.raises(BudgetExceeded, match=r"^Token budget exceeded: 100 tokens used, budget is 100$"):
        await r.arun("Hi")
    assert llm_server.requests == [] and ledger.reserved == {}


async def test_the_call_that_passes_the_limit_is_made_then_the_run_fails(llm_server: FakeLLMServer) -> None:
    r = robot(llm_server, token_budget=100)
    llm_server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}, usage=(90, 20)), Reply.say("never asked"))
    events = await events_of(r.stream("Weather?"))
    failed = [e for e in events if isinstance(e, ev.RunFailed)]
    assert len(failed) == 1 and failed[0].error_type == "BudgetExceeded"
    assert failed[0].error == "Token budget exceeded: 110 tokens used, budget is 100"
    assert len(llm_server.requests) == 1 and not [e for e in events if isinstance(e, ev.ToolResult)]
    assert r.ledger is not None and r.ledger.consumed["tokens"] == 110 and r.ledger.reserved == {}
    with pytest.raises(BudgetExceeded, match="110 tokens used"):  # the next run is refused before sending
        await r.arun("And now?")
    assert len(llm_server.requests) == 1
    # What a person sees: the terminal's line and the chat's footer for the run.
    out = io.StringIO()
    printer = EventPrinter(out)
    for event in events:
        printer(event)
    printer.finish()
    assert "✗ failed: Token budget exceeded: 110 tokens used, budget is 100" in out.getvalue()
    presenter = ChatPresenter()
    presenter.add_user("Weather?")
    for event in events:
        presenter.feed(event)
    run = presenter.run(failed[0].run_id)
    assert run is not None and run.end is not None
    assert run.end.status_text == "Failed — Token budget exceeded: 110 tokens used, budget is 100"


async def test_a_cost_budget_of_a_priced_model(llm_server: FakeLLMServer) -> None:
    r = robot(llm_server, kind="litellm", model="openai/gpt-4o-mini", cost_budget=0.001)
    llm_server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}, usage=(100_000, 1000)), Reply.say("never asked"))
    with pytest.raises(BudgetExceeded) as caught:
        await r.arun("Weather?")
    assert r.ledger is not None
    spent = r.ledger.consumed["cost"]
    assert spent > 0.001 and str(caught.value) == f"Cost budget exceeded: ${spent:.6f} used, budget is $0.001000"
    assert len(llm_server.requests) == 1


async def test_a_failed_call_gives_its_reservation_back(llm_server: FakeLLMServer) -> None:
    r = robot(llm_server, token_budget=500)
    llm_server.enqueue(Reply.error(500, "the model crashed"))
    events = await events_of(r.stream("Hi"))
    assert isinstance(events[-1], ev.RunFailed) and events[-1].error_type != "BudgetExceeded"
    assert r.ledger is not None and r.ledger.reserved == {} and r.ledger.consumed["tokens"] == 0
    seen = record(llm_server, r.ledger, [Reply.say("Back.", usage=(10, 10))])
    assert (await r.arun("Again")).last_text_content == "Back."
    assert seen == [({"tokens": 500}, 0)]  # the whole budget was there again


async def test_a_stopped_call_gives_its_reservation_back(llm_server: FakeLLMServer) -> None:
    r = robot(llm_server, token_budget=500)
    llm_server.enqueue(Reply.say("a long answer that never ends", chunk_delay=5, chunk_size=1))
    run = r.stream("Hi")
    seen: list[ev.Event] = []
    held: list[dict[str, float]] = []

    async def watch() -> None:
        async for event in run:
            seen.append(event)
            if isinstance(event, ev.TextDelta) and not held:
                assert r.ledger is not None
                held.append(r.ledger.reserved)  # the call in flight holds the whole budget
                run.cancel()

    await asyncio.wait_for(watch(), timeout=60)
    assert isinstance(seen[-1], ev.RunCancelled) and held == [{"tokens": 500}]
    assert r.ledger is not None and r.ledger.reserved == {} and r.ledger.consumed["tokens"] == 0


def test_a_robot_takes_budgets_or_a_ledger_not_both(llm_server: FakeLLMServer) -> None:
    from workspace.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="not both"):
        robot(llm_server, ledger=Ledger(), token_budget=10)
    with pytest.raises(ConfigurationError, match="token_budget must be a whole number"):
        robot(llm_server, token_budget=0)
    with pytest.raises(ConfigurationError, match="cost_budget must be a number"):
        robot(llm_server, cost_budget="much")
    assert robot(llm_server).ledger is None


async def test_parallel_tasks_sharing_a_ledger_take_turns(llm_server: FakeLLMServer) -> None:
    ledger = Ledger(limits={"tokens": 50})
    seen = record(llm_server, ledger, [Reply.say(f"answer {i}", usage=(20, 10), chunk_delay=0.05) for i in range(3)])
    net = Network("three", ledger=ledger)
    for name in ("a", "b", "c"):
        net.task(name, robot(llm_server, name=name), on_error="continue")
    result = await asyncio.wait_for(net.arun("Go"), timeout=60)
    # One call at a time, each holding all that was left and seeing every earlier call settled:
    assert seen == [({"tokens": 50}, 0), ({"tokens": 20}, 30)]
    # The second call passed the limit; the third task was refused before sending anything.
    assert len(llm_server.requests) == 2 and ledger.consumed["tokens"] == 60 and ledger.reserved == {}
    answers = sorted(str(result.results[name].last_text_content) for name in ("a", "b", "c"))
    assert sum("Token budget exceeded" in a for a in answers) == 2
    assert sum(a.startswith("answer") for a in answers) == 1


async def test_a_network_file_budget_is_one_ledger(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    path = tmp_path / "pair.yaml"
    path.write_text("name: pair\nbudget: {tokens: 30}\ntasks:\n  a: {robot: {system_prompt: hi}}\n"
                    "  b: {robot: {system_prompt: hi}}\n", encoding="utf-8")
    net = load_network(path, config=load_config(env={}))
    assert net.ledger is not None and net.ledger.limits == {"tokens": 30}
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nbudget: {tokens: 0, money: 3}\ntasks:\n  a: {robot: {system_prompt: hi}}\n",
                   encoding="utf-8")
    with pytest.raises(Exception, match="budget") as caught:
        load_network(bad, config=load_config(env={}))
    assert "money" in str(caught.value)


async def test_a_caller_waits_for_its_turn_across_threads_and_may_give_up() -> None:
    ledger = Ledger(limits={"tokens": 10, "cost": 1.0})
    first = await ledger.hold_rest("tokens", "cost", "calls")  # "calls" has no limit: held at 0, still counted
    assert first.amounts == {"tokens": 10, "cost": 1.0, "calls": 0} and ledger.remaining("tokens") == 0
    given_up = asyncio.create_task(ledger.hold_rest("tokens"))
    # Another thread with its own event loop (Robot.run() in a worker) waits for the same budget.
    other = asyncio.create_task(asyncio.to_thread(lambda: asyncio.run(ledger.hold_rest("tokens")).amounts))
    await asyncio.sleep(0.2)  # both are waiting: nothing is left to hold
    assert not given_up.done() and not other.done()
    given_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await given_up
    first.settle(tokens=4, cost=0.25, calls=1)
    assert await asyncio.wait_for(other, timeout=30) == {"tokens": 6}  # the rest, once the first settled
    assert ledger.consumed == {"tokens": 4, "cost": 0.25, "calls": 1}
    assert ledger.reserved == {"tokens": 6}  # the thread's hold (its run never settled it)
    ledger.release("tokens", 6)
    spent = Ledger(limits={"cost": 0.5}, consumed={"cost": 0.75})
    with pytest.raises(BudgetExceeded, match=r"^Cost budget exceeded: \$0\.750000 used, budget is \$0\.500000$"):
        await spent.hold_rest("tokens", "cost")
    assert spent.reserved == {}


async def test_a_robot_files_budgets_are_its_ledger(robotlab_home: Path, llm_server: FakeLLMServer) -> None:
    """``token_budget`` / ``cost_budget`` in a robot file's front matter: the robot's ledger for its life;
    a bad value is refused naming the file's key and the fix."""
    from workspace.catalog import load_robot
    from workspace.errors import ConfigurationError

    folder = robotlab_home / "config" / "robots"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thrifty.md").write_text(f"---\nmodel: openai/fake\napi_base: {llm_server.base_url}/v1\n"
                                       "token_budget: 100\ncost_budget: 0.25\n---\nYou are thrifty.", encoding="utf-8")
    config = load_config(env={}, overrides={"llm": {"max_retries": 0}})
    r = load_robot("thrifty", config=config)
    assert r.ledger is not None and r.ledger.limits == {"tokens": 100, "cost": 0.25}
    llm_server.enqueue(Reply.say("Spent.", usage=(90, 20)))
    with pytest.raises(BudgetExceeded, match=r"^Token budget exceeded: 110 tokens used, budget is 100$"):
        await r.arun("Hi")
    # Given to the constructor, a ledger wins over the file's budgets.
    shared = Ledger(limits={"tokens": 5000})
    assert Robot("thrifty", template="thrifty", config=config, ledger=shared).ledger is shared
    (folder / "greedy.md").write_text("---\nmodel: openai/fake\ntoken_budget: 0\n---\nYou are greedy.",
                                      encoding="utf-8")
    with pytest.raises(ConfigurationError, match="token_budget") as error:
        load_robot("greedy", config=config)
    assert "positive whole number" in str(error.value)
