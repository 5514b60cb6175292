"""A running command's output in the chat: the presenter's reducer without a window (chunks
in order, ANSI codes stripped even when a chunk cuts one, the memory bound and its note, live and
reopened alike), and the tool card's output view (text in order, following the end unless scrolled up,
folded once a long output ends)."""

from __future__ import annotations

from typing import Any

from fakes.stored_turns import FakeInfo, FakeView

from tests.ui.chat_dump import dump_state
from ui.chat.model.calls import ToolCalls
from ui.chat.model.column import Column
from ui.chat.model.presenter import ChatPresenter
from ui.chat.model.state import Item, RunState, TextItem, TurnState
from ui.chat.model.text import Texts
from ui.chat.model.tool_calls import OUTPUT_KEEP, OutputState, ToolCallItem
from ui.chat.view.command_output import OUTPUT_VIEW_CHARS, OUTPUT_VIEW_LINES
from ui.formatting import strip_ansi
from workspace import events as ev
from workspace.persistence.conversation import coalesce_text


def E(cls: type[ev.Event], seq: int, run: str = "r1", **fields: Any) -> Any:
    return cls(run_id=run, robot="file-helper", seq=seq, ts=100.0 + seq, **fields)


class Told:
    """A listener that writes down the output it is told of (and ignores the rest)."""

    def __init__(self) -> None:
        self.output: list[tuple[str, str]] = []

    def chat_reset(self) -> None: ...
    def turn_added(self, turn: TurnState) -> None: ...
    def turn_removed(self, turn: TurnState) -> None: ...
    def user_changed(self, turn: TurnState) -> None: ...
    def item_added(self, item: Item) -> None: ...
    def item_changed(self, item: Item) -> None: ...
    def text_appended(self, item: TextItem, delta: str) -> None: ...
    def run_changed(self, run: RunState) -> None: ...
    def hidden_changed(self) -> None: ...

    def tool_output(self, item: ToolCallItem, text: str) -> None:
        self.output.append((item.call_id, text))


def command_events(*chunks: str, stopped: bool = False) -> list[ev.Event]:
    events: list[ev.Event] = [
        E(ev.RunStarted, 1, message="build it"),
        E(ev.ToolUse, 2, id="c1", name="run_command", input={"command": "make"}),
    ]
    seq = 3
    for chunk in chunks:
        events.append(E(ev.ToolOutput, seq, id="c1", name="run_command", text=chunk))
        seq += 1
    if stopped:
        events.append(E(ev.ToolError, seq, id="c1", name="run_command", error="The user stopped the run"))
        events.append(E(ev.RunCancelled, seq + 1))
    else:
        events.append(E(ev.ToolResult, seq, id="c1", name="run_command", payload={"exit_code": 0}, duration=1.5))
        events.append(E(ev.Text, seq + 1, text="Built."))
        events.append(E(ev.RunFinished, seq + 2, result=None))
    return events


def test_the_reducer_appends_chunks_in_order_without_colour_codes_and_tells_the_listener() -> None:
    told = Told()
    column = Column(told)
    calls = ToolCalls(Texts())
    calls.tool_use(column, E(ev.ToolUse, 1, id="c1", name="run_command", input={"command": "make"}))
    chunks = ["\x1b[32mok\x1b[0m one\n", "two\r\n\x1b[1", ";31mred\x1b[0m\n", "\x1b]0;title\x07three"]
    for seq, chunk in enumerate(chunks, start=2):
        calls.tool_output(column, E(ev.ToolOutput, seq, id="c1", name="run_command", text=chunk))
    call = calls.call(column, "c1")
    assert call is not None and call.output is not None
    assert call.output.text == "ok one\ntwo\nred\nthree"
    assert call.output.lines == 4 and call.output.cut == 0 and call.output.note == ""
    # the listener hears each addition in order; the chunk that ended inside a colour code waits for the rest
    assert told.output == [("c1", "ok one\n"), ("c1", "two\n"), ("c1", "red\n"), ("c1", "three")]
    assert call.status == "running"


def test_the_output_kept_is_bounded_and_says_what_was_cut() -> None:
    state = OutputState()
    line = "x" * 99 + "\n"  # 100 characters a line
    for _ in range(3000):  # 300,000 characters: more than kept
        state.append(line)
    assert len(state.text) <= OUTPUT_KEEP
    assert state.cut + len(state.text) == 300_000
    assert state.text.startswith("x") and state.text.endswith("\n")  # cut at a line's start
    assert f"{state.cut:,} earlier characters not shown" in state.note
    assert strip_ansi("\x1b[1;32mbold\x1b[0m\r\n") == "bold\n"


