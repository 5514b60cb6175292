"""The chat of a local model: a tool call the model wrote in its text (``tool_use.from_text``)
has a card that says "from the model's text", live and reopened alike (a server's structured call says
nothing more); an answer stopped by a full context window says so, without offering "Continue"."""

from __future__ import annotations

from typing import Any

from tests.fakes.app_window import as_read
from workspace import events as ev
from workspace.result import STOP_NOTES, RobotResult


def events(from_text: bool, call_id: str) -> list[ev.Event]:
    return [ev.RunStarted(run_id="r1", robot="bot", message="List src"),
            ev.ToolUse(run_id="r1", robot="bot", id=call_id, name="list_files", input={"path": "src"},
                       from_text=from_text),
            ev.ToolResult(run_id="r1", robot="bot", id=call_id, name="list_files", payload={"data": "a.txt"})]


def test_the_card_of_a_call_from_text_says_so(qapp_instance: Any) -> None:
    from ui.chat.view.cards import FROM_TEXT, ToolCard
    from ui.chat.view.chat import ChatView

    chat = ChatView()
    chat.presenter.add_user("List src")
    stored = [ev.event_from_dict(e.to_dict()) for e in events(True, "c1")]  # as the store gives them back
    chat.presenter.feed_all(stored)
    item = chat.presenter.call("c1")
    assert item is not None and item.from_text
    card = chat.card("c1")
    assert isinstance(card, ToolCard)
    assert not card.from_text_label.isHidden() and card.from_text_label.text() == FROM_TEXT == "from the model's text"
    chat.deleteLater()

    other = ChatView()
    other.presenter.add_user("List src")
    other.presenter.feed_all(events(False, "c2"))
    card = other.card("c2")
    assert isinstance(card, ToolCard) and card.from_text_label.isHidden()
    other.deleteLater()


def test_an_answer_stopped_by_a_full_window_says_so() -> None:
    from ui.chat.model.presenter import ChatPresenter
    from ui.chat.model.state import NoticeItem

    presenter = ChatPresenter()
    turn = presenter.add_user("Count the files")
    result = RobotResult(robot_name="bot", output=[], stop_reason="context_full")
    presenter.feed_all([ev.RunStarted(run_id="r1", robot="bot", message="Count the files"),
                        ev.TextDelta(run_id="r1", robot="bot", text="I will check again. " * 3),
                        ev.RunFinished(run_id="r1", robot="bot", result=result)])
    (notice,) = [i for i in turn.items if isinstance(i, NoticeItem)]
    assert notice.text == "The answer stopped: the model's context window is full."
    assert notice.action is None and notice.details == STOP_NOTES["context_full"]
    assert "raising max_tokens cannot help" in (notice.details or "")
    run = presenter.run("r1")
    assert run is not None and run.end is not None
    assert run.end.status_text.startswith("■ The answer stopped because the model's context window is full")


def test_the_footer_shows_the_speed_as_local_model_tools_do(qapp_instance: Any) -> None:
    """Under the answer: input and output tokens apart, tokens a second, the time to the first token; the
    same from the events as the store gives them back."""
    from ui.chat.view.chat import ChatView
    from ui.chat.view.messages import RunFooter

    def at(cls: type[ev.Event], seq: int, ts: float, **fields: Any) -> Any:
        return cls(run_id="r1", robot="bot", seq=seq, ts=ts, **fields)

    run = [at(ev.RunStarted, 1, 10.0, message="hi"),
           at(ev.TextDelta, 2, 10.25, text="Hello"),
           at(ev.Usage, 3, 12.25, input_tokens=1200, output_tokens=85, total_input_tokens=1200,
              total_output_tokens=85),
           at(ev.Text, 4, 12.3, text="Hello"),
           at(ev.RunFinished, 5, 12.4, result=None)]
    chat = ChatView()
    chat.presenter.add_user("hi")
    chat.presenter.feed_all([ev.event_from_dict(e.to_dict()) for e in run])
    footer = next(w for w in chat.items() if isinstance(w, RunFooter))
    text = as_read(footer.usage.text())
    assert "1,200 in · 85 out tokens" in text, text
    assert "42.5 tok/s" in text and "0.25 s to first token" in text, text
    assert "first token" in footer.usage.toolTip()
    # Long as the figures are, they wrap between them in a narrow column rather than widen it.
    assert footer.minimumSizeHint().width() < footer.usage.fontMetrics().horizontalAdvance(text) / 2
    footer.resize(1000, 60)  # where the row has room: one line
    footer.show()
    footer.layout().activate()
    assert footer.usage.width() > footer.usage.fontMetrics().horizontalAdvance(text)
