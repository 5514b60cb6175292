"""With a hosted provider's key in the environment and only a local server in use, the window starts no
litellm process (hundreds of MB beside the window): it starts when something needs litellm, here the
hosted provider's models listed when the model picker opens."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import close_app, wait_until
from workspace.config import load_config


async def test_start_up_with_a_key_set_and_a_local_server_starts_no_litellm_process(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from ui.app import Application
    from workspace.providers import litellm_process as apart

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000000000")
    apart.shutdown()
    with FakeLLMServer() as server:
        server.enqueue(Reply.say("Hello from the local server"))
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1"}})
        root = Application(db_path=db_path, config=config, theme_name="light", defer=True)  # as robotlab starts
        try:
            root.window.show()
            root.finish_startup(staged=True)
            await wait_until(lambda: root.loaded and gc.isenabled(), timeout=30, what="the start-up steps")
            await asyncio.wait_for(root.controller.preload_provider(), timeout=60)  # the warm-up, as after start-up
            texts: list[str] = []
            root.bridge.text_appended.connect(lambda _r, _b, text: texts.append(text))
            assert root.controller.send("hi")
            await wait_until(lambda: root.controller.idle and texts, timeout=60, what="the run to end")
            assert "".join(texts) == "Hello from the local server"
            assert apart._process is None or apart._process.started == 0, "start-up started a litellm process"

            # The picker opened: the hosted provider's models are litellm's, asked of its process (started now).
            models = root.window.models
            models.load()
            await wait_until(lambda: models.listing is not None, timeout=120, what="the list of models")
            assert any(source.kind == "hosted" and source.models for source in models.listing.sources)
            assert apart._process is not None and apart._process.started == 1
        finally:
            await close_app(root)
            apart.shutdown()
