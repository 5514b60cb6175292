"""A comparison in the window: its candidates started and answered, and what its columns show and when they paint
(the layout and repaint a tick posted, delivered at once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer
from tests.fakes.app_window import wait_until


def compare_config(server: FakeLLMServer, model: str, folder: Path | None = None) -> Any:
    """The configuration of a window comparing the loopback server's models: ``model`` the robot's own, four
    requests at a time (the candidates stream at once), one retry."""
    from workspace.config import load_config

    return load_config(folder, env={}, overrides={"llm": {"model": f"openai/{model}", "max_retries": 1,
                                                          "api_base": server.base_url + "/v1",
                                                          "max_concurrent_requests": 4}})


async def compared(root: Any, server: FakeLLMServer, text: str = "Edit app.py") -> Any:
    """Start a comparison of model-a (the robot's own) with model-b and model-c, and send ``text``."""
    from ui.compare.session import CandidateSpec

    window = root.window
    base = server.base_url + "/v1"
    assert window.comparisons.start([CandidateSpec("file-helper", model="openai/model-b", api_base=base),
                                     CandidateSpec("file-helper", model="openai/model-c", api_base=base)])
    window.composer.set_text(text)
    window.composer.submit()  # the one message box: to every candidate
    await wait_until(lambda: not window.comparisons.running and window.comparisons.stats is not None
                     and all(c.status == "finished" for c in window.comparisons.stats.columns),
                     timeout=120, what="the three candidates' answers")
    return window.comparisons


def shown(chat: Any) -> str:
    """A column's answer text as it shows it."""
    return "".join(w.text for w in chat.items() if hasattr(w, "append"))


def settle() -> None:
    """The layout requests and the repaint the last tick posted, delivered now (a layout posts more; not the
    other posted events: the loop's own callbacks run from there, not inside a test's step)."""
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.PolishRequest)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.UpdateRequest)
