"""Layout: the window fits small screens and never grows by itself; the chat's cards shrink to its
column (long previews elide, prose wraps, buttons stay visible); toasts stay clear of the send
button; the inspector counts and shows failures consistently and sizes its columns to their text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QWidget

from tests.fakes.app_window import running_app, wait_until
from workspace import events as ev
from workspace.providers.testing import ToolCall

#: One line, no spaces: the worst case for wrapping.
LONG_VALUE = "lorem-ipsum-dolor-sit-amet-" * 74  # 1,998 characters
LONG_TITLE = ("I was charged twice for my subscription this month and I would like a refund for the second "
              "charge please, it is urgent")


def _e(cls: type[ev.Event], seq: int = 1, **fields: Any) -> ev.Event:
    return cls(run_id="r1", robot="assistant", seq=seq, **fields)


async def _settle(turns: int = 5) -> None:
    for _ in range(turns):
        await asyncio.sleep(0.02)


async def _built(root: Any) -> None:
    await wait_until(lambda: root.window.docks.tool_pane is not None and "changes" in root.window.docks,
                     what="the inspector docks")
    await _settle()


def _in_viewport(widget: QWidget, viewport: QWidget) -> tuple[int, int]:
    """The widget's left and right edges in the viewport's coordinates."""
    left = widget.mapTo(viewport, QPoint(0, 0)).x()
    return left, left + widget.width()


def _rect_in(widget: QWidget, ancestor: QWidget) -> QRect:
    return QRect(widget.mapTo(ancestor, QPoint(0, 0)), widget.size())


@pytest.fixture
async def demo_desktop(db_path: Path) -> AsyncIterator[Any]:
    """The window on the offline demo provider (it runs the built-in networks)."""
    from workspace.providers.demo import DemoProvider

    async with running_app(provider=DemoProvider(delay=0.001), db_path=db_path, theme_name="light",
                           size=(1200, 800)) as root:
        yield root


# -- the window ------------------------------------------------------------------------------------
async def test_the_window_fits_small_screens_with_the_default_docks(desktop: Any) -> None:
    await _built(desktop)
    window = desktop.window
    assert all(window.docks[key].isVisibleTo(window) for key in ("tools", "changes", "network"))
    assert window.minimumSizeHint().width() <= 960
    assert window.minimumWidth() <= 960
    window.resize(1280, 720)
    await _settle()
    assert (window.width(), window.height()) == (1280, 720)
    window.resize(900, 640)
    await _settle()
    assert window.width() == 900  # the docks narrow; the conversation keeps a usable width
    chat = window.chat.viewport()
    assert chat.width() >= 340
    for dock in window.docks.values():
        if dock.isVisible():
            assert dock.geometry().right() <= window.width()


async def test_the_window_never_grows_by_itself(demo_desktop: Any) -> None:
    root = demo_desktop
    await _built(root)
    window = root.window
    window.resize(1000, 700)
    await _settle()
    width = window.width()
    assert width == 1000
    row = window.robot_model.row_of("support-triage", "network")
    window.robot_picker.setCurrentIndex(row)
    window.runs.send(LONG_TITLE)  # the thread's title (the first message) is longer than the window is wide
    await wait_until(lambda: root.controller.idle, what="the network run to end")
    await _settle()
    assert window.network_model.run_status == "finished"
    assert window.width() == width
    assert window.minimumSizeHint().width() <= 960
    assert window.title_label.text().startswith("I was charged twice")  # the whole title, shown elided
    assert window.title_label.elided and window.title_label.toolTip().startswith("I was charged twice")
    # Opening that thread again (a fresh render) leaves the size alone too.
    thread_id = root.controller.thread_id
    window.threads.new()
    await _settle()
    window.threads.open(thread_id)
    await _settle()
    assert window.width() == width and window.minimumSizeHint().width() <= 960


@pytest.mark.parametrize("width", [300, 700])
async def test_the_trace_trees_step_column_keeps_room_for_a_steps_name(qapp_instance: Any, width: int) -> None:
    """In a dock as narrow as at 1024 x 640 the Step column kept what the figures left: 30 px, no name showed.
    Now it keeps room for a step's name (the tree scrolls sideways) and fills a wide dock."""
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane

    model = TraceModel()
    pane = TracePane(model)
    pane.resize(width, 400)
    pane.show()
    model.append_events([_e(ev.RunStarted, 1, message="hi"), _e(ev.ToolUse, 2, id="a", name="read_file", input={}),
                         _e(ev.ToolResult, 3, id="a", name="read_file", payload={"data": "x"})])
    pane.views.setCurrentWidget(pane.tree)
    await _settle()
    header, viewport = pane.tree.header(), pane.tree.viewport()
    step = header.sectionSize(0)
    name = pane.tree.fontMetrics().horizontalAdvance("model call 00")
    assert step >= name, (step, name)
    others = sum(header.sectionSize(col) for col in range(1, header.count()))
    assert step + others >= viewport.width() - 1  # no empty band on the right: the Step column takes the rest
    if width >= 700:
        assert step + others <= viewport.width() + 1  # and no sideways scroll when there is room
    pane.hide()
    pane.deleteLater()


