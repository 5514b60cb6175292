"""A thread recorded for the tests of replaying it (``workspace.replay``): a robot on the loopback model server whose
tools count what really ran, two turns (the first looks something up and writes a marker file, the second answers
without tools) stored in a SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply
from workspace.approval import ApprovalGate, ApprovalPolicy
from workspace.persistence import Store
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot
from workspace.session import Workspace


class Tools:
    """The robot's tools, counting what really ran; ``mark`` writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker
        self.ran: list[str] = []
        self.lookups = 0

    def all(self) -> list[Any]:
        def lookup(query: str) -> str:
            """Look something up."""
            self.ran.append("lookup")
            self.lookups += 1
            return f"{query} is number {self.lookups}"

        def weather(city: str) -> str:
            """Today's weather in a city."""
            self.ran.append("weather")
            return f"Sunny in {city}"

        def mark(note: str) -> str:
            """Write a note to the marker file."""
            self.ran.append("mark")
            self.marker.write_text(note, encoding="utf-8")
            return "written"

        return [lookup, weather, mark]


def provider(server: FakeLLMServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                    timeout=10.0, backoff=0.01, max_retries=0)


def robot(server: FakeLLMServer, tools: Tools, prompt: str = "You help.") -> Robot:
    return Robot("helper", system_prompt=prompt, provider=provider(server), tools=tools.all())


def allow_all() -> ApprovalGate:
    return ApprovalGate(ApprovalPolicy.from_list([{"tool": "*", "action": "allow"}]))


#: The record: turn 1 looks something up and marks it, turn 2 answers without tools.
RECORD = [Reply.tool("lookup", {"query": "tea"}), Reply.tool("mark", {"note": "tea"}), "Tea is number 1.",
          "Goodbye."]
MESSAGES = ["What is tea?", "Thanks, bye"]


async def record(tmp_path: Path, tools: Tools) -> tuple[Store, str]:
    """:data:`MESSAGES` sent to :func:`robot` with :data:`RECORD` answering, stored in ``threads.db`` under
    ``tmp_path``; ``tools``' counts and marker file cleared after. (The store, the thread's id.)"""
    store = Store(tmp_path / "threads.db")
    with FakeLLMServer() as server:
        server.enqueue(*RECORD)
        workspace = Workspace(store=store, approval=allow_all(), config=None)
        session = workspace.new_thread("helper", robot=robot(server, tools))
        for text in MESSAGES:
            run = session.send(text)
            await run.wait()
    assert tools.ran == ["lookup", "mark"] and tools.marker.read_text() == "tea"
    tools.ran.clear()
    tools.marker.unlink()
    return store, session.thread_id
