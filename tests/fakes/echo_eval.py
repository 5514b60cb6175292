"""An eval file of an echoing robot on the loopback model server, whose answers stall while a test wants its cases
to be running (for the tests that cancel an eval)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply

#: The cases: each says its name and expects it back.
CASES = ("alpha", "beta", "gamma", "delta")


class EchoModel:
    """The loopback server's answers: "I say NAME" to "say NAME", after 30 s while ``stalling`` is set (a client
    that hangs up ends the wait)."""

    def __init__(self) -> None:
        self.stalling = threading.Event()
        self.stalling.set()

    def __call__(self, body: dict[str, Any]) -> Reply:
        said = str(body["messages"][-1]["content"])
        return Reply.say(f"I {said}", stall_before=30 if self.stalling.is_set() else 0.0)


def echo_eval_file(folder: Path, server: FakeLLMServer) -> Path:
    """``folder/echo.yaml``: the robot ``echo.md`` on ``server``'s model, one case per name of :data:`CASES`."""
    (folder / "echo.md").write_text("---\nname: echo\ndescription: Echoes.\ntools: none\n---\nYou echo.\n",
                                    encoding="utf-8")
    cases = "".join(f"  - name: {name}\n    message: \"say {name}\"\n    expect:\n      - contains: {name}\n"
                    for name in CASES)
    path = folder / "echo.yaml"
    path.write_text(f"robot: echo.md\nmodels: [{{model: openai/fake, api_base: '{server.base_url}/v1'}}]\n"
                    f"cases:\n{cases}", encoding="utf-8")
    return path


__all__ = ["CASES", "EchoModel", "echo_eval_file"]
