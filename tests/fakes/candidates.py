"""Three scripted candidates of a comparison and the file they all edit: ``app.py`` of ten lines, which each
model rewrites with two hunks of its own, the first of all three on line 2 (so they overlap there); the folder it is
in, and the loopback server the window's comparison tests answer the candidates with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply

BASE = "".join(f"line {n}\n" for n in range(1, 11))
#: What each model writes into app.py: two hunks each, the first of all three on line 2.
EDITS = {
    "model-a": {2: "A two\n", 8: "A eight\n"},
    "model-b": {2: "B two\n", 9: "B nine\n"},
    "model-c": {2: "C two\n", 5: "C five\n"},
}


def edited(model: str) -> str:
    """``BASE`` as ``model`` rewrites it."""
    rows = BASE.splitlines(keepends=True)
    for number, text in EDITS[model].items():
        rows[number - 1] = text
    return "".join(rows)


def project(tmp_path: Path) -> Path:
    """The folder ``project`` under ``tmp_path`` with ``app.py`` holding :data:`BASE`."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text(BASE)
    return root


def window_answer(body: dict[str, Any]) -> Reply:
    """What each candidate answers in the window's comparison: asked to edit, it writes app.py its way; asked to run
    something, model-b runs a command (which asks for approval); then each says it is done in its own words."""
    model = body["model"]
    tools = [m for m in body["messages"] if m.get("role") == "tool"]
    if not tools and "Edit" in str(body["messages"][-1].get("content")):
        return Reply.tool("write_file", {"path": "app.py", "content": edited(model)})
    if not tools and "Run" in str(body["messages"][-1].get("content")) and model == "model-b":
        return Reply.tool("run_command", {"command": "echo compared"})  # asks for approval
    return Reply.say(f"Answer of {model}: done")


def window_server() -> FakeLLMServer:
    """The loopback server answering the three candidates with :func:`window_answer` (start it with ``with``)."""
    return FakeLLMServer(reply_fn=window_answer, models=list(EDITS))
