"""Real (loopback) doubles of the services the workspace talks to."""

from __future__ import annotations

from .llm_server import FakeLLMServer, Reply, ToolCall

__all__ = ["FakeLLMServer", "Reply", "ToolCall"]
