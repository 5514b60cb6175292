"""MCP resources and prompts, against real servers: server-everything over stdio (resources,
templates, subscriptions that the server updates every 5 s), our Python server (images, JSON, a 20 MB text,
a template, a prompt with an assistant message) and a server without the resources capability."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.fakes.mcp_servers import BAD_SERVER, EVERYTHING, require_servers
from workspace import events as ev
from workspace.errors import MCPError
from workspace.mcp.manager import MCPManager
from workspace.mcp.resources import (
    TemplateArgumentsMissing,
    expand_template,
    prompt_text,
    template_variables,
)
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]
DYNAMIC = Path(__file__).resolve().parent / "fakes" / "mcp_dynamic_server.py"
SERVERS: dict[str, Any] = {
    "everything": {"command": str(EVERYTHING)},
    "dynamic": {"command": sys.executable, "args": [str(DYNAMIC)], "env": {"BIG_RESOURCE_MB": "20"}},
    "plain": {"command": sys.executable, "args": [str(BAD_SERVER), "ok"]},
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MCPManager]:
    require_servers()
    folder = tmp_path_factory.mktemp("project")
    mgr = MCPManager({"mcpServers": SERVERS}, folder=folder, state_file=folder / "mcp-tools.json")
    yield mgr
    await mgr.aclose()


# -- URI templates ----------------------------------------------------------------------------------------
async def test_templates_expand_simply_and_name_what_is_missing() -> None:
    assert template_variables("demo://x/{resourceId}") == ["resourceId"]
    assert template_variables("note://{topic}/{id}{?q,page}") == ["topic", "id", "q", "page"]
    assert expand_template("demo://x/{resourceId}", {"resourceId": 3}) == "demo://x/3"
    assert expand_template("note://{topic}/{id}", {"topic": "a b/c", "id": "7"}) == "note://a%20b%2Fc/7"
    assert expand_template("file://{+path}", {"path": "/tmp/a b"}) == "file:///tmp/a%20b"
    assert expand_template("s://x{?q,page}", {"q": "owl", "page": 2}) == "s://x?q=owl&page=2"
    with pytest.raises(TemplateArgumentsMissing) as caught:
        expand_template("note://{topic}/{id}", {"topic": "owls", "id": ""})
    assert caught.value.missing == ["id"]
    assert "note://{topic}/{id} needs 1 more argument: id" in str(caught.value)
    assert isinstance(caught.value, MCPError)


async def test_prompt_text_keeps_every_message_and_labels_a_mixed_exchange() -> None:
    only_user = {"messages": [{"role": "user", "content": {"type": "text", "text": "a"}},
                              {"role": "user", "content": {"type": "text", "text": "b"}}]}
    assert prompt_text(only_user) == "a\n\nb"
    mixed = {"messages": [{"role": "user", "content": {"type": "text", "text": "Q"}},
                          {"role": "assistant", "content": {"type": "text", "text": "A"}}]}
    assert prompt_text(mixed) == "User: Q\n\nAssistant: A"
    assert prompt_text({"messages": []}) == ""


# -- server-everything --------------------------------------------------------------------------------------
async def test_everything_lists_reads_and_fills_templates(manager: MCPManager) -> None:
    resources = await manager.list_resources("everything")
    docs = [r for r in resources if r["uri"].startswith("demo://resource/static/document/")]
    assert docs and all(r.get("mimeType") for r in docs)
    markdown = next(r for r in docs if r["mimeType"] == "text/markdown")
    content = await manager.read_resource_content("everything", markdown["uri"])
    assert content.is_text and content.mime_type == "text/markdown" and content.size > 100
    assert content.name == markdown["name"] and content.uri == markdown["uri"]
    templates = await manager.list_resource_templates("everything")
    by_name = {t["name"]: t["uriTemplate"] for t in templates}
    text_template = by_name["Dynamic Text Resource"]
    assert template_variables(text_template) == ["resourceId"]
    filled = await manager.read_template("everything", text_template, {"resourceId": "4"})
    assert filled.uri.endswith("/text/4") and "Resource 4" in (filled.text or "")
    blob = await manager.read_template("everything", by_name["Dynamic Blob Resource"], {"resourceId": "2"})
    assert blob.text is None and blob.data is not None and b"Resource 2" in blob.data
    with pytest.raises(TemplateArgumentsMissing, match="needs 1 more argument: resourceId"):
        await manager.read_template("everything", text_template, {})


async def test_an_unknown_uri_says_so_and_names_the_fix(manager: MCPManager) -> None:
    with pytest.raises(MCPError) as caught:
        await manager.read_resource_content("everything", "demo://nope")
    text = str(caught.value)
    assert "could not read the resource 'demo://nope'" in text and "not found" in text
    assert "Resources tab" in text and "code -" not in text


async def test_subscriptions_mark_a_changed_resource_until_it_is_read(manager: MCPManager) -> None:
    uri = (await manager.list_resources("everything"))[0]["uri"]
    seen: list[Any] = []
    remove = manager.add_listener(lambda status: seen.append(status) if status.name == "everything" else None)
    try:
        await manager.subscribe_resource("everything", uri)
        assert manager.status("everything").subscriptions == ((uri, None),)
        # The server sends updates for subscribed resources once at once, then every 5 s, while this is on.
        await manager.call_tool("everything", "toggle-subscriber-updates", {})
        try:
            for _ in range(200):
                if manager.status("everything").subscriptions[0][1] is not None:
                    break
                await asyncio.sleep(0.05)
        finally:
            await manager.call_tool("everything", "toggle-subscriber-updates", {})
        (got_uri, changed_at), = manager.status("everything").subscriptions
        assert got_uri == uri and changed_at is not None
        assert any(s.subscriptions and s.subscriptions[0][1] for s in seen)  # listeners were told
        await manager.read_resource_content("everything", uri)
        assert manager.status("everything").subscriptions == ((uri, None),)  # read: no longer marked
        await manager.subscribe_resource("everything", uri, on=False)
        assert manager.status("everything").subscriptions == ()
    finally:
        remove()


# -- our Python server: images, JSON, 20 MB -----------------------------------------------------------------
async def test_images_json_and_a_big_text_keep_their_type_and_everything(manager: MCPManager) -> None:
    image = await manager.read_resource_content("dynamic", "image://dot.png")
    assert image.is_image and image.mime_type == "image/png" and image.data is not None
    assert image.data.startswith(b"\x89PNG")
    data = await manager.read_resource_content("dynamic", "json://data")
    assert data.is_json and '"robotlab"' in (data.text or "")
    big = await manager.read_resource_content("dynamic", "big://text")
    assert big.size == 20 * 1024 * 1024  # whole, for people (the preview cuts, the model gets a part)
    note = await manager.read_template("dynamic", "note://{topic}/{id}", {"topic": "owls", "id": "1"})
    assert note.text == "note 1 about owls"


async def test_a_server_without_resources(manager: MCPManager) -> None:
    assert await manager.list_resources("plain") == []
    assert await manager.list_resource_templates("plain") == []
    with pytest.raises(MCPError, match="'plain' offers no resources"):
        await manager.read_resource_content("plain", "file:///x")
    with pytest.raises(MCPError, match="does not offer resource subscriptions"):
        await manager.subscribe_resource("plain", "file:///x")


async def test_a_prompt_with_an_assistant_message_becomes_one_labelled_message(manager: MCPManager) -> None:
    result = await manager.get_prompt("dynamic", "chat", {"topic": "owls"})
    text = prompt_text(result)
    assert text.startswith("User: Tell me about owls.") and "\n\nAssistant: owls is a big subject" in text
    with pytest.raises(MCPError, match="needs 1 more argument: topic"):
        await manager.get_prompt("dynamic", "chat", {})


# -- the robot's tools ----------------------------------------------------------------------------------------
async def test_a_robot_reads_resources_itself_when_its_file_allows_it(manager: MCPManager, tmp_path: Path) -> None:
    provider = ScriptedProvider()
    provider.enqueue(
        ToolCall("list_mcp_resources", {"server": "dynamic"}, id="l1"),
        ToolCall("read_mcp_resource", {"server": "dynamic", "uri": "big://text"}, id="r1"),
        ToolCall("read_mcp_resource", {"server": "dynamic", "uri": "nope://x"}, id="r2"),
        ToolCall("read_mcp_resource", {"server": "everything", "uri": "demo://x"}, id="r3"),
        "Read it.",
    )
    robot_file = tmp_path / "reader.md"
    robot_file.write_text("---\nmcp: [dynamic]\nmcp_resources: true\n---\nYou read things.\n", encoding="utf-8")
    robot = Robot("reader", template=robot_file, provider=provider, mcp_manager=manager)
    assert robot.mcp_resources
    events = [e async for e in robot.stream("read the big one")]
    offered = provider.history[0].tool_names
    assert "list_mcp_resources" in offered and "read_mcp_resource" in offered
    done = {e.id: e for e in events if isinstance(e, ev.ToolResult | ev.ToolError)}
    listed = done["l1"]
    assert isinstance(listed, ev.ToolResult) and "dynamic big://text" in str(listed.payload)
    assert "note://{topic}/{id}" in str(listed.payload)
    read = done["r1"]
    assert isinstance(read, ev.ToolResult)
    model_text = str(read.payload)
    assert "cut: the resource big://text has 20,971,520 characters" in model_text and len(model_text) < 200_000
    assert isinstance(read.raw, dict) and read.raw["truncated"] is True and read.raw["size"] == 20 * 1024 * 1024
    assert len(read.raw["contents"][0]["text"]) == 20 * 1024 * 1024  # the whole of it, for the inspector
    assert isinstance(done["r2"], ev.ToolError) and "could not read the resource 'nope://x'" in str(done["r2"].error)
    assert isinstance(done["r3"], ev.ToolError) and "is not one of ['dynamic']" in str(done["r3"].error)
    assert isinstance(events[-1], ev.RunFinished)


async def test_no_resource_tools_without_the_setting_or_without_servers(manager: MCPManager) -> None:
    provider = ScriptedProvider()
    provider.enqueue("hi", "hi")
    plain = Robot("plain", system_prompt="x", provider=provider, mcp_manager=manager, mcp=["plain"])
    [_ async for _ in plain.stream("hello")]
    assert "read_mcp_resource" not in provider.history[0].tool_names
    none = Robot("none", system_prompt="x", provider=provider, mcp_manager=manager, mcp="none", mcp_resources=True)
    [_ async for _ in none.stream("hello")]
    assert "read_mcp_resource" not in provider.history[1].tool_names


async def test_the_front_matter_setting_is_checked(tmp_path: Path) -> None:
    from workspace.errors import ConfigurationError
    from workspace.templates import Template

    bad = tmp_path / "bad.md"
    bad.write_text("---\nmcp_resources: yes please\n---\nx\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="mcp_resources"):
        Template.load(bad)
