"""The inspector in a comparison: it shows the tool calls of the candidate whose column is selected (the first at
the start; a click in another column selects it), says which candidate, and gives the thread's calls back with
"Back to one chat".

Three scripted models on the loopback server answer one message, each with a tool call of its own: model-a reads
app.py (a result), model-b reads a file that is not there (an error), model-c lists the folder (a result).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import wait_until

pytestmark = pytest.mark.timeout(180)  # bounds a hang: three scripted candidates on a loaded machine

MODELS = ["model-a", "model-b", "model-c"]
#: Each model's one tool call: (tool, arguments).
CALLS = {
    "model-a": ("read_file", {"path": "app.py"}),
    "model-b": ("read_file", {"path": "missing.txt"}),
    "model-c": ("list_files", {"path": "."}),
}


def answer(body: dict[str, Any]) -> Reply:
    model = body["model"]
    if not any(m.get("role") == "tool" for m in body["messages"]):
        name, arguments = CALLS[model]
        return Reply.tool(name, arguments)
    return Reply.say(f"{model} looked around.")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer, models=MODELS) as srv:
        yield srv


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text("print('the app of the folder')\n")
    (root / "notes.txt").write_text("notes\n")
    return root


def calls(pane: Any) -> list[tuple[str, str]]:
    """The Tool calls pane's rows: (tool, status)."""
    return [(rec.tool, rec.status) for rec in pane.model.records]


async def test_the_inspector_shows_the_selected_candidates_tool_calls_with_results_and_errors(
        compare_app: Any, server: FakeLLMServer) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from ui.compare.session import CandidateSpec

    window = compare_app.window
    comparisons = window.comparisons
    pane = window.docks.tool_pane
    await wait_until(lambda: (pane := window.docks.tool_pane) is not None and pane.isVisible(),
                     what="the Tool calls pane")
    pane = window.docks.tool_pane
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("file-helper", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    view = comparisons.view
    assert pane.source.isVisible() and pane.source.text() == "Candidate 1 of 3: openai/model-a"
    window.composer.set_text("Look around the folder.")
    window.composer.submit()
    await wait_until(lambda: not comparisons.running and comparisons.stats is not None
                     and all(c.status == "finished" for c in comparisons.stats.columns),
                     timeout=120, what="the three candidates' answers")

    # The first column is selected: model-a's call, live, with its result.
    await wait_until(lambda: calls(pane) == [("read_file", "ok")], what=f"model-a's call, not {calls(pane)}")
    assert view.headers[0].accessibleDescription() == "Shown in the inspector"
    pane.table.selectRow(0)
    await wait_until(lambda: "the app of the folder" in pane.result_view.toPlainText(),
                     what=f"model-a's result, not {pane.result_view.toPlainText()[:200]!r}")

    # A click on the second column's answer: model-b's call, failed, with its error.
    text = next(w for w in comparisons.chats[1].items() if hasattr(w, "append"))
    QTest.mouseClick(text, Qt.MouseButton.LeftButton)
    await wait_until(lambda: comparisons.selected == 1, what="the second column selected by the click")
    assert pane.source.text() == "Candidate 2 of 3: openai/model-b"
    assert view.headers[1].accessibleDescription() == "Shown in the inspector"
    assert view.headers[0].accessibleDescription() == ""
    assert calls(pane) == [("read_file", "error")] and pane.model.failed_count == 1
    assert pane.count.text() == "1 call · 1 failed"
    pane.table.selectRow(0)
    await wait_until(lambda: "Error" in pane.result_view.toPlainText()
                     and "missing.txt" in pane.result_view.toPlainText(),
                     what=f"model-b's error, not {pane.result_view.toPlainText()[:200]!r}")

    # A click on the third column's header (its name takes no keyboard): model-c's call.
    QTest.mouseClick(view.headers[2].name, Qt.MouseButton.LeftButton)
    await wait_until(lambda: comparisons.selected == 2, what="the third column selected by the click")
    assert pane.source.text() == "Candidate 3 of 3: openai/model-c"
    assert calls(pane) == [("list_files", "ok")]

    # Back to one chat: the open thread's calls (none) and no candidate named.
    threads = comparisons.session.thread_ids
    view.back.click()
    await wait_until(lambda: comparisons.view is None, what="the columns closed")
    assert not pane.source.isVisible() and calls(pane) == []

    # The third candidate's thread opened again: the columns come back, that column selected, its stored call in
    # the inspector; another thread opened: its own (no) calls, no candidate named.
    window.threads.open(threads[2])
    await wait_until(lambda: comparisons.view is not None and comparisons.selected == 2,
                     what="the columns back, the third selected")
    assert pane.source.text() == "Candidate 3 of 3: openai/model-c"
    assert comparisons.view.headers[2].accessibleDescription() == "Shown in the inspector"
    await wait_until(lambda: calls(pane) == [("list_files", "ok")], what=f"model-c's stored call, not {calls(pane)}")
    window.threads.new()
    await wait_until(lambda: comparisons.view is None, what="one chat again")
    assert not pane.source.isVisible() and calls(pane) == []


async def test_a_comparison_closed_before_its_first_message_leaves_no_empty_threads(
        compare_app: Any, server: FakeLLMServer) -> None:
    from ui.compare.session import CandidateSpec

    window = compare_app.window
    comparisons = window.comparisons
    store = compare_app.controller.workspace.store
    before = {t.id for t in store.list_threads()}
    base = server.base_url + "/v1"
    assert comparisons.start([CandidateSpec("file-helper", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    made = {s.thread_id for s in comparisons.session.sessions}
    assert len(made) == 3 and made <= {t.id for t in store.list_threads()}
    comparisons.close()  # "Back to one chat" with nothing sent
    assert {t.id for t in store.list_threads(include_deleted=True)} == before
    # "Keep this one" with nothing sent: the kept thread stays, and opens; the others go
    assert comparisons.start([CandidateSpec("file-helper", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    threads = [s.thread_id for s in comparisons.session.sessions]
    comparisons.keep(1)
    assert {t.id for t in store.list_threads(include_deleted=True)} == before | {threads[1]}
    assert compare_app.controller.thread_id == threads[1]
    # and one that was sent keeps its threads
    assert comparisons.start([CandidateSpec("file-helper", model=f"openai/{m}", api_base=base) for m in MODELS[1:]])
    kept = {s.thread_id for s in comparisons.session.sessions}
    window.composer.set_text("Look around the folder.")
    window.composer.submit()
    await wait_until(lambda: not comparisons.running and comparisons.stats is not None
                     and all(c.status == "finished" for c in comparisons.stats.columns),
                     timeout=120, what="the three candidates' answers")
    comparisons.close()
    assert kept <= {t.id for t in store.list_threads()}
