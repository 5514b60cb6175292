"""Robots on the loopback OpenAI-compatible server (``fakes.llm_server``, the model ``openai/fake``), no key and no
retries, and the one tool they are given to call (``get_weather``): what the budget-ledger and RunConfig tests run."""

from __future__ import annotations

from typing import Any

from fakes.llm_server import FakeLLMServer
from workspace.config import Config, load_config
from workspace.robot import Robot
from workspace.tools import tool


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def loopback_config(model: str | None = None, *, provider: str = "auto") -> Config:
    """The configuration of a robot on the loopback server: no key from the environment, no retries, the
    provider ``provider`` (``"auto"`` or ``"litellm"``) and, if given, the default model."""
    llm: dict[str, Any] = {"provider": provider, "max_retries": 0}
    if model:
        llm["model"] = model
    return load_config(env={}, overrides={"llm": llm})


def loopback_robot(server: FakeLLMServer, name: str = "r", *, provider: str = "auto", **options: Any) -> Robot:
    """A robot ("You help.") on ``server``'s model (``openai/fake`` unless ``model`` is given); ``options`` go to
    ``Robot``."""
    options.setdefault("model", "openai/fake")
    return Robot(name, system_prompt="You help.", api_base=server.base_url + "/v1",
                 config=loopback_config(provider=provider), **options)


__all__ = ["get_weather", "loopback_config", "loopback_robot"]