# -- the chat column -------------------------------------------------------------------------------
async def test_cards_shrink_to_the_chat_column(desktop: Any, provider: Any) -> None:
    """A 2,000-character one-line result and its (one long word) arguments at window width 1000:
    every card fits the conversation, the approval's buttons and badge are visible."""
    await _built(desktop)
    window = desktop.window
    window.resize(1000, 700)
    await _settle()
    desktop.controller.workspace.approval.policy.set_rule("ask", tool="remember")
    provider.enqueue(["Storing it.", ToolCall("remember", {"key": "blob", "value": LONG_VALUE}, id="c1")],
                     ["Reading it back.", ToolCall("recall", {"key": "blob"}, id="c2")],
                     "Done: " + "the value is stored and read back. " * 12)
    window.runs.send("store the blob")
    await wait_until(lambda: window.chat.pending_approval() is not None, what="the approval card")
    await _settle(10)
    viewport = window.chat.viewport()
    panel = window.chat.pending_approval()
    assert panel is not None
    card = window.chat.card("c1")
    assert card is not None
    left, right = _in_viewport(card, viewport)
    assert left >= 0 and right <= viewport.width()
    for button in (panel.approve_button, panel.edit_button, panel.deny_button):
        b_left, b_right = _in_viewport(button, viewport)
        assert b_left >= 0 and b_right <= viewport.width(), button.text()
        assert not button.visibleRegion().isEmpty(), button.text()
    status = card._status_pill
    assert status is not None and status.text() == "needs approval"
    assert _in_viewport(status, viewport)[1] <= viewport.width()
    panel.approve()
    await wait_until(lambda: desktop.controller.idle, what="the run to end")
    await _settle(10)
    assert window.width() == 1000
    cards = window.chat.tool_cards()
    assert [c.call_id for c in cards] == ["c1", "c2"]
    for c in cards:
        c_left, c_right = _in_viewport(c, viewport)
        assert c_left >= 0 and c_right <= viewport.width(), c.call_id
    assert _in_viewport(window.chat.column, viewport)[1] <= viewport.width()  # nothing widens the column
    # The long preview ends in "…": the whole value is in the tooltip and the expanded view.
    recall = window.chat.card("c2")
    assert recall is not None and recall.status == "ok"
    toggle = recall._result_toggle
    assert toggle is not None and LONG_VALUE[:60] in toggle.text()
    assert toggle.shown_text.endswith("…") and len(toggle.shown_text) < len(toggle.text())
    assert LONG_VALUE[:200] in toggle.toolTip()
    assert _in_viewport(toggle, viewport)[1] <= viewport.width()
    recall.set_result_expanded(True)
    await _settle()
    view = recall._result_view
    assert view is not None and LONG_VALUE in view.toPlainText().replace("\n", "")
    assert _in_viewport(view, viewport)[1] <= viewport.width()
    assert _in_viewport(window.chat.column, viewport)[1] <= viewport.width()  # nothing widens the column


async def test_a_tool_card_asks_for_little_width(qapp_instance: Any) -> None:
    from ui.chat.model.state import TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard

    arguments = {"path": "/" + "deep/" * 60 + "file.txt"}
    card = ToolCard(call_id="c1", tool="a_server_with_a_long_name__a_tool_with_a_long_name_too",
                    robot="a-robot-with-a-long-name", server="a_server_with_a_long_name", arguments=arguments)
    call = ToolCallItem(parent=TurnState(), call_id="c1", tool=card.tool, robot=card.robot, server=card.server,
                        arguments=arguments, status="ok", result={"data": LONG_VALUE}, duration=0.25)
    card.apply(call)  # a result, then an error: the card shows both
    call.status, call.error = "error", {"message": "E" * 600}
    card.apply(call)
    assert card.minimumSizeHint().width() <= 320
    card.resize(360, card.heightForWidth(360) if card.hasHeightForWidth() else 400)
    card.show()
    await _settle()
    assert card.title.text() == "a_tool_with_a_long_name_too" and card.title.elided
    card.hide()
    card.deleteLater()


# -- notices -----------------------------------------------------------------------------------------
async def test_a_toast_stays_inside_the_window_and_off_the_send_button(desktop: Any) -> None:
    await _built(desktop)
    window = desktop.window
    window.resize(960, 640)
    await _settle()
    window.toast.show_message("Robots now work in /home/someone/projects/" + "a-very-long-folder-name/" * 8
                              + " and the change review is waiting for you", action="Undo", callback=lambda: None)
    await _settle()
    toast = window.toast
    assert toast.isVisible()
    inside = window.rect()
    assert inside.contains(toast.geometry()), (toast.geometry(), inside)
    send = _rect_in(window.composer.button, window)
    assert not toast.geometry().intersects(send)
    assert toast.geometry().bottom() < window.composer.frame.mapTo(window, QPoint(0, 0)).y()
    assert toast.button.isVisible() and inside.contains(_rect_in(toast.button, window))
    # It follows the window when it is resized.
    window.resize(1280, 720)
    await _settle()
    assert window.rect().contains(toast.geometry())
    assert not toast.geometry().intersects(_rect_in(window.composer.button, window))


