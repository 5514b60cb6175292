"""↻ under a comparison's column whose candidate has a proposal waiting for review: the candidate answers again from
the folder as it is, its old proposal discarded (and the person told so), not from its own pending edit (an
``edit_file`` whose search text its first proposal had already replaced failed with "search text not found")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.candidates import EDITS
from fakes.compare_window import compared
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import wait_until

pytestmark = pytest.mark.timeout(180)  # bounds a hang: three scripted candidates on a loaded machine


def _edit_answer(body: dict[str, Any]) -> Reply:
    """Each candidate edits line 2 of app.py in place (search and replace, not a whole new file), then says so."""
    model = body["model"]
    last = body["messages"][-1]
    if last.get("role") != "tool" and "Edit" in str(last.get("content")):
        return Reply.tool("edit_file", {"path": "app.py", "search": "line 2\n", "replace": f"{model} two\n"})
    return Reply.say(f"Answer of {model}: done")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=_edit_answer, models=list(EDITS)) as srv:
        yield srv


async def test_rerun_of_a_candidate_with_a_pending_proposal_starts_from_the_folder(
        compare_app: Any, server: FakeLLMServer) -> None:
    from ui.chat.view.messages import RunFooter
    from workspace import events as ev

    comparisons = await compared(compare_app, server)
    compare = comparisons.session
    store = compare.workspace.store
    changes = compare.sessions[2].changes
    assert changes is not None and changes.pending_paths() == {"app.py": "modified"}
    first = store.get_thread(compare.thread_ids[2]).current_turn_id
    footers = [f for f in comparisons.chats[2].findChildren(RunFooter) if f.isVisibleTo(comparisons.chats[2])]
    assert len(footers) == 1
    footers[0].regen_button.click()
    await wait_until(lambda: not comparisons.running and comparisons.stats.columns[2].status == "finished",
                     timeout=60, what="model-c's new answer")
    now = store.get_thread(compare.thread_ids[2]).current_turn_id
    assert now != first
    results = [e for e in store.turn_events(now) if isinstance(e, ev.ToolResult | ev.ToolError)]
    assert results and not any(getattr(e, "is_error", False) or isinstance(e, ev.ToolError) for e in results), results
    changes = compare.sessions[2].changes
    assert changes is not None and changes.pending_paths() == {"app.py": "modified"}
    assert [fc.after for fc in changes.pending_files] == [changes.pending_files[0].before.replace(b"line 2\n",  # type: ignore[union-attr]
                                                                                               b"model-c two\n")]
    assert "discarded" in compare_app.window.toast.label.text()
    for index in (0, 1):  # the others keep their proposals
        other = compare.sessions[index].changes
        assert other is not None and other.pending_paths() == {"app.py": "modified"}
