"""A shown Tool calls inspector pane holding calls and their results (the window tests and the open-result bench)."""

from __future__ import annotations

from typing import Any


def tool_calls_pane(results: list[tuple[str, Any]], *, name: str = "read_file") -> Any:
    """A :class:`ui.inspector.panes.ToolCallsPane` (420 × 700, shown) whose model has one call of ``name`` per
    ``(call id, result payload)``, each its use and its result, in order."""
    from ui.inspector.panes import ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel
    from workspace import events as ev

    def event(cls: type[ev.Event], seq: int, **fields: Any) -> Any:
        return cls(run_id="r1", robot="assistant", seq=seq, ts=100.0 + seq, **fields)

    model = ToolCallsModel()
    pane = ToolCallsPane(model)
    pane.resize(420, 700)
    pane.show()
    for seq, (call, payload) in enumerate(results):
        model.add_event(event(ev.ToolUse, 2 * seq + 1, id=call, name=name, input={"path": "a"}))
        model.add_event(event(ev.ToolResult, 2 * seq + 2, id=call, name=name, payload=payload, duration=0.1))
    return pane
