"""Evals and the user's key: the addresses an eval file and the robot files of its folder write are the
folder's, as ``robotlab run --folder`` keeps them (workspace.trust.folder_file_problem, workspace.urls.key_may_go):
one on this machine is called without the user's key, one elsewhere is refused before any case runs; an address
the user gives (``models=`` of run_eval, ``--models --api-base``) keeps the key. Real loopback servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.errors import ConfigurationError
from workspace.evals import ModelEntry, load_eval_file, run_eval

pytestmark = pytest.mark.timeout(300)  # bounds a hang only

KEY = "sk-evalkey-0123456789abcdef"
ELSEWHERE = "http://192.0.2.2:9/v1"  # TEST-NET-1: never on this machine (nothing is sent: it is refused first)
REFUSED = r"is not on this machine, and files in the opened folder may not send your provider key elsewhere"


def answer(body: dict[str, Any]) -> Reply:
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if "You judge" in str(system):
        return Reply.say('{"pass": true, "reason": "fine"}')
    return Reply.say("pass")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeLLMServer(reply_fn=answer) as fake:
        yield fake


def robot_file(folder: Path, api_base: str | None = None, name: str = "bot") -> str:
    front = "model: openai/fake\n" + (f"api_base: {api_base}\n" if api_base else "")
    (folder / f"{name}.md").write_text(f"---\nname: {name}\n{front}tools: []\n---\nYou are a bot.\n", encoding="utf-8")
    return f"{name}.md"


def eval_file(folder: Path, text: str) -> Path:
    path = folder / "evals.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def run(path: Path, **options: Any) -> Any:
    report = await run_eval(load_eval_file(path), base=path.parent, **options)
    assert report.passed, [r.failures for r in report.results]
    return report


def keys(server: FakeLLMServer) -> list[str | None]:
    return [r.headers.get("authorization") for r in server.request_log if "chat" in r.path]


async def test_a_robot_files_address_gets_no_key(tmp_path: Path, server: FakeLLMServer) -> None:
    robot = robot_file(tmp_path, f"{server.base_url}/v1")
    await run(eval_file(tmp_path, f"robot: {robot}\ncases:\n  - name: one\n    message: hi\n    expect:\n"
                                  "      - contains: pass\n      - rubric: {text: fine}\n"))
    sent = keys(server)
    assert len(sent) == 2 and not any(KEY in str(k) for k in sent), sent  # the robot's call and its judge's


async def test_the_eval_files_models_and_rubric_addresses_get_no_key(tmp_path: Path, server: FakeLLMServer) -> None:
    base = f"{server.base_url}/v1"
    robot = robot_file(tmp_path)
    await run(eval_file(tmp_path, f"robot: {robot}\nmodels: [{{model: openai/fake, api_base: '{base}'}}]\ncases:\n"
                                  "  - name: one\n    message: hi\n    expect:\n      - contains: pass\n"
                                  f"      - rubric: {{text: fine, model: openai/fake, api_base: '{base}'}}\n"))
    sent = keys(server)
    assert len(sent) == 2 and not any(KEY in str(k) for k in sent), sent


async def test_a_router_deployments_address_gets_no_key(tmp_path: Path, server: FakeLLMServer) -> None:
    robot = robot_file(tmp_path)
    await run(eval_file(tmp_path, f"robot: {robot}\nmodels: [{{model: cluster, router: {{model_list: [{{litellm_params: "
                                  f"{{model: openai/fake, api_base: '{server.base_url}/v1'}}}}]}}}}]\ncases:\n"
                                  "  - name: one\n    message: hi\n    expect: [{contains: pass}]\n"))
    sent = keys(server)
    assert len(sent) == 1 and not any(KEY in str(k) for k in sent), sent


async def test_an_address_the_user_gives_keeps_the_key(tmp_path: Path, server: FakeLLMServer) -> None:
    robot = robot_file(tmp_path)
    path = eval_file(tmp_path, f"robot: {robot}\ncases:\n  - name: one\n    message: hi\n    expect: [{{contains: pass}}]\n")
    await run(path, models=[ModelEntry(model="openai/fake", api_base=f"{server.base_url}/v1")])
    assert keys(server) == [f"Bearer {KEY}"]


@pytest.mark.parametrize("route", ["robot file", "models entry", "rubric", "router", "fallback"])
async def test_an_address_elsewhere_is_refused_before_any_case(tmp_path: Path, server: FakeLLMServer,
                                                               route: str) -> None:
    robot = robot_file(tmp_path, ELSEWHERE if route == "robot file" else None)
    if route == "fallback":
        (tmp_path / robot).write_text("---\nname: bot\nmodel: openai/fake\nfallback_models: [{model: openai/other, "
                                      f"api_base: '{ELSEWHERE}'}}]\n---\nYou are a bot.\n", encoding="utf-8")
    models = {"models entry": f"models: [{{model: openai/fake, api_base: '{ELSEWHERE}'}}]\n",
              "router": f"models: [{{model: cluster, router: {{model_list: [{{litellm_params: {{model: openai/fake, "
                        f"api_base: '{ELSEWHERE}'}}}}]}}}}]\n"}.get(route, "")
    rubric = f"      - rubric: {{text: fine, model: openai/fake, api_base: '{ELSEWHERE}'}}\n" if route == "rubric" else ""
    path = eval_file(tmp_path, f"robot: {robot}\n{models}cases:\n  - name: one\n    message: hi\n    expect:\n"
                               f"      - contains: pass\n{rubric}")
    with pytest.raises(ConfigurationError, match=REFUSED):
        await run_eval(load_eval_file(path), base=tmp_path, eval_file=path)
    assert server.request_log == []
