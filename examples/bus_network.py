"""Robots that talk in a network file: the writer asks the editor over the network's message bus
(``bus:`` in ``examples/networks/release-bus.yaml``), and every message shows as "writer → editor".

Runs offline: one scripted model answers for the three robots (it reads which robot is asking from the
system prompt). For real models, leave out ``provider=`` (the robots' own models) or give ``model="..."``.

    python examples/bus_network.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from workspace import events as ev
from workspace.network import load_network
from workspace.providers.testing import AgentInfo, FunctionProvider, ToolCall

NETWORK = Path(__file__).resolve().parent / "networks" / "release-bus.yaml"
DRAFT = "v2.0: startup is twice as fast; the settings window was redrawn."


def scripted(messages: list[Any], info: AgentInfo) -> Any:
    """What each robot of the network answers, by its system prompt (the writer: a message to the editor,
    then the notes with the editor's advice)."""
    system = info.system or ""
    if "You write release notes" in system:
        if messages and messages[-1].is_tool_result:
            return "v2.0: the app starts in half the time (1.2 s instead of 2.4 s), and Settings was redrawn."
        return ["I will ask the editor first.",
                ToolCall("send_message", {"to": "editor", "content": f"Please check this draft: {DRAFT}"})]
    if "You edit release notes" in system:
        return "Say how much faster with numbers: 'starts in 1.2 s instead of 2.4 s'."
    return "Version 2.0 is out: it starts in half the time, and Settings got a fresh look."


def provider() -> FunctionProvider:
    return FunctionProvider(scripted, model_id="scripted", label="Scripted example model")


async def main() -> None:
    network = load_network(NETWORK, provider=provider())
    async for event in network.stream("Release notes for v2.0: startup twice as fast"):
        if isinstance(event, ev.BusMessage):
            print(event.describe())
        elif isinstance(event, ev.TaskFinished):
            print(f"task {event.task} {event.status}")
        elif isinstance(event, ev.RunFinished) and not event.nested and event.result is not None:
            print("announcement:", event.result.results["announce"].last_text_content)


if __name__ == "__main__":
    asyncio.run(main())
