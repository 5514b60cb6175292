"""The composer's model picker and Settings' list of models, on the loopback server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer

from tests.fakes.app_window import running_app, turns_made, wait_until
from tests.ui.chat_dump import dump_state
from workspace import events as ev
from workspace.config import load_config
from workspace.providers import listing


def _menu_texts(picker: Any) -> list[str]:
    out: list[str] = []
    for action in picker.menu_.actions():
        out.append(action.text())
        if action.menu() is not None:
            out += [a.text() for a in action.menu().actions()]
    return out


def _chats(server: FakeLLMServer) -> list[Any]:
    """The chat requests (the list of models is asked with GETs, whose body is None)."""
    return [r for r in server.requests if isinstance(r, dict)]


def _order(window: Any) -> list[str]:
    """The chat column top to bottom: messages, footers and the "Model changed" marker."""
    from ui.chat.view.messages import NoticeLine, RunFooter, UserMessage

    out = []
    for widget in window.chat.items():
        if isinstance(widget, UserMessage):
            out.append("user")
        elif isinstance(widget, RunFooter):
            out.append("footer")
        elif isinstance(widget, NoticeLine) and widget.label.text().startswith("Model changed"):
            out.append("model changed")
    return out


def _pick(picker: Any, text: str) -> None:
    action = next(a for a in picker.menu_.actions() if a.text().split("  (")[0] == text)
    action.trigger()


async def test_the_picker_lists_switches_and_the_chat_shows_it(db_path: Path) -> None:
    listing.clear_cache()
    with FakeLLMServer(models=["fake", "other"]) as server:
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1",
                                                        "max_retries": 1}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            window, controller = root.window, root.controller
            picker = window.models.picker
            assert picker.isVisible() and picker.label() == "fake · default"
            window.models.load()
            await wait_until(lambda: picker.listing is not None and not picker.loading, what="the list")
            texts = _menu_texts(picker)
            assert texts[0] == "fake · robot default"
            assert "openai/other" in texts and f"Local server at {server.base_url}/v1" in texts

            window.runs.send("first")
            await wait_until(lambda: controller.idle and len(_chats(server)) == 1, timeout=30, what="the first run")
            _pick(picker, "openai/other")
            assert picker.label() == "other"
            shown = dump_state(window.chat.presenter.state)
            assert "notice [info] 'Model changed to openai/other'" in shown
            assert _order(window) == ["user", "footer", "model changed"]  # under the answer, not inside it
            window.runs.send("second")
            await wait_until(lambda: controller.idle and len(_chats(server)) == 2, timeout=30, what="the second run")
            assert [r["model"] for r in _chats(server)] == ["fake", "other"]
            assert window.model_label.text() == "openai/other"

            live = dump_state(window.chat.presenter.state)
            assert _order(window) == ["user", "footer", "model changed", "user", "footer"]  # between the answers
            thread_id = controller.thread_id
            window.threads.new()
            await asyncio.sleep(0.05)
            assert picker.label() == "fake · default"  # a new thread: the robot's own model
            window.threads.open(thread_id)
            await turns_made(window.chat)  # (a thread shown makes its turns' widgets in the steps after it)
            assert dump_state(window.chat.presenter.state) == live  # reopened: the switch where it was
            assert _order(window) == ["user", "footer", "model changed", "user", "footer"]
            assert picker.label() == "other"

            _pick(picker, "fake · robot default")  # back to the robot's own
            assert picker.label() == "fake · default"
            assert "Model changed to openai/fake (robot default)" in dump_state(window.chat.presenter.state)


async def test_a_model_chosen_before_the_first_message_is_the_new_threads(db_path: Path) -> None:
    listing.clear_cache()
    with FakeLLMServer(models=["fake", "other"]) as server:
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1",
                                                        "max_retries": 1}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            window, controller = root.window, root.controller
            window.models.choose("openai/other", server.base_url + "/v1")
            assert window.models.picker.label() == "other"
            assert controller.send("hello")
            await wait_until(lambda: controller.idle, timeout=30, what="the run")
            assert server.requests[-1]["model"] == "other"
            assert controller.session.chosen_model == "openai/other"
            assert not any(isinstance(e, ev.ModelChanged) for e in controller.session.store.path_events(
                controller.thread_id))  # nothing to show: the thread began with it


async def test_settings_offers_the_listed_models_and_says_what_failed(db_path: Path) -> None:
    listing.clear_cache()
    with FakeLLMServer(models=["llama3.1", "qwen2.5:7b"], ollama=True) as server:
        config = load_config(env={}, overrides={"llm": {"model": "ollama_chat/llama3.1", "api_base": server.base_url}})
        async with running_app(db_path=db_path, config=config, theme_name="light") as root:
            window = root.window
            window.settings_flow.open_settings()
            dialog = window.settings_flow.dialog
            await wait_until(lambda: dialog.refresh_models.isEnabled() and "available" in dialog.models_note.text(),
                             what="the models")
            items = [dialog.model.itemData(i) for i in range(dialog.model.count())]
            assert "ollama_chat/qwen2.5:7b" in items
            assert "2 models available (Ollama at" in dialog.models_note.text()
            base = server.base_url
            server.stop()
            dialog.load_models(refresh=True)
            await wait_until(lambda: dialog.refresh_models.isEnabled() and "no server" in dialog.models_note.text(),
                             what="the failure")
            assert f"no server at {base}: start Ollama" in dialog.models_note.text()
            dialog.reject()
