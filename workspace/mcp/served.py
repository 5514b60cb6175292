"""What ``robotlab mcp serve`` offers besides tools, as plain data (no SDK): prompts and resources.

:mod:`workspace.surface` builds them (the robots' templates as prompts, finished threads and their
results as resources); :mod:`workspace.mcp.server` speaks MCP for them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class ServedPrompt:
    """A prompt: ``render(arguments)`` gives its messages as ``[(role, text), ...]``."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...]
    render: Callable[[Mapping[str, str]], list[tuple[str, str]]]
    title: str | None = None


@dataclass(frozen=True)
class ServedResource:
    uri: str
    name: str
    description: str = ""
    mime_type: str = "text/markdown"
    title: str | None = None


@dataclass
class ResourceSource:
    """Lists resources and reads one (``read(uri) -> text``; KeyError when unknown)."""

    listing: Callable[[], list[ServedResource]]
    read: Callable[[str], Awaitable[str] | str]
    templates: list[tuple[str, str, str]] = field(default_factory=list)  # (uriTemplate, name, description)
