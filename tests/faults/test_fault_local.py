"""Issue 23 §4, "A local conversation stays local": what went wrong with a real local model (llama.cpp's
server), played by the loopback server (tests/fakes/llm_server.py).

- A thread held with a local server goes on there when it is continued (``run --continue``, the window
  reopening it) without ``--api-base``; a switch to another server is the user's, recorded as a
  ``model_changed`` event that says where the conversation goes now.
- A tool call the model writes in prose or in a fenced code example is text, not a call; only the forms
  of chat templates (Hermes/Qwen ``<tool_call>``, Llama 3 ``<|python_tag|>`` or a bare JSON call as the whole
  message, Mistral ``[TOOL_CALLS]``) are calls, and their card says they came from the model's text.
- The token count of a model without a known tokenizer comes from the server's ``/tokenize``, else is
  calibrated from the usage the server reports; a request is never refused on an estimate alone.
- An answer cut off by a full context window says so; a local model gets a default ``max_tokens``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from faultkit import Matrix

from workspace import events as ev
from workspace.cli import main
from workspace.config import load_config
from workspace.persistence import Store
from workspace.session import Workspace

pytestmark = pytest.mark.timeout(120)

AREA_SERVER = "local: a thread keeps its server"
HOSTED = "openai/gpt-4o-mini"  # a hosted model's name that a local server may serve too


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default_text="from the local server") as srv:
        yield srv


def write_robot(home: Path) -> None:
    path = home / "config" / "robots" / "bot.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\ndescription: test robot\ntools: []\n---\nYou help.", encoding="utf-8")


def db_of(home: Path) -> Path:
    return home / "data" / "workspace.db"


def model_events(db: Path) -> list[ev.ModelChanged]:
    with Store(db) as store:
        (thread,) = store.list_threads()
        return [e for _, e in store.thread_events(thread.id) if isinstance(e, ev.ModelChanged)]


def test_run_continue_goes_to_the_threads_server(server: FakeLLMServer, robotlab_home: Path,
                                                 matrix: Matrix, capsys: pytest.CaptureFixture[str]) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "run --continue without --api-base goes to the thread's local server")
    assert main(["run", "bot", "hello", "--model", HOSTED, "--api-base", server.base_url, "--plain"]) == 0
    assert len(server.requests) == 1
    assert main(["run", "--continue", "and then?", "--plain"]) == 0, capsys.readouterr().err
    assert len(server.requests) == 2, "the continued thread did not reach the local server"
    assert capsys.readouterr().out.count("from the local server") == 2
    assert model_events(db_of(robotlab_home)) == []  # no switch: nothing to say

    matrix.case(AREA_SERVER, "--thread ID --api-base OTHER is a switch, recorded as model_changed")
    with FakeLLMServer(default_text="from the other server") as other:
        with Store(db_of(robotlab_home)) as store:
            (thread,) = store.list_threads()
        assert main(["run", "--thread", thread.id[:8], "once more", "--api-base", other.base_url, "--plain"]) == 0
        assert len(other.requests) == 1
        (changed,) = model_events(db_of(robotlab_home))
        assert changed.api_base == other.base_url and changed.previous_api_base == server.base_url
        assert f"at {other.base_url}" in changed.describe()
        # and it goes on there
        assert main(["run", "--continue", "still there?", "--plain"]) == 0
        assert len(other.requests) == 2 and len(server.requests) == 2


async def test_the_window_reopening_a_local_thread_goes_to_its_server(server: FakeLLMServer,
                                                                      robotlab_home: Path, matrix: Matrix) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "the window reopening a thread held with a local server goes on there")
    command = ["run", "bot", "hello", "--model", HOSTED, "--api-base", server.base_url, "--plain"]
    assert await asyncio.to_thread(main, command) == 0
    with Store(db_of(robotlab_home)) as store:
        (thread,) = store.list_threads()
        assert thread.metadata["api_base"] == server.base_url
    # The window: the user's configuration (no llm.api_base), the thread from the list.
    workspace = Workspace(config=load_config(None), store=Store(db_of(robotlab_home)))
    try:
        session = workspace.open_thread(thread.id)
        run = session.send("and then?")
        await asyncio.wait_for(run.wait(), 30)
        assert len(server.requests) == 2, [e.kind for e in run.events]

        matrix.case(AREA_SERVER, "switching a local thread to the hosted provider is said in the chat")
        changed = session.set_model("openai/gpt-4o")
        assert changed is not None and changed.api_base == "" and changed.previous_api_base == server.base_url
        assert "hosted" in changed.describe() and server.base_url in changed.describe()
        again = ev.event_from_dict(json.loads(json.dumps(changed.to_dict())))
        assert again == changed
        assert "api_base" not in session.thread.metadata
    finally:
        await workspace.aclose()


def test_a_key_in_the_api_base_is_not_kept_with_the_thread(server: FakeLLMServer, robotlab_home: Path,
                                                          matrix: Matrix) -> None:
    write_robot(robotlab_home)
    matrix.case(AREA_SERVER, "the thread keeps its server's address, never a key in it")
    base = server.base_url.replace("http://", "http://user:sk-local-secret-1234567890@") + "?api-key=sk-abc123456789"
    assert main(["run", "bot", "hello", "--model", HOSTED, "--api-base", base, "--plain"]) == 0
    with Store(db_of(robotlab_home)) as store:
        (thread,) = store.list_threads()
    stored: Any = thread.metadata["api_base"]
    assert stored == server.base_url and "secret" not in json.dumps(thread.metadata)
    matrix.lost(0, "keys")