# -- the inspector -------------------------------------------------------------------------------------
def test_failed_calls_are_counted_consistently(qapp_instance: Any) -> None:
    from ui.inspector.panes import ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    pane = ToolCallsPane(model)
    model.add_events([
        _e(ev.ToolUse, 1, id="a", name="slow", input={}),
        _e(ev.ToolUse, 2, id="b", name="huge", input={}),
        _e(ev.ToolUse, 3, id="c", name="fetch", input={}),
        _e(ev.ToolUse, 4, id="d", name="read", input={}),
    ])
    assert pane.count.text() == "4 calls"
    model.add_events([  # the rows were there already: the count follows their status
        _e(ev.ToolError, 5, id="a", name="slow", error="Unknown tool 'slow'"),
        _e(ev.ToolError, 6, id="b", name="huge", error="Unknown tool 'huge'"),
    ])
    assert pane.count.text() == "4 calls · 2 failed"
    model.add_events([
        # an is_error output carried as a result: an error too
        _e(ev.ToolResult, 7, id="c", name="fetch", payload={"error": "connection refused"}),
        _e(ev.ToolResult, 8, id="d", name="read", payload={"data": "ok"}),
    ])
    statuses = [model.index(r, model.COL_STATUS).data() for r in range(model.rowCount())]
    assert statuses == ["error", "error", "error", "ok"]
    assert model.failed_count == 3
    assert pane.count.text() == "4 calls · 3 failed"
    pane.deleteLater()


def _block_colors(document: Any, needle: str) -> set[str]:
    block = document.begin()
    while block.isValid() and needle not in block.text():
        block = block.next()
    assert block.isValid(), f"{needle!r} is not shown"
    colors = set()
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        if fragment.isValid() and fragment.text().strip():
            colors.add(fragment.charFormat().foreground().color().name())
        it += 1
    return colors


def test_plain_error_text_is_not_highlighted_as_json(qapp_instance: Any) -> None:
    from ui.inspector.panes import ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    pane = ToolCallsPane(model)
    message = "read_file failed: no such file or directory (errno 2) at /tmp/x, true story"
    model.add_events([
        _e(ev.ToolUse, 1, id="a", name="read_file", input={"path": "x"}),
        _e(ev.ToolError, 2, id="a", name="read_file", error=message),
        _e(ev.ToolUse, 3, id="b", name="fetch", input={}),
        _e(ev.ToolError, 4, id="b", name="fetch", error={"type": "HTTPError", "status": 404}),
    ])
    pane.select_call("a")
    assert message in pane.result_view.toPlainText()
    assert len(_block_colors(pane.result_view.document(), "no such file")) == 1  # one colour: plain text
    pane.select_call("b")
    assert len(_block_colors(pane.result_view.document(), '"status"')) > 1  # JSON keeps its colours
    pane.deleteLater()


def test_the_card_shows_plain_errors_and_json_results_accordingly(qapp_instance: Any) -> None:
    from ui.markdown import value_html

    assert "<span" not in value_html("Unknown tool 'huge': 1 [x] {y}")
    assert "<span" in value_html('{"a": [1, true, "b"]}')
    assert "<span" in value_html({"a": 1})


async def test_trace_columns_fit_their_contents(qapp_instance: Any) -> None:
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane

    model = TraceModel()
    pane = TracePane(model)
    pane.resize(420, 400)
    pane.show()
    model.append_events([
        _e(ev.RunStarted, 11234, message="hi"),
        _e(ev.ApprovalRequested, 11235, id="a", name="remember", input={}),
        _e(ev.ToolUse, 11236, id="a", name="remember", input={}),
    ])
    pane._on_kind(pane.ALL)
    await _settle()
    header = pane.table.horizontalHeader()
    for col in range(4):
        assert pane.table.sizeHintForColumn(col) <= header.sectionSize(col), (col, model.COLUMNS[col])
    pane.hide()
    pane.deleteLater()


# -- the chat column -------------------------------------------------------------------------------
async def test_a_long_user_message_fits_a_narrow_column(desktop: Any, provider: Any) -> None:
    await _built(desktop)
    window = desktop.window
    window.resize(960, 640)
    await _settle()
    provider.enqueue("Fine.")
    window.runs.send(LONG_TITLE)
    await wait_until(lambda: desktop.controller.idle, what="the run to end")
    await _settle()
    viewport = window.chat.viewport()
    bubble = window.chat.user_messages()[-1].bubble
    assert _in_viewport(bubble, viewport)[1] <= viewport.width()
    assert _in_viewport(window.chat.column, viewport)[1] <= viewport.width()