def test_a_stop_keeps_the_output_and_the_card_says_stopped() -> None:
    presenter = ChatPresenter()
    presenter.add_user("build it")
    presenter.feed_all(command_events("compiling\n", "\n[stopped: the command and everything it started were killed]\n",
                                      stopped=True))
    call = presenter.call("c1")
    assert call is not None and call.status == "stopped" and call.output is not None
    assert call.output.text.endswith("[stopped: the command and everything it started were killed]\n")


def test_a_reopened_thread_shows_the_same_output_as_the_live_run() -> None:
    events = command_events("line 1\n", "\x1b[33mline 2\x1b[0m\n", "line 3\n")
    live = ChatPresenter()
    turn = live.add_user("build it")
    live.set_user(turn, turn_id="t1")
    live.feed_all(events)
    stored = ChatPresenter()
    stored.load_turn(FakeView(FakeInfo("t1"), coalesce_text(events), user_text="build it"))
    dumped = dump_state(live.state)
    assert "output='line 1\\nline 2\\nline 3\\n'" in dumped
    assert dumped == dump_state(stored.state)


# -- the card -----------------------------------------------------------------------------------------------
def _card(qapp_instance: Any) -> Any:
    from ui.chat.view.cards import ToolCard

    card = ToolCard(call_id="c1", tool="run_command", robot="file-helper", server=None, arguments={"command": "make"})
    card.resize(700, 400)
    card.show()
    return card


def test_the_card_shows_the_text_in_order_and_follows_the_end(qapp_instance: Any) -> None:
    from ui.chat.view.command_output import OUTPUT_MAX_LINES

    card = _card(qapp_instance)
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    for i in range(60):
        card.append_output(item.output, item.output.append(f"\x1b[36mline {i}\x1b[0m\n"))
        qapp_instance.processEvents()
    shown = card.output
    assert shown is not None
    assert shown.text == "".join(f"line {i}\n" for i in range(60))
    assert "60 lines" in shown.toggle.text() and "running" in shown.toggle.text()
    bar = shown.view.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == bar.maximum()  # bounded height, scrolled to the end
    assert shown.view.height() < shown.view.fontMetrics().lineSpacing() * (OUTPUT_MAX_LINES + 2)
    # scrolled up by the person: new output does not pull the view down
    bar.setValue(0)
    card.append_output(item.output, item.output.append("line 60\n"))
    assert bar.value() == 0 and shown.text.endswith("line 60\n")
    # back at the end: it follows again
    bar.setValue(bar.maximum())
    card.append_output(item.output, item.output.append("line 61\n"))
    qapp_instance.processEvents()
    assert bar.value() == bar.maximum()
    # the call ends: the output stays, folded (it is long), with the result under it
    item.status, item.result, item.duration = "ok", {"exit_code": 0}, 2.0
    card.apply(item)
    assert shown.text.endswith("line 61\n") and not shown.expanded and not shown.view.isVisible()
    assert "running" not in shown.toggle.text() and card._result_toggle is not None
    shown.toggle.click()
    assert shown.expanded and shown.view.isVisible()
    card.close()


def test_a_short_output_stays_open_and_a_cut_one_says_so(qapp_instance: Any) -> None:
    card = _card(qapp_instance)
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    card.append_output(item.output, item.output.append("done\n"))
    item.status = "ok"
    card.apply(item)
    shown = card.output
    assert shown is not None and shown.expanded and not shown.cut_note.isVisible()
    big = ToolCallItem(parent=None, call_id="c2", tool="run_command", robot="file-helper", arguments={})
    big.output = OutputState()
    for _ in range(2500):
        big.output.append("y" * 99 + "\n")
    other = _card(qapp_instance)
    other.apply(big)  # a card made after the output (a reopened thread): its end shown, the cut said
    qapp_instance.processEvents()
    assert other.output is not None and big.output.text.endswith(other.output.text)
    assert other.output.text.startswith("y") and other.output.view.document().blockCount() <= OUTPUT_VIEW_LINES
    cut = 250_000 - len(other.output.text)
    assert other.output.cut_note.isVisible() and f"… {cut:,} earlier characters not shown" in other.output.cut_note.text()
    card.close()
    other.close()


def test_a_long_stream_keeps_the_view_bounded_and_its_end_in_order(qapp_instance: Any) -> None:
    card = _card(qapp_instance)
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    every = []
    for i in range(6000):  # 6000 lines of 100 characters: 600,000, three times what is kept
        line = f"{i:06d} " + "z" * 92 + "\n"
        every.append(line)
        card.append_output(item.output, item.output.append(line))
    shown = card.output
    assert shown is not None
    whole = "".join(every)
    assert whole.endswith(shown.text) and len(shown.text) <= OUTPUT_VIEW_CHARS  # the end, in order, bounded
    assert shown.view.document().blockCount() <= OUTPUT_VIEW_LINES
    assert len(item.output.text) == OUTPUT_KEEP  # the call keeps more than the card shows
    assert shown.text.endswith("005999 " + "z" * 92 + "\n")
    qapp_instance.processEvents()
    cut = len(whole) - len(shown.text)
    assert shown.cut_note.isVisible() and f"{cut:,} earlier characters" in shown.cut_note.text()
    bar = shown.view.verticalScrollBar()
    assert bar.value() == bar.maximum()
    card.close()


