"""Attachments: files, images, PDFs and MCP resources sent with a message.

End to end on the loopback OpenAI-compatible server (tests/fakes/llm_server.py records every request):
through the lean provider and through litellm, a thread stored in a real SQLite file, an MCP resource
read from a real server.
"""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.images import png
from fakes.llm_server import FakeLLMServer

from workspace import events as ev
from workspace.attachments import MAX_TEXT_BYTES, Attachment, AttachmentError, user_content
from workspace.config import load_config
from workspace.context.tokens import IMAGE_TOKENS, TokenCounter
from workspace.errors import SandboxError
from workspace.messages import TextMessage
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot
from workspace.session import Workspace

KINDS = ["lean", "litellm"]
kinds = pytest.mark.parametrize("kind", KINDS)
DYNAMIC = Path(__file__).resolve().parent / "fakes" / "mcp_dynamic_server.py"


def pdf(text: str) -> bytes:
    """A one-page PDF whose page shows ``text``."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def config(kind: str) -> Any:
    return load_config(env={}, overrides={"llm": {"provider": "litellm" if kind == "litellm" else "auto",
                                                  "max_retries": 1}})


def robot(kind: str, server: FakeLLMServer, *, model: str = "openai/fake", **options: Any) -> Robot:
    return Robot("r", system_prompt="You help.", model=model, api_base=server.base_url + "/v1", tools="none",
                 mcp="none", config=config(kind), **options)


def provider(kind: str, server: FakeLLMServer, model: str = "openai/fake") -> Any:
    cls = LiteLLMProvider if kind == "litellm" else OpenAICompatibleProvider
    return cls(model, api_base=server.base_url + "/v1", api_key="sk-test", max_retries=0)


async def events_of(run: Any) -> list[ev.Event]:
    async def go() -> list[ev.Event]:
        return [e async for e in run]
    return await asyncio.wait_for(go(), timeout=60)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\nThe answer is 42.\n", encoding="utf-8")
    (root / "cat.png").write_bytes(png())
    return root


# -- the model --------------------------------------------------------------------------------------------
def test_a_file_an_image_and_a_pdf_become_attachments(folder: Path) -> None:
    text = Attachment.from_path("notes.md", folder=folder)
    assert (text.kind, text.name, text.mime, text.path) == ("file", "notes.md", "text/markdown", "notes.md")
    assert text.text == "# Notes\nThe answer is 42.\n" and text.size == len(text.text.encode())
    image = Attachment.from_path(folder / "cat.png", folder=folder)
    assert (image.kind, image.mime, image.is_image, image.data) == ("image", "image/png", True, png())
    (folder / "paper.pdf").write_bytes(pdf("Attention is all you need"))
    paper = Attachment.from_path("paper.pdf", folder=folder)
    assert paper.kind == "file" and paper.mime == "application/pdf" and "Attention is all you need" in (paper.text or "")
    assert paper.note == "text extracted from a 1-page PDF"
    parts = user_content("What is in these?", [text, image])
    assert isinstance(parts, list)
    assert parts[0] == {"type": "text", "text": "What is in these?"}
    assert parts[1]["text"].startswith("Attached file notes.md (text/markdown, 26 B):\n\n# Notes")
    assert parts[2] == {"type": "text", "text": "Attached image cat.png (image/png, 75 B):"}
    assert parts[3]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png()).decode()
    assert Attachment.from_ref(image.ref(), image.content()) == image


def test_files_outside_the_folder_too_large_or_binary_are_refused_with_the_fix(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("nope")
    with pytest.raises(SandboxError, match="outside the opened folder|climbs out"):
        Attachment.from_path("../secret.txt", folder=folder)
    with pytest.raises(SandboxError, match="outside the opened folder"):
        Attachment.from_path(tmp_path / "secret.txt", folder=folder)
    (folder / "big.log").write_text("x" * (MAX_TEXT_BYTES + 1))
    with pytest.raises(AttachmentError, match=r"big.log is 100.0 KB of text; attachments are sent whole up to "
                                              r"100.0 KB .*Attach a smaller file"):
        Attachment.from_path("big.log", folder=folder)
    assert Attachment.from_path("big.log", folder=folder, max_text_bytes=None).size == MAX_TEXT_BYTES + 1
    (folder / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(AttachmentError, match="blob.bin is not a text file .* attachments are text files"):
        Attachment.from_path("blob.bin", folder=folder)
    (folder / "pic.bmp").write_bytes(b"BM" + b"\x00" * 60)
    with pytest.raises(AttachmentError, match="images are sent as PNG, JPEG, GIF or WebP"):
        Attachment.from_path("pic.bmp", folder=folder)
    with pytest.raises(AttachmentError, match="no such file"):
        Attachment.from_path("missing.txt", folder=folder)


def test_images_are_counted_with_a_fixed_estimate_not_their_base64() -> None:
    image = Attachment.from_bytes(png(64, 64), name="big.png")
    counter = TokenCounter()
    plain = counter.message(TextMessage(role="user", content="Look"))
    with_image = counter.message(TextMessage(role="user", content=user_content("Look", [image])))
    assert IMAGE_TOKENS < with_image - plain < IMAGE_TOKENS + 40


# -- the request, through both providers ------------------------------------------------------------------
@kinds
async def test_an_image_and_a_text_file_reach_the_request_as_content_parts(server: FakeLLMServer, kind: str,
                                                                        folder: Path) -> None:
    r = robot(kind, server)
    events = await events_of(r.stream("Describe them", attachments=["notes.md", "cat.png"], folder=folder))
    assert isinstance(events[-1], ev.RunFinished), events[-1]
    started = events[0]
    assert isinstance(started, ev.RunStarted)
    assert [(a["kind"], a["name"], a["mime"]) for a in started.attachments] == [
        ("file", "notes.md", "text/markdown"), ("image", "cat.png", "image/png")]
    notes = [e for e in events if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert notes and "is not known (its server does not say): cat.png is sent as an image" in notes[0].detail
    content = server.requests[0]["messages"][-1]["content"]
    assert [p["type"] for p in content] == ["text", "text", "text", "image_url"]
    assert content[0]["text"] == "Describe them"
    assert "Attached file notes.md" in content[1]["text"] and "The answer is 42." in content[1]["text"]
    assert content[3]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png()).decode()


async def test_a_model_that_cannot_see_images_is_refused_before_anything_is_sent(server: FakeLLMServer,
                                                                               folder: Path) -> None:
    r = robot("litellm", server, model="openai/gpt-3.5-turbo")
    events = await events_of(r.stream("What is this?", attachments=[folder / "cat.png"]))
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed) and failed.error_type == "AttachmentError"
    assert failed.error.startswith("openai/gpt-3.5-turbo does not take images, so cat.png was not sent. Remove the "
                                   "image, or choose a model that supports vision")
    assert server.requests == []
    # A text file goes to the same model.
    events = await events_of(r.stream("And this?", attachments=[folder / "notes.md"]))
    assert isinstance(events[-1], ev.RunFinished) and len(server.requests) == 1


async def test_a_known_vision_model_gets_the_image_without_a_note(server: FakeLLMServer, folder: Path) -> None:
    r = robot("litellm", server, model="openai/gpt-4o-mini")
    events = await events_of(r.stream("What is this?", attachments=[folder / "cat.png"]))
    assert isinstance(events[-1], ev.RunFinished)
    assert not [e for e in events if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert server.requests[0]["messages"][-1]["content"][-1]["type"] == "image_url"


# -- threads ----------------------------------------------------------------------------------------------
@kinds
async def test_a_thread_stores_attachments_once_and_sends_them_again(server: FakeLLMServer, kind: str,
                                                                      folder: Path, tmp_path: Path) -> None:
    ws = Workspace(db_path=tmp_path / "w.db", folder=folder, provider=provider(kind, server))
    try:
        session = ws.new_thread("assistant")
        await asyncio.wait_for(session.send("Look", attachments=["cat.png", "notes.md"]).wait(), timeout=60)
        await asyncio.wait_for(session.send("Again", attachments=["cat.png"]).wait(), timeout=60)
        rows = list(ws.store.iter_rows("SELECT hash, size FROM blobs"))
        assert sorted(r["size"] for r in rows) == sorted([len(png()), 26])  # the image once, for two messages
        events = [e for _, e in ws.store.thread_events(session.thread_id)]
        assert all("base64" not in ev.to_json(e) for e in events)
        # The second request carries the first message's attachments again (the conversation), then its own.
        second = server.requests[1]["messages"]
        user = [m for m in second if m["role"] == "user"]
        assert [p["type"] for p in user[0]["content"]] == ["text", "text", "image_url", "text"]
        assert user[1]["content"][-1]["type"] == "image_url"
        # A thread opened again: the same attachments, the content read back from the blobs.
        reopened = ws.open_thread(session.thread_id)
        turns = reopened.transcript()
        assert [a.name for a in reopened.attachments(turns[0].id)] == ["cat.png", "notes.md"]
        assert reopened.attachments(turns[0].id)[0].data == png()
        history = reopened.history()
        assert history[0].content[2]["image_url"]["url"].endswith(base64.b64encode(png()).decode())
        # Regenerate sends the same attachments.
        await asyncio.wait_for(reopened.regenerate(turns[1].id).wait(), timeout=60)
        assert server.requests[-1]["messages"][-1]["content"][-1]["type"] == "image_url"
    finally:
        await ws.aclose()


async def test_edit_and_resend_sends_the_attachments_given_or_the_turns_own(server: FakeLLMServer, folder: Path,
                                                                            tmp_path: Path) -> None:
    ws = Workspace(db_path=tmp_path / "w.db", folder=folder, provider=provider("lean", server))
    try:
        session = ws.new_thread("assistant")
        await asyncio.wait_for(session.send("Look", attachments=["cat.png", "notes.md"]).wait(), timeout=60)
        turn = session.transcript()[0].id
        kept = [a for a in session.attachments(turn) if a.name == "notes.md"]

        def last_user() -> Any:
            return server.requests[-1]["messages"][-1]["content"]

        await asyncio.wait_for(session.edit_and_resend(turn, "Only the notes", attachments=kept).wait(), timeout=60)
        assert [p["type"] for p in last_user()] == ["text", "text"] and "Attached file notes.md" in last_user()[1]["text"]
        await asyncio.wait_for(session.edit_and_resend(turn, "Nothing", attachments=[]).wait(), timeout=60)
        assert last_user() == "Nothing"
        await asyncio.wait_for(session.edit_and_resend(turn, "A path", attachments=["notes.md", *kept]).wait(),
                               timeout=60)
        assert [p["type"] for p in last_user()] == ["text", "text"]  # the same file once
        await asyncio.wait_for(session.edit_and_resend(turn, "As it was").wait(), timeout=60)
        assert [p["type"] for p in last_user()] == ["text", "text", "image_url", "text"]
        turns = session.transcript()
        assert turns[0].sibling_count == 5
        assert [[a.name for a in session.attachments(t.id)] for t in session.store.siblings(turn)] == [
            ["cat.png", "notes.md"], ["notes.md"], [], ["notes.md"], ["cat.png", "notes.md"]]
    finally:
        await ws.aclose()


async def test_a_bad_attachment_sends_nothing_and_records_nothing(server: FakeLLMServer, folder: Path,
                                                                  tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    ws = Workspace(db_path=tmp_path / "w.db", folder=folder, provider=provider("lean", server))
    try:
        session = ws.new_thread("assistant")
        with pytest.raises(SandboxError, match="outside the opened folder"):
            session.send("Read it", attachments=[str(tmp_path / "outside.txt")])
        assert session.transcript() == [] and server.requests == []
    finally:
        await ws.aclose()


async def test_a_refused_image_is_not_sent_again_with_the_next_message(server: FakeLLMServer, folder: Path,
                                                                     tmp_path: Path) -> None:
    ws = Workspace(db_path=tmp_path / "w.db", folder=folder,
                   provider=provider("litellm", server, model="openai/gpt-3.5-turbo"))
    try:
        session = ws.new_thread("assistant")
        final = await asyncio.wait_for(session.send("See", attachments=["cat.png"]).wait(), timeout=60)
        assert isinstance(final, ev.RunFailed) and "does not take images" in final.error
        final = await asyncio.wait_for(session.send("Just text then").wait(), timeout=60)
        assert isinstance(final, ev.RunFinished)
        sent = server.requests[0]["messages"]
        assert [m["content"] for m in sent if m["role"] == "user"] == ["See", "Just text then"]
    finally:
        await ws.aclose()


# -- limits and vision from the configuration ------------------------------------------------------------
def test_the_limits_and_vision_are_configuration_keys_checked_with_the_file_line_and_fix(tmp_path: Path) -> None:
    from workspace.attachments import AttachmentLimits, vision_setting
    from workspace.errors import ConfigurationError

    assert AttachmentLimits.from_config(None) == AttachmentLimits(MAX_TEXT_BYTES, 20 * 1024 * 1024)
    assert AttachmentLimits.from_config(load_config(env={})) == AttachmentLimits()
    user = tmp_path / "config.yaml"
    user.write_text("attachments:\n  max_text_bytes: 2048\n  max_image_bytes: 4096\nllm:\n  vision: {llava: true}\n")
    cfg = load_config(env={}, user_file=user)
    assert AttachmentLimits.from_config(cfg).options() == {"max_text_bytes": 2048, "max_image_bytes": 4096}
    assert cfg.get("llm.vision") == {"llava": True}
    user.write_text("attachments:\n  max_text_bytes: 100KB\n  max_image_bytes: 10\nllm:\n  vision: sometimes\n")
    with pytest.raises(ConfigurationError) as bad:
        load_config(env={}, user_file=user)
    assert f"{user}:2: 'attachments.max_text_bytes' = '100KB': must be a whole number of bytes, at least 1024 " \
           "(102400 is 100 KB" in str(bad.value)
    assert f"{user}:3: 'attachments.max_image_bytes' = 10: must be a whole number of bytes" in str(bad.value)
    assert f"{user}:5: 'llm.vision' = 'sometimes': must be true or false (for every model), or model ids mapped " \
           "to true or false" in str(bad.value)
    with pytest.raises(ConfigurationError, match="ROBOT_LAB_LLM__VISION: 'llm.vision' = 'often'"):
        load_config(env={"ROBOT_LAB_LLM__VISION": "often"}, user_file=tmp_path / "none.yaml")
    with pytest.raises(ConfigurationError, match=r"unknown key 'attachments.max_text'.*did you mean 'max_text_bytes'"):
        load_config(env={}, overrides={"attachments": {"max_text": 5000}})
    # A mapping names models with or without their provider's prefix; a boolean is every model's.
    assert vision_setting(True, "openai/x") is True and vision_setting(False, None) is False
    assert vision_setting({"llava": True, "openai/gpt-4o": False}, "ollama_chat/llava") is True
    assert vision_setting({"llava": True, "openai/gpt-4o": False}, "openai/gpt-4o") is False
    assert vision_setting({"llava": True}, "other") is None and vision_setting(None, "x") is None


async def test_a_thread_a_robot_and_their_files_honour_the_configured_limits(server: FakeLLMServer, folder: Path,
                                                                             tmp_path: Path) -> None:
    (folder / "log.txt").write_text("line of the log\n" * 125)  # 2,000 bytes
    (folder / "big.png").write_bytes(png() + b"\x00" * 2000)  # a PNG of 2,075 bytes
    small = load_config(env={}, overrides={"attachments": {"max_text_bytes": 1024, "max_image_bytes": 1024}})
    ws = Workspace(db_path=tmp_path / "w.db", folder=folder, provider=provider("lean", server), config=small)
    try:
        session = ws.new_thread("assistant")
        with pytest.raises(AttachmentError, match=r"log.txt is 2.0 KB of text; attachments are sent whole up to 1.0 KB"
                                                  r".*raise the limit: attachments.max_text_bytes in the configuration"):
            session.send("Read it", attachments=["log.txt"])
        with pytest.raises(AttachmentError, match=r"big.png is an image of 2.0 KB; images are sent up to 1.0 KB.*"
                                                  r"attachments.max_image_bytes in the configuration"):
            session.send("See it", attachments=["big.png"])
        assert session.transcript() == [] and server.requests == []
        ws.set_config(load_config(env={}, overrides={"attachments": {"max_text_bytes": 4096}}))
        final = await asyncio.wait_for(session.send("Read it", attachments=["log.txt", "big.png"]).wait(), timeout=60)
        assert isinstance(final, ev.RunFinished)
        assert [p["type"] for p in server.requests[-1]["messages"][-1]["content"]] == ["text", "text", "text",
                                                                                       "image_url"]
    finally:
        await ws.aclose()
    # Robot.stream reads paths within its configuration's limits too: a file over the default 100 KB.
    (folder / "long.md").write_text("x" * (MAX_TEXT_BYTES + 10))
    roomy = load_config(env={}, overrides={"attachments": {"max_text_bytes": 2 * MAX_TEXT_BYTES},
                                           "llm": {"context_window": 128_000}})
    r = Robot("r", system_prompt="You help.", model="openai/fake", api_base=server.base_url + "/v1", tools="none",
              mcp="none", config=roomy)
    events = await events_of(r.stream("Summarise", attachments=["long.md"], folder=folder))
    assert isinstance(events[-1], ev.RunFinished), events[-1]
    assert len(server.requests[-1]["messages"][-1]["content"][1]["text"]) > MAX_TEXT_BYTES


@kinds
async def test_llm_vision_says_whether_a_model_takes_images(server: FakeLLMServer, kind: str, folder: Path) -> None:
    def seeing(vision: Any, model: str = "openai/fake") -> Robot:
        cfg = load_config(env={}, overrides={"llm": {"provider": "litellm" if kind == "litellm" else "auto",
                                                     "max_retries": 1, "vision": vision}})
        return Robot("r", system_prompt="You help.", model=model, api_base=server.base_url + "/v1", tools="none",
                     mcp="none", config=cfg)

    # A local server's model nobody knows about, said not to see: refused before anything is sent.
    events = await events_of(seeing(False).stream("What is this?", attachments=[folder / "cat.png"]))
    failed = events[-1]
    assert isinstance(failed, ev.RunFailed) and failed.error_type == "AttachmentError"
    assert "openai/fake does not take images, so cat.png was not sent" in failed.error
    assert "if this one does, say so in the configuration: llm.vision: true" in failed.error
    assert server.requests == []
    # Said to see (by its name without the prefix): sent, without the note that nobody knows.
    events = await events_of(seeing({"fake": True}).stream("What is this?", attachments=[folder / "cat.png"]))
    assert isinstance(events[-1], ev.RunFinished)
    assert not [e for e in events if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert server.requests[-1]["messages"][-1]["content"][-1]["type"] == "image_url"
    if kind == "litellm":  # the setting wins over litellm's model map (gpt-3.5-turbo: no vision)
        events = await events_of(seeing({"openai/gpt-3.5-turbo": True}, "openai/gpt-3.5-turbo").stream(
            "And this?", attachments=[folder / "cat.png"]))
        assert isinstance(events[-1], ev.RunFinished), events[-1]


# -- MCP resources ----------------------------------------------------------------------------------------
async def test_an_mcp_resource_is_attached_with_its_server_and_uri(server: FakeLLMServer, tmp_path: Path) -> None:
    from workspace.attachments import read_resource_attachment
    from workspace.mcp.manager import MCPManager

    manager = MCPManager({"mcpServers": {"dynamic": {"command": sys.executable, "args": [str(DYNAMIC)]}}},
                         folder=tmp_path, state_file=tmp_path / "mcp-tools.json")
    try:
        attachment = await asyncio.wait_for(read_resource_attachment(manager, "dynamic", "small://text"), timeout=60)
        assert (attachment.kind, attachment.server, attachment.uri, attachment.text) == (
            "resource", "dynamic", "small://text", "just a few words")
        assert attachment.ref()["server"] == "dynamic" and attachment.ref()["uri"] == "small://text"
        with pytest.raises(AttachmentError, match="Could not read the resource nope://x of MCP server 'dynamic'"):
            await read_resource_attachment(manager, "dynamic", "nope://x")
    finally:
        await manager.aclose()
    r = robot("lean", server)
    await events_of(r.stream("Use it", attachments=[attachment]))
    part = server.requests[0]["messages"][-1]["content"][1]["text"]
    assert part.startswith("Attached MCP resource small://text from MCP server 'dynamic' (text/plain")
    assert "just a few words" in part


# -- exports ----------------------------------------------------------------------------------------------
async def test_exports_list_the_attachments(server: FakeLLMServer, folder: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from workspace.exports import export_events_jsonl, export_markdown, export_results_json

    monkeypatch.setenv("SERVICE_API_KEY", "sk-verysecretvalue-123456")
    (folder / "config.env").write_text("TOKEN=sk-verysecretvalue-123456\n")
    ws = Workspace(db_path=tmp_path / "w.db", folder=folder, provider=provider("lean", server))
    try:
        session = ws.new_thread("assistant")
        await asyncio.wait_for(session.send("Look", attachments=["cat.png", "config.env"]).wait(), timeout=60)
        thread = session.thread_id
        md = export_markdown(ws.store, thread)
        assert "**Attached:**" in md
        assert "- cat.png (image/png, 75 B), from `cat.png`" in md
        assert f"![cat.png](data:image/png;base64,{base64.b64encode(png()).decode()})" in md
        assert "- config.env (text/plain," in md
        results = json.loads(export_results_json(ws.store, thread))
        assert [a["name"] for a in results[0]["attachments"]] == ["cat.png", "config.env"]
        jsonl = export_events_jsonl(ws.store, thread)
        assert '"attachments":[{"kind":"image","name":"cat.png"' in jsonl
        everything = md + jsonl + json.dumps(results)
        assert "sk-verysecretvalue-123456" not in everything
        # The secret never reached the database either, nor the model.
        stored = session.attachments(session.transcript()[0].id)[1]
        assert "sk-verysecretvalue-123456" not in (stored.text or "") and "<SERVICE_API_KEY>" in (stored.text or "")
    finally:
        await ws.aclose()
