"""RobotLab's RunConfig: the object itself, and its layers (network -> task -> robot -> run) as the model
sees them: the requests a robot sends the loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.loopback_robots import get_weather, loopback_config, loopback_robot

import workspace
from workspace.errors import ConfigurationError, ToolLoopError
from workspace.network import Network
from workspace.robot import Robot
from workspace.run_config import FIELDS, RunConfig


def sent(llm_server: FakeLLMServer, index: int = -1) -> dict[str, Any]:
    return dict(llm_server.requests[index])


# -- the object ----------------------------------------------------------------------------------
def test_a_runconfig_holds_the_fields_set_and_merges_the_later_ones_over() -> None:
    cfg = RunConfig(model="openai/gpt-4o-mini", temperature=0.2)
    assert cfg.model == "openai/gpt-4o-mini" and cfg.temperature == 0.2 and cfg.max_tokens is None
    assert cfg.set(max_tokens=300).set(temperature=None) is cfg  # chainable; None removes a field
    assert cfg.to_dict() == {"model": "openai/gpt-4o-mini", "max_tokens": 300}
    merged = cfg.merge(RunConfig(max_tokens=50, top_p=0.5))
    assert merged.to_dict() == {"model": "openai/gpt-4o-mini", "max_tokens": 50, "top_p": 0.5}
    assert cfg.max_tokens == 300  # merge makes a new one
    assert merged.merge(None) == merged and merged.merge({"stop": ["END"]}).stop == ["END"]

    def seen(*_: Any) -> None:
        return None

    live = RunConfig(on_content=seen, max_tool_rounds=4)
    assert live.to_dict() == {"on_content": seen, "max_tool_rounds": 4}
    assert live.to_dict(json_safe=True) == {"max_tool_rounds": 4}
    assert workspace.RunConfig is RunConfig


@pytest.mark.parametrize(("fields", "says"), [
    ({"temprature": 0.5}, ["Unknown RunConfig field: temprature", "did you mean 'temperature'", *FIELDS]),
    ({"auto_compact": True}, ["'auto_compact' is RobotLab's but not ours", "context_policy"]),
    ({"ractor_pool_size": 4}, ["no Ractors here", "max_concurrent_robots"]),
    ({"temperature": 7}, ["temperature", "0 to 2"]),
    ({"max_tool_rounds": 0}, ["max_tool_rounds must be a whole number of at least 1"]),
    ({"on_content": "print"}, ["on_content must be a function"]),
    ({"tools": "some"}, ["tools"]),
])
def test_a_bad_field_is_an_error_naming_it(fields: dict[str, Any], says: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        RunConfig(**fields)
    for words in says:
        assert words in str(caught.value)
    with pytest.raises(ValueError, match="Unknown RunConfig field: colour"):
        RunConfig().set(colour="red")
    with pytest.raises(AttributeError, match="Unknown RunConfig field: colour"):
        _ = RunConfig().colour


def test_from_front_matter_takes_the_model_settings_and_the_config_block() -> None:
    meta = {"model": "openai/x", "temperature": 0.4, "description": "not a field",
            "config": {"temperature": 0.1, "max_tool_rounds": 3, "token_budget": 900}}
    cfg = RunConfig.from_front_matter(meta)
    # The file's own keys win over its config: block.
    assert cfg.to_dict() == {"model": "openai/x", "temperature": 0.4, "max_tool_rounds": 3, "token_budget": 900}
    with pytest.raises(ValueError, match="cannot give on_tool_call"):
        RunConfig.from_front_matter({"config": {"on_tool_call": "x"}})


# -- a robot's own level ---------------------------------------------------------------------------
async def test_config_fills_in_a_robots_settings_and_its_keywords_win(llm_server: FakeLLMServer) -> None:
    calls: list[str] = []
    cfg = RunConfig(temperature=0.3, max_tokens=64, max_tool_rounds=2, token_budget=5000,
                    on_tool_call=lambda call, *_: calls.append(call.name))
    r = Robot("r", system_prompt="You help.", model="openai/fake", api_base=llm_server.base_url + "/v1",
              config=cfg, temperature=0.9, tools=[get_weather])
    assert r.settings["temperature"] == 0.9 and r.settings["max_tokens"] == 64  # the keyword wins
    assert r.max_tool_rounds == 2 and r.ledger is not None and r.ledger.limits == {"tokens": 5000.0}
    assert r.run_config.temperature == 0.9 and r.run_config.token_budget == 5000
    effective = r.effective_config
    assert effective["model"] == "openai/fake" and effective["max_tool_rounds"] == 2
    assert effective["max_tools"] == r.max_tools and "on_tool_call" in effective
    llm_server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}), Reply.say("Sunny."))
    await asyncio.wait_for(r.arun("weather?"), 60)
    body = sent(llm_server, 0)
    assert body["temperature"] == 0.9 and body["max_tokens"] == 64
    assert calls == ["get_weather"]


async def test_a_robot_files_config_block_is_its_base(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    (tmp_path / "careful.md").write_text(
        f"---\nmodel: openai/fake\napi_base: {llm_server.base_url}/v1\ntemperature: 0.5\n"
        "config:\n  max_tokens: 40\n  temperature: 0.1\n  max_tool_rounds: 1\n---\nYou are careful.\n")
    r = Robot("careful", template=tmp_path / "careful.md", tools=[get_weather],
              config=RunConfig(top_p=0.8))
    assert r.max_tool_rounds == 1
    llm_server.enqueue(Reply.say("Done."))
    await asyncio.wait_for(r.arun("hi"), 60)
    body = sent(llm_server)
    assert body["max_tokens"] == 40 and body["temperature"] == 0.5 and body["top_p"] == 0.8
    (tmp_path / "bad.md").write_text("---\nconfig:\n  max_tool_round: 2\n---\nx\n")
    with pytest.raises(Exception, match="max_tool_rounds"):
        Robot("bad", template=tmp_path / "bad.md")


# -- a run's level ------------------------------------------------------------------------------------
async def test_a_runs_config_wins_for_that_run_only(llm_server: FakeLLMServer) -> None:
    r = loopback_robot(llm_server, temperature=0.7, tools=[get_weather])
    llm_server.enqueue(Reply.say("one"), Reply.say("two"))
    await asyncio.wait_for(r.arun("a", config=RunConfig(temperature=0.0, max_tokens=12, model="openai/other")), 60)
    await asyncio.wait_for(r.arun("b"), 60)
    first, second = sent(llm_server, 0), sent(llm_server, 1)
    assert (first["temperature"], first["max_tokens"], first["model"]) == (0.0, 12, "other")
    assert second["temperature"] == 0.7 and second.get("max_tokens") != 12 and second["model"] == "fake"
    # The guards come from a run's config too: one tool call allowed, the second fails the run.
    llm_server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}), Reply.tool("get_weather", {"city": "Rome"}))
    with pytest.raises(ToolLoopError):
        await asyncio.wait_for(r.arun("loop", config=RunConfig(max_tool_rounds=1)), 60)
    with pytest.raises(ConfigurationError, match="Unknown RunConfig field: temp"):
        r.stream("c", config={"temp": 1})


# -- a network's and a task's level ----------------------------------------------------------------
async def test_network_then_task_then_robot_then_run(llm_server: FakeLLMServer) -> None:
    plain = Robot("plain", system_prompt="You help.", api_base=llm_server.base_url + "/v1",
                  config=loopback_config("openai/fake"))
    own = Robot("own", system_prompt="You help.", model="openai/fake", api_base=llm_server.base_url + "/v1",
                config=loopback_config(), temperature=0.9)
    net = Network("n", config=RunConfig(model="openai/netmodel", temperature=0.2, max_tokens=100))
    net.task("first", plain, config=RunConfig(max_tokens=77))
    net.task("second", own, depends_on=["first"])
    llm_server.enqueue(Reply.say("from plain"), Reply.say("from own"))
    await asyncio.wait_for(net.arun("go"), 60)
    by_model = {b["model"]: b for b in llm_server.requests}
    # plain has no model of its own: the network's; its task's max_tokens over the network's.
    assert by_model["netmodel"]["temperature"] == 0.2 and by_model["netmodel"]["max_tokens"] == 77
    # own keeps its model and its temperature; the network's max_tokens fills in what it left out.
    assert by_model["fake"]["temperature"] == 0.9 and by_model["fake"]["max_tokens"] == 100
    assert net.to_dict()["config"] == {"model": "openai/netmodel", "temperature": 0.2, "max_tokens": 100}


def test_a_networks_config_gives_its_cap_tools_and_budget() -> None:
    net = Network("n", config={"max_concurrent_robots": 2, "tools": ["get_weather"], "token_budget": 500})
    assert net.max_concurrent_robots == 2 and net.tools == ["get_weather"]
    assert net.ledger is not None and net.ledger.limits == {"tokens": 500.0}
    with pytest.raises(ValueError, match="Network 'n': Unknown RunConfig field: max_robots"):
        Network("n", config={"max_robots": 2})


def test_parallel_mode_and_remove_robot() -> None:
    assert Network("n", parallel_mode="async").parallel_mode == "async"
    with pytest.raises(ValueError) as caught:
        Network("n", parallel_mode="ractor")
    assert "asyncio" in str(caught.value) and "parallel_mode='async'" in str(caught.value)
    with pytest.raises(ValueError, match="must be 'async'"):
        Network("n", parallel_mode="threads")
    a = Robot("a", system_prompt="x", model="openai/fake")
    b = Robot("b", system_prompt="x", model="openai/fake")
    net = Network("n")
    net.task("one", a).task("two", b, depends_on=["one"])
    assert net.remove_robot("one") is a and net.remove_robot("one") is None
    assert net.remove_robot("b") is b and net.crew == []
    net.add_robot(b)
    assert net.crew == [b] and list(net.tasks) == ["one", "two"]  # the crew only: the tasks stay


async def test_a_bus_given_by_config_is_the_robots_and_the_networks() -> None:
    from workspace.bus import MessageBus

    bus = MessageBus()
    alone = Robot("alone", system_prompt="x", model="openai/fake", config=RunConfig(bus=bus))
    assert alone.bus is bus and alone.effective_config["bus"] is bus
    worker = Robot("worker", system_prompt="x", model="openai/fake")
    net = Network("n", config=RunConfig(bus=bus))
    net.task("work", worker)
    assert net.bus is bus and worker.bus is bus
    with pytest.raises(ValueError, match="bus must be a MessageBus, got str"):
        RunConfig(bus="tcp://here")


async def test_a_network_files_config_and_its_tasks(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    from workspace.network.loader import load_network

    path = tmp_path / "net.yaml"
    path.write_text(
        "config: {temperature: 0.3, max_tokens: 33, max_concurrent_robots: 2}\n"
        "robots:\n"
        f"  first: {{system_prompt: You help., model: openai/fake, api_base: '{llm_server.base_url}/v1'}}\n"
        f"  second: {{system_prompt: You help., model: openai/fake2, api_base: '{llm_server.base_url}/v1'}}\n"
        "tasks:\n"
        "  first: {config: {max_tokens: 44}}\n"
        "  second: {depends_on: [first]}\n", encoding="utf-8")
    net = load_network(path, config=loopback_config())
    assert net.max_concurrent_robots == 2 and net.config.temperature == 0.3
    llm_server.enqueue(Reply.say("one"), Reply.say("two"))
    await asyncio.wait_for(net.arun("go"), 60)
    by_model = {b["model"]: b for b in llm_server.requests}
    assert (by_model["fake"]["temperature"], by_model["fake"]["max_tokens"]) == (0.3, 44)
    assert (by_model["fake2"]["temperature"], by_model["fake2"]["max_tokens"]) == (0.3, 33)
    path.write_text("config: {temprature: 0.3}\nrobots: {a: {system_prompt: x}}\ntasks: {a: {}}\n", encoding="utf-8")
    with pytest.raises(Exception, match="temprature"):
        load_network(path, config=loopback_config())


def test_a_config_block_in_the_opened_folder_keeps_its_trust_rules(tmp_path: Path) -> None:
    """A file inside the opened folder may not start a program through its config: block either."""
    from workspace.network.loader import NetworkFileError, load_network

    folder = tmp_path / "project"
    (folder / ".robotlab" / "robots").mkdir(parents=True)
    robot_file = folder / ".robotlab" / "robots" / "sneaky.md"
    robot_file.write_text("---\nconfig:\n  mcp: [{name: x, command: /bin/sh}]\n---\nYou help.\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="defines an MCP server inline"):
        Robot("sneaky", template=robot_file, folder=folder)
    assert Robot("sneaky", template=robot_file).mcp_config == [{"name": "x", "command": "/bin/sh"}]  # not in a folder
    net_file = folder / "net.yaml"
    for text in ("config: {mcp: [{name: x, command: /bin/sh}]}\nrobots: {a: {system_prompt: x}}\ntasks: {a: {}}\n",
                 "robots: {a: {system_prompt: x}}\ntasks: {a: {config: {mcp: [{name: x, command: /bin/sh}]}}}\n"):
        net_file.write_text(text, encoding="utf-8")
        with pytest.raises(NetworkFileError, match="inline"):
            load_network(net_file, folder=folder, config=loopback_config())