def _wait_for(qapp_instance: Any, condition: Any, what: str) -> None:
    import time

    deadline = time.monotonic() + 10  # bounds a hang (the frame timer is 16 ms)
    while not condition():
        assert time.monotonic() < deadline, f"waited 10 s for {what}"
        qapp_instance.processEvents()
        time.sleep(0.002)


def test_chunks_that_come_within_a_frame_are_one_update_of_the_view(qapp_instance: Any) -> None:
    from ui.chat.view.command_output import OUTPUT_FRAME_MS

    card = _card(qapp_instance)
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    card.append_output(item.output, item.output.append("first\n"))
    shown = card.output
    assert shown is not None
    updates: list[int] = []  # the characters each update of the view's document added (setPlainText clears first)
    shown.view.document().contentsChange.connect(lambda _at, _removed, added: added and updates.append(added))
    lines = [f"line {i}\n" for i in range(300)]
    for line in lines:  # 300 chunks, faster than a frame
        card.append_output(item.output, item.output.append(line))
    assert updates == [] and shown.view.toPlainText() == ""  # nothing laid out yet: they wait for the frame
    _wait_for(qapp_instance, lambda: bool(updates), f"the frame's update ({OUTPUT_FRAME_MS} ms)")
    assert len(updates) == 1
    assert shown.text == "first\n" + "".join(lines)
    assert "301 lines" in shown.toggle.text()
    # more chunks, then the call ends: what is queued is shown at once, in one more update
    for i in range(300, 310):
        card.append_output(item.output, item.output.append(f"line {i}\n"))
    item.status = "ok"
    card.apply(item)
    assert len(updates) == 2 and shown.view.toPlainText().endswith("line 309")
    card.close()


def test_a_fast_stream_is_few_updates_and_the_card_holds_a_bounded_tail(qapp_instance: Any) -> None:
    from ui.inspector.tool_calls import ToolCallsModel

    card = _card(qapp_instance)
    model = ToolCallsModel()
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    model.add_event(E(ev.ToolUse, 1, id="c1", name="run_command", input={"command": "make"}))
    chunks = ["".join(f"{n:07d} \x1b[32mok\x1b[0m {'w' * 60}\n" for n in range(i * 100, i * 100 + 100))
              for i in range(400)]  # 40,000 lines, 3 MB
    updates: list[int] = []
    for seq, chunk in enumerate(chunks, start=2):
        card.append_output(item.output, item.output.append(chunk))
        model.add_event(E(ev.ToolOutput, seq, id="c1", name="run_command", text=chunk))
        if seq == 2:
            card.output.view.document().contentsChange.connect(lambda _at, _gone, added: added and updates.append(added))
        if seq % 50 == 0:  # the event loop turns now and then: a frame's update, if one is due
            qapp_instance.processEvents()
    shown = card.output
    assert shown is not None
    text = shown.text
    assert len(updates) <= 10  # at most one per turn of the loop above and the last, not one per chunk
    whole = strip_ansi("".join(chunks))
    assert whole.endswith(text) and text.endswith("0039999 ok " + "w" * 60 + "\n")
    assert shown.view.document().blockCount() <= OUTPUT_VIEW_LINES and len(text) <= OUTPUT_VIEW_CHARS
    assert f"{len(whole) - len(text):,} earlier characters not shown" in shown.cut_note.text()
    record = model.find("c1")
    assert record is not None and record.output == "".join(chunks)  # the inspector keeps every character
    card.close()


