"""Networks, RobotLab 0.2's additions: a person in the network (cyborg), Convergence and its router,
error-tolerant steps (tasks and pipelines), max_concurrent_robots from a network file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from workspace import Convergence, Network, Person, Pipeline, Robot, ScriptedProvider, load_network
from workspace.network import NetworkRunError
from workspace.providers.testing import Fail, FunctionProvider
from workspace.result import DONE, FAILED, SKIPPED


def bot(name: str, provider: Any) -> Robot:
    return Robot(name, system_prompt=f"You are {name}.", provider=provider, knowledge_store=False)


# -- a person in the network (robot_lab-cyborg's example 01) ---------------------------------------------------
async def test_a_person_is_a_task_whose_answer_flows_on() -> None:
    asked: list[tuple[str, list[str] | None, str | None]] = []

    async def ask(question: str, choices: list[str] | None, default: str | None) -> str:
        asked.append((question, choices, default))
        return "2"  # the second choice, as typed in a terminal

    publisher = ScriptedProvider(default="Published.")
    net = Network("release")
    net.task("draft", bot("writer", ScriptedProvider(default="Release notes for v1.0: faster startup.")))
    net.task("approve", Person("approver", ask=ask, choices=["reject", "approved: ship it"], timeout=30),
             depends_on=["draft"])
    net.task("publish", bot("publisher", publisher), depends_on=["approve"])
    result = await asyncio.wait_for(net.arun("Approve the v1.0 release notes?"), 30)
    assert result.status == DONE
    assert len(asked) == 1 and "Release notes for v1.0: faster startup." in asked[0][0]
    assert asked[0][1:] == (["reject", "approved: ship it"], None)
    assert result.results["approve"].last_text_content == "approved: ship it"
    assert "approved: ship it" in publisher.history[0].messages[-1].content


async def test_a_network_provider_does_not_replace_the_person() -> None:
    net = Network("n")
    net.task("ask", Person("boss", ask=lambda q, c, d: "yes"))
    result = await asyncio.wait_for(net.arun("Go?", provider=ScriptedProvider(default="a model")), 30)
    assert result.results["ask"].last_text_content == "yes"


async def test_a_person_who_does_not_answer_in_time_fails_the_task_naming_them() -> None:
    async def never(question: str, choices: Any, default: Any) -> str:
        await asyncio.sleep(3600)
        return "too late"

    net = Network("n")
    net.task("approve", Person("approver", ask=never, timeout=0.05))
    with pytest.raises(NetworkRunError, match=r"Task 'approve' failed: approver did not answer within 0.05 s: give "
                                              r"the person more time") as caught:
        await asyncio.wait_for(net.arun("Go?"), 30)  # bounds a hang, not the person's time limit
    assert caught.value.result.status == FAILED


async def test_with_a_default_the_network_goes_on_when_time_runs_out() -> None:
    async def never(question: str, choices: Any, default: Any) -> str:
        await asyncio.sleep(3600)
        return "too late"

    net = Network("n")
    net.task("approve", Person("approver", ask=never, timeout=0.05, default="approved by default"))
    result = await asyncio.wait_for(net.arun("Go?"), 30)
    assert result.results["approve"].last_text_content == "approved by default"


async def test_nobody_to_ask_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    with pytest.raises(Exception, match=r"Nobody can answer for approver: give Person\('approver', ask=...\)"):
        await Person("approver").arun("Go?")
    with pytest.raises(ValueError, match="timeout must be a number of seconds above 0"):
        Person("p", timeout=0)


# -- Convergence (convergence_test.rb, example 23) ----------------------------------------------------------
AGREE_A = "The invoice total is wrong: the tax was added twice to the order."
AGREE_B = "The order's invoice total is wrong because the tax was added twice."
DISAGREE = "Everything on the invoice looks correct and the totals match the order."


def test_similarity_and_detected_follow_robotlab() -> None:
    assert Convergence.similarity(AGREE_A, AGREE_A) == pytest.approx(1.0)
    assert Convergence.similarity("too short", "too short") == 0.0  # under 30 characters
    assert Convergence.similarity(AGREE_A, "") == 0.0
    assert Convergence.similarity(AGREE_A, AGREE_B) > Convergence.similarity(AGREE_A, DISAGREE)
    assert Convergence.detected(AGREE_A, AGREE_A) and not Convergence.detected(AGREE_A, DISAGREE)
    assert Convergence.detected(AGREE_A, AGREE_B, threshold=0.5)
    with pytest.raises(ValueError, match=r"threshold must be in \[0.0, 1.0\], got 1.5"):
        Convergence.detected(AGREE_A, AGREE_B, threshold=1.5)
    assert (Convergence.DEFAULT_THRESHOLD, Convergence.MIN_TEXT_LENGTH) == (0.85, 30)


@pytest.mark.parametrize(("b_says", "reconciled"), [(AGREE_A, False), (DISAGREE, True)])
async def test_the_router_skips_the_reconciler_when_the_verifiers_agree(b_says: str, reconciled: bool) -> None:
    reconciler = ScriptedProvider(default="Reconciled.")
    route = Convergence.router("verifier_a", "verifier_b", otherwise="reconciler")
    net = Network("check")
    net.task("verifier_a", bot("a", ScriptedProvider(default=AGREE_A)), router=route)
    net.task("verifier_b", bot("b", ScriptedProvider(default=b_says)), router=route)
    net.task("reconciler", bot("r", reconciler), depends_on="optional")
    result = await asyncio.wait_for(net.arun("Is the invoice right?"), 30)
    assert result.status == DONE
    assert (result.tasks["reconciler"].status == DONE) is reconciled
    assert (result.tasks["reconciler"].status == SKIPPED) is not reconciled
    assert len(reconciler.history) == (1 if reconciled else 0)


def test_the_router_needs_two_tasks() -> None:
    with pytest.raises(ValueError, match="compares the answers of two or more tasks"):
        Convergence.router("only", otherwise="r")


# -- error-tolerant steps --------------------------------------------------------------------------------------
async def test_a_task_with_on_error_continue_hands_its_error_on() -> None:
    after = ScriptedProvider(default="Handled.")
    net = Network("n")
    net.task("flaky", bot("flaky", ScriptedProvider([Fail("the model is down", status_code=400)])),
             on_error="continue")
    net.task("next", bot("next", after), depends_on=["flaky"])
    result = await asyncio.wait_for(net.arun("go"), 30)
    assert result.status == DONE
    text = result.results["flaky"].last_text_content
    assert text.startswith("Error: ProviderError: ") and "the model is down" in text
    assert text in after.history[0].messages[-1].content
    with pytest.raises(ValueError, match="on_error must be 'fail' or 'continue'"):
        Network("m").task("t", bot("x", ScriptedProvider(default="x")), on_error="ignore")


async def test_without_it_the_network_fails_as_before() -> None:
    net = Network("n")
    net.task("flaky", bot("flaky", ScriptedProvider([Fail("the model is down", status_code=400)])))
    with pytest.raises(NetworkRunError, match="Task 'flaky' failed: the model is down"):
        await asyncio.wait_for(net.arun("go"), 30)


def test_a_pipeline_step_that_fails_does_not_stop_the_pipeline() -> None:
    second = ScriptedProvider(default="I saw the error.")
    pipeline = Pipeline([bot("first", ScriptedProvider([Fail("boom", status_code=400)])), bot("second", second)])
    result = pipeline.call("start")
    first = result.context["first"]
    assert first.last_text_content.startswith("Error: RunFailedError: ") and "boom" in first.last_text_content
    assert first.duration is not None and first.duration >= 0
    assert result.value.last_text_content == "I saw the error."


# -- max_concurrent_robots from YAML ------------------------------------------------------------------------
async def test_max_concurrent_robots_is_read_from_a_network_file(tmp_path: Path) -> None:
    running, peak = [0], [0]

    async def fn(messages: Any, info: Any) -> str:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        try:
            await asyncio.sleep(0.05)
        finally:
            running[0] -= 1
        return "done"

    robots = "\n".join(f"  analyst{i}: {{system_prompt: Assess.}}" for i in range(5))
    tasks = "\n".join(f"  task{i}: {{robot: analyst{i}}}" for i in range(5))
    path = tmp_path / "launch.yaml"
    path.write_text(f"name: launch\nmax_concurrent_robots: 2\nrobots:\n{robots}\ntasks:\n{tasks}\n", encoding="utf-8")
    net = load_network(path, provider=FunctionProvider(fn))
    assert net.task_limit == 2
    result = await asyncio.wait_for(net.arun("assess"), 30)
    assert result.status == DONE and peak[0] == 2


def test_a_bad_max_concurrent_robots_in_a_file_names_it(tmp_path: Path) -> None:
    from workspace.network import NetworkFileError

    path = tmp_path / "bad.yaml"
    path.write_text("max_concurrent_robots: 0\nrobots: {a: {system_prompt: x}}\ntasks: {t: {robot: a}}\n")
    with pytest.raises(NetworkFileError, match="max_concurrent_robots"):
        load_network(path, provider=ScriptedProvider(default="x"))


# -- a person in a network file ------------------------------------------------------------------------------
async def test_a_network_file_can_name_a_person(tmp_path: Path) -> None:
    path = tmp_path / "release.yaml"
    path.write_text("name: release\nrobots:\n  writer: {system_prompt: You draft.}\n"
                    "  approver: {person: true, timeout: 600, choices: [approve, reject], description: The release manager}\n"
                    "tasks:\n  draft: {robot: writer}\n  approve: {robot: approver, depends_on: [draft]}\n",
                    encoding="utf-8")
    asked: list[str] = []

    def ask(question: str, choices: list[str] | None, default: str | None) -> str:
        asked.append(question)
        return "1"

    net = load_network(path, provider=ScriptedProvider(default="Draft: v2."), ask=ask)
    approver = net.tasks["approve"].robot
    assert isinstance(approver, Person) and approver.timeout == 600 and approver.description == "The release manager"
    result = await asyncio.wait_for(net.arun("Release v2"), 30)
    assert result.results["approve"].last_text_content == "approve"
    assert "Draft: v2." in asked[0]


def test_a_person_with_instructions_or_person_keys_on_a_robot_are_problems(tmp_path: Path) -> None:
    from workspace.network import NetworkFileError

    path = tmp_path / "bad.yaml"
    path.write_text("robots:\n  approver: {person: true, system_prompt: x}\n  writer: {system_prompt: x, timeout: 5}\n"
                    "tasks:\n  a: {robot: approver}\n  w: {robot: writer}\n", encoding="utf-8")
    with pytest.raises(NetworkFileError) as caught:
        load_network(path, provider=ScriptedProvider(default="x"))
    text = str(caught.value)
    assert "a person has no system_prompt: remove it, or remove person: true" in text
    assert "'timeout' is for a person: add person: true, or remove it" in text
