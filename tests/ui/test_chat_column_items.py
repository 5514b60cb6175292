"""The chat column's layout holds as many items in a thread of 2,000 turns as in one of 50.

Qt's box layout walks every one of its items each time the column changes (a message sent, a delta, a run's
end), and that walk is C++ a profile of Python calls does not see: a spacer per turn far from the screen made a
long thread's every step pay its length. Turns far from the screen are a gap (one spacer for a run of them), so
the items are the screen's turns and the gaps between them. Counted at the end of the thread while an answer
streams, in the middle of it after a jump, and at its top.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication

from ui.chat.view.chat import ChatView
from ui.chat.view.turn_gap import TurnGap
from workspace import events as ev
from workspace.result import RobotResult

SHORT, LONG = 50, 2000
#: A few more items are allowed in the long thread: a turn more or fewer near the screen, a gap more.
MARGIN = 12


def _events(i: int, run: str) -> list[ev.Event]:
    return [
        ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"question {i}"),
        ev.Text(run_id=run, robot="assistant", seq=2, text=f"answer {i}: " + "words " * (i % 40)),
        ev.ToolUse(run_id=run, robot="assistant", seq=3, id=f"c{i}", name="read_file", input={"path": "f.py"}),
        ev.ToolResult(run_id=run, robot="assistant", seq=4, id=f"c{i}", name="read_file",
                      payload={"data": {"content": "x = 1\n"}}, duration=0.01),
        ev.RunFinished(run_id=run, robot="assistant", seq=5, result=RobotResult(robot_name="assistant", output=[])),
    ]


def _settle(chat: ChatView) -> None:
    for _ in range(6):
        QApplication.processEvents()
    rounds = 0
    while chat.turn_window.busy and rounds < 5000:
        QApplication.processEvents()
        rounds += 1


def _most_items(turns: int) -> tuple[int, int]:
    """The most items the column's layout held (at the end streaming, in the middle, at the top), and how many
    turns were placeholders meanwhile."""
    chat = ChatView()
    chat.resize(700, 500)
    chat.show()
    try:
        with chat.turn_window.deferring():  # the thread's turns, as pages loaded earlier: placeholders
            for i in range(turns):
                chat.presenter.add_user(f"question {i}")
                chat.presenter.feed_all(_events(i, f"r{i}"))
        chat.scroll_to_bottom()
        _settle(chat)
        most = chat._layout.count()
        # at the end: a message sent, its answer streamed, the run's end
        run = "live"
        chat.presenter.add_user("one more question")
        for word in ("streamed " * 30).split(" "):
            chat.presenter.feed(ev.TextDelta(run_id=run, robot="assistant", seq=1, text=word + " "))
            QApplication.processEvents()
            most = max(most, chat._layout.count())
        chat.presenter.feed(ev.RunFinished(run_id=run, robot="assistant", seq=2))
        _settle(chat)
        most = max(most, chat._layout.count())
        bar = chat.verticalScrollBar()
        for value in (bar.maximum() // 2, 0, bar.maximum() // 3):  # a jump to the middle, to the top, back
            bar.setValue(value)
            _settle(chat)
            most = max(most, chat._layout.count())
        placeholders = len(chat.turn_window.placeholders)
        gaps = {id(gap) for gap in chat.turn_window.placeholders.values()}
        assert all(isinstance(chat._layout.itemAt(i), TurnGap) or chat._layout.itemAt(i).widget() is not None
                   or chat._layout.itemAt(i).spacerItem() is not None for i in range(chat._layout.count()))
        assert len(gaps) <= 3  # above the screen's turns, below them, above the last turn (always kept)
        return most, placeholders
    finally:
        chat.close()
        chat.deleteLater()
        QApplication.processEvents()


def test_the_columns_layout_does_not_grow_with_the_thread(qapp_instance: Any) -> None:
    short, _ = _most_items(SHORT)
    long, placeholders = _most_items(LONG)
    assert placeholders >= LONG - 100  # the long thread's turns are there, far from the screen
    assert long <= short + MARGIN, (
        f"the column's layout held {long} items at {LONG} turns against {short} at {SHORT}: "
        "a layout item per turn far from the screen")


def test_a_gap_places_each_of_its_turns_as_a_column_of_spacers_would(qapp_instance: Any) -> None:
    from ui.chat.model.state import TurnState

    turns = [TurnState() for _ in range(8)]
    gap = TurnGap(spacing=6)

    def expected() -> list[tuple[int, int]]:  # each turn under the one above, the spacing between them
        out, top = [], 0
        for height in gap.heights:
            out.append((top, top + height - 1))
            top += height + 6
        return out

    for i, turn in enumerate(turns[2:5]):
        gap.append(turn, 100 + i)
    assert [gap.span(t) for t in gap.turns] == expected() == [(0, 99), (106, 206), (213, 314)]
    gap.append(turns[5], 40)  # after its places were asked: they are kept, the new one's added
    assert [gap.span(t) for t in gap.turns] == expected() and gap.span(turns[5]) == (321, 360)
    gap.append(turns[6], 50)
    assert [gap.span(t) for t in gap.turns] == expected() and gap.span(turns[6]) == (367, 416)
    gap.remove(turns[6])
    gap.insert(0, turns[1], 0)  # a turn never measured is a pixel tall, not nothing
    assert gap.turns == turns[1:6] and gap.heights[0] == 1
    assert [gap.span(t) for t in gap.turns] == expected()
    # (and the spacing after the last: the column's layout puts none next to the gap, an empty item)
    assert gap.sizeHint().height() == sum(gap.heights) + 6 * len(gap.heights)
    below = gap.split(turns[3])  # turns[3] becomes widgets
    assert gap.turns == turns[1:3] and below is not None and below.turns == turns[4:6]
    assert [gap.span(t) for t in gap.turns] == expected()
    gap.extend(below)
    gap.remove(turns[4])
    assert gap.turns == [turns[1], turns[2], turns[5]]
    assert [gap.span(t) for t in gap.turns] == expected()
    assert gap.split(turns[5]) is None and gap.turns == turns[1:3]


def test_turns_added_above_or_below_a_gap_keep_the_places_of_the_others(qapp_instance: Any) -> None:
    """Paging to a long thread's top adds each earlier turn above the first of a gap of thousands: the places of
    the gap's turns (an index, the heights above) are not worked out again for each (they were, a walk over
    the whole gap a turn loaded), and each turn is still where a column of spacers would put it."""
    from ui.chat.model.state import TurnState

    turns = [TurnState() for _ in range(1300)]
    gap = TurnGap(spacing=4)
    for i, turn in enumerate(turns[1000:1100]):
        gap.append(turn, 50 + i % 7)
    assert gap.span(turns[1050])[0] == sum(gap.heights[:50]) + 50 * 4  # the places worked out: one walk
    for i in range(999, -1, -1):  # earlier turns loaded, one at a time, each placed at once
        gap.insert(0, turns[i], 30 + i % 11)
        assert gap.span(turns[i]) == (0, gap.heights[0] - 1)
        assert gap.where(turns[1000]) == 1000 - i
    for turn in turns[1100:1300]:  # turns given back below the screen
        gap.append(turn, 80)
        assert gap.where(turn) == len(gap.turns) - 1
    assert gap.walks == 1, f"the gap's places were worked out {gap.walks} times: a walk over it per turn added"
    tops = [0]
    for height in gap.heights[:-1]:
        tops.append(tops[-1] + height + 4)
    assert [gap.span(t) for t in gap.turns] == [(top, top + h - 1) for top, h in zip(tops, gap.heights, strict=True)]
    # The top turn made (the thread paged to its top): the gap keeps the turns below, their places kept.
    assert gap.split_above(turns[0]) is None and gap.turns[0] is turns[1] and gap.walks == 1
    assert gap.span(turns[1]) == (0, gap.heights[0] - 1) and gap.span(turns[2])[0] == gap.heights[0] + 4
    above = gap.split_above(turns[3])  # a turn near the top: the ones above it go in a gap of their own
    assert above is not None and above.turns == [turns[1], turns[2]] and gap.turns[0] is turns[4]
    assert gap.span(turns[4]) == (0, gap.heights[0] - 1) and gap.walks == 1
    below = gap.split(turns[1200])  # one near the bottom: the gap keeps the ones above it, their places kept
    assert below is not None and below.turns == turns[1201:] and gap.turns[-1] is turns[1199]
    assert gap.where(turns[1199]) == len(gap.turns) - 1 and gap.walks == 1
    assert above.span(turns[1]) == (0, above.heights[0] - 1) and above.walks == 1
    above.extend_above(TurnGap(spacing=4))  # (an empty gap met: nothing changes)
    gap.extend_above(above)  # two gaps met: the larger takes in the smaller's turns, its own places kept
    assert gap.turns[:3] == [turns[1], turns[2], turns[4]] and gap.walks == 1
    assert [gap.span(t)[0] for t in gap.turns[:4]] == [0, gap.heights[0] + 4, sum(gap.heights[:2]) + 8,
                                                       sum(gap.heights[:3]) + 12]
    gap.extend(below)
    assert gap.turns[-1] is turns[-1] and gap.walks == 1
    assert gap.span(turns[-1])[1] == sum(gap.heights) + 4 * (len(gap.heights) - 1) - 1
    gap.insert(5, TurnState(), 10)  # in the middle: the places below it move, worked out again once asked
    assert gap.span(turns[8])[0] == sum(gap.heights[:7]) + 7 * 4 and gap.walks == 2