def test_the_inspector_pages_a_long_output_and_keeps_all_of_it(qapp_instance: Any) -> None:
    from ui.inspector.panes import OUTPUT_PAGE, ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    pane = ToolCallsPane(model)
    pane.resize(600, 500)
    pane.show()
    lines = [f"{n:06d} \x1b[31mred\x1b[0m {'q' * 80}\n" for n in range(3000)]  # 303,000 characters: pages
    model.add_event(E(ev.ToolUse, 1, id="c1", name="run_command", input={"command": "make"}))
    for seq, start in enumerate(range(0, 3000, 700), start=2):
        model.add_event(E(ev.ToolOutput, seq, id="c1", name="run_command", text="".join(lines[start:start + 700])))
    model.add_event(E(ev.ToolResult, 20, id="c1", name="run_command", payload={"data": {"exit_code": 0}}, duration=1.0))
    pane.tabs.setCurrentWidget(pane.output_tab)
    pane.select_call("c1")
    whole = "".join(lines)
    assert len(whole) > 2 * OUTPUT_PAGE
    shown = pane.output_view.toPlainText()
    assert pane.output_pager.isVisible() and pane.output_earlier.isEnabled() and not pane.output_later.isEnabled()
    assert strip_ansi(whole).endswith(shown)
    assert len(shown) <= OUTPUT_PAGE and shown.startswith(lines[-len(shown.splitlines())][:6])  # whole lines
    assert pane.output_part.text().endswith(f"of {len(whole):,}")
    parts = [pane.output_part.text()]
    while pane.output_earlier.isEnabled():  # back to the start, a part at a time, each ending where the next begins
        pane.output_earlier.click()
        parts.append(pane.output_part.text())
    assert pane.output_view.toPlainText().startswith("000000 red ") and len(parts) > len(whole) // OUTPUT_PAGE
    pages = []
    while True:
        pages.append(pane.output_view.toPlainText())
        if not pane.output_later.isEnabled():
            break
        pane.output_later.click()
    assert "".join(pages) == strip_ansi(whole)  # every character once, in order, no colour codes
    assert pane.output_part.text() == parts[0]  # the last part follows the end again
    pane.close()


def test_the_inspector_shows_a_changed_call_once_per_turn_of_the_loop(qapp_instance: Any) -> None:
    from ui.inspector.panes import ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    pane = ToolCallsPane(model)
    pane.show()
    model.add_event(E(ev.ToolUse, 1, id="c1", name="run_command", input={"command": "make"}))
    model.add_event(E(ev.ToolOutput, 2, id="c1", name="run_command", text="built\n"))
    pane.select_call("c1")
    assert pane.output_view.toPlainText() == "built\n"
    shown: list[int] = []
    pane.output_view.document().contentsChange.connect(lambda _at, _gone, added: added and shown.append(added))
    for seq in range(3, 8):  # five changes of the call in one turn: its detail is shown again once, after them
        model.add_event(E(ev.ToolUse, seq, id="c1", name="run_command", input={"command": f"make {seq}"}))
    model.add_event(E(ev.ToolResult, 9, id="c1", name="run_command", payload={"data": {"exit_code": 0}}, duration=1.0))
    assert shown == []
    _wait_for(qapp_instance, lambda: bool(shown), "the call shown again")
    qapp_instance.processEvents()
    assert len(shown) == 1 and "· ok ·" in pane.args_view.toPlainText() and "exit_code" in pane.result_view.toPlainText()
    pane.close()


def test_a_part_of_the_inspectors_output_has_the_colours_in_force_where_it_starts(qapp_instance: Any) -> None:
    from PySide6.QtGui import QColor

    from ui import theme
    from ui.ansi import PLAIN, Style, palette
    from ui.inspector.panes import OUTPUT_PAGE, ToolCallsPane
    from ui.inspector.tool_calls import ToolCallsModel

    model = ToolCallsModel()
    model.add_event(E(ev.ToolUse, 1, id="c1", name="run_command", input={"command": "make"}))
    # red from the first chunk on (its code cut across two chunks), for more than a page: a part that starts
    # later starts inside the red
    chunks = ["plain \x1b[3", "1mred start\n", *("".join(f"{n:06d} {'r' * 70}\n" for n in range(i, i + 500))
                                                   for i in range(0, 2000, 500)), "\x1b[0mdone\n"]
    for seq, chunk in enumerate(chunks, start=2):
        model.add_event(E(ev.ToolOutput, seq, id="c1", name="run_command", text=chunk))
    record = model.find("c1")
    assert record is not None
    red = Style(fg=1)
    assert record.output_styled(0, 8) == [("plain ", PLAIN)]  # the code's start is cut off at the part's end
    assert record.output_styled(8, 14) == [("red", red)]  # starts inside the code: read from the chunk's state
    middle = record.output_length // 2
    assert record.output_styled(middle, middle + 10) == [(record.output_slice(middle, middle + 10), red)]
    pane = ToolCallsPane(model)
    pane.resize(600, 500)
    pane.show()
    pane.tabs.setCurrentWidget(pane.output_tab)
    pane.select_call("c1")
    assert record.output_length > OUTPUT_PAGE and pane.output_earlier.isEnabled()
    document = pane.output_view.document()
    colors = palette(theme.colors().name)
    first = document.find(pane.output_view.toPlainText()[:6])  # the part's first line: red, its code long before
    assert not first.isNull() and first.charFormat().foreground().color() == QColor(colors[1])
    assert document.find("done").charFormat().foreground().style().name == "NoBrush"
    pane.close()
