"""Robots that talk, on the loopback OpenAI-compatible server: a model that answers each robot by its system
prompt's first sentence and the question in capitals (``"[You translate] BONJOUR"``), so a test sees which robot
answered what, and robots on it with one retry and no key."""

from __future__ import annotations

from typing import Any

from fakes.llm_server import FakeLLMServer
from workspace import Robot
from workspace.config import load_config


def system_and_question(body: dict[str, Any]) -> tuple[str, str]:
    """A chat request's system prompt and its last message."""
    messages = body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return str(system), str(messages[-1]["content"])


def answer(body: dict[str, Any]) -> str:
    """``[the system prompt's first sentence] THE LAST MESSAGE``."""
    system, question = system_and_question(body)
    return f"[{system.split('.')[0]}] {question.upper()}"


def answering_server() -> FakeLLMServer:
    """The loopback server answering with :func:`answer` (use it as a context manager)."""
    return FakeLLMServer(reply_fn=answer)


def robot(name: str, server: FakeLLMServer, prompt: str) -> Robot:
    """A robot with ``prompt`` on ``server``'s model (``openai/fake``), one retry, no key."""
    return Robot(name, system_prompt=prompt, model="openai/fake", api_base=server.base_url + "/v1",
                 config=load_config(env={}, overrides={"llm": {"max_retries": 1}}))


__all__ = ["answer", "answering_server", "robot", "system_and_question"]
