"""RobotLab's Runnable: one interface for a robot and a network (crew, chief, robot_count, network?, single?)."""

from __future__ import annotations

import asyncio

from workspace import Network, Robot, Runnable
from workspace.providers.testing import ScriptedProvider


def bot(name: str, answer: str = "ok") -> Robot:
    return Robot(name, system_prompt=f"You are {name}.", provider=ScriptedProvider(default=answer),
                 tools="none", mcp="none")


async def ask(runnable: Runnable, message: str) -> str:
    """Takes either a robot or a network, as RobotLab's callers of a Runnable do."""
    assert isinstance(runnable, Robot | Network)
    result = await runnable.arun(message)
    return str(result.last_text_content)


def test_a_robot_is_a_crew_of_one() -> None:
    r = bot("solo")
    assert isinstance(r, Runnable)
    assert r.crew == [r] and r.chief is r and r.robot_count == 1
    assert r.is_single and not r.is_network


def test_a_network_s_crew_is_its_robots_in_order() -> None:
    net = Network("team")
    assert isinstance(net, Runnable) and net.is_network
    assert net.crew == [] and net.chief is None and net.robot_count == 0 and not net.is_single
    lead, helper = bot("lead"), bot("helper")
    net.task("lead", lead).task("helper", helper, depends_on=["lead"])
    assert net.crew == [lead, helper] and net.chief is lead and net.robot_count == 2 and not net.is_single
    one = Network("one").task("only", bot("only"))
    assert one.is_single and one.is_network


def test_either_runs_through_the_same_call() -> None:
    net = Network("team").task("lead", bot("lead", "from the network"))
    assert asyncio.run(ask(bot("solo", "from the robot"), "hi")) == "from the robot"
    assert asyncio.run(ask(net, "hi")) == "from the network"
