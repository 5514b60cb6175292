"""What the chat's column shows, as text (:func:`dump_widgets`): one line per message, card, lane and
footer. Tests compare a live run with its reopened thread this way (and :func:`ui.chat.dump.dump_state`
for the view state)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel, QWidget

from ui.chat.view.cards import ToolCard
from ui.chat.view.change_card import ChangeCard
from ui.chat.view.lanes import NetworkHeader, TaskLane
from ui.chat.view.messages import NoticeLine, RobotHeader, RunFooter, ThinkingBlock, UserMessage
from ui.chat.view.request_card import RequestCard
from ui.chat.view.run_state import ErrorCard
from ui.chat.view.stream import MarkdownStream

if TYPE_CHECKING:
    from ui.chat.view.chat import ChatView


def dump_widgets(chat: ChatView) -> str:
    """The column's widgets as text, one line each (a lane's widgets indented under it): what a
    person sees — texts, pills, durations, token counts, footers. Tests compare a live run with
    its reopened thread this way."""
    lines: list[str] = []

    def card_line(card: ToolCard) -> str:
        decision = card._decision.text() if card._decision is not None else ""
        error = card._error_box.toPlainText() if card._error_box is not None else ""
        result = card._result_toggle.text() if card._result_toggle is not None else ""
        args = card._args.toPlainText().replace("\n", " ")
        pill = card._status_pill.text() if card._status_pill is not None else ""
        return (f"tool {card.title.text()} [{pill}] {card._duration.text()!r} args={args!r}"
                + (f" decision={decision!r}" if decision else "") + (f" result={result!r}" if result else "")
                + (f" error={error!r}" if error else ""))

    def widget_lines(widget: QWidget, indent: str) -> list[str]:
        if isinstance(widget, UserMessage):
            branch = widget.branch_label.text() if widget._buttons_made and widget.sibling_count > 1 else ""
            chips = widget.chips.names() if widget.chips is not None and widget.chips.chips else []
            return [f"{indent}user {widget.text!r}" + (f" note={widget.note!r}" if widget.note else "")
                    + (f" chips={chips!r}" if chips else "")
                    + (f" {branch}" if branch else "")]
        if isinstance(widget, RobotHeader):
            name = widget.findChild(QLabel, "RobotName")
            return [f"{indent}robot {name.text() if name is not None else '?'}"]
        if isinstance(widget, MarkdownStream):
            return [f"{indent}text {widget.text!r}"]
        if isinstance(widget, ThinkingBlock):
            return [f"{indent}thinking {widget.toggle.text()!r} {'folded' if widget.collapsed else 'open'} "
                    f"{widget.text!r}"]
        if isinstance(widget, ToolCard):
            lines = [indent + card_line(widget)]
            for inner in widget.lanes():
                lines += widget_lines(inner, indent + "    ")
            return lines
        if isinstance(widget, RequestCard):
            return [indent + widget.dump()]
        if isinstance(widget, ChangeCard):
            pill = widget._pill.text() if widget._pill is not None else ""
            undo = widget.undo_button.text() if not widget.undo_button.isHidden() else ""
            return [f"{indent}change <b>{widget.title.text()}</b> {widget.count.text()} [{pill}] {widget.listing.text()!r} "
                    f"{widget.note.text()!r} {widget.review_button.text()!r}" + (f" {undo}" if undo else "")]
        if isinstance(widget, NetworkHeader):
            return [f"{indent}network {widget.name.text()} {widget.kind.text()!r}"]
        if isinstance(widget, TaskLane):
            pill = widget._pill.text() if widget._pill is not None else ""
            out = [f"{indent}lane {widget.task} {widget.chip.text()} [{pill}] {widget.usage.text()!r} "
                   f"({widget.usage.toolTip()}) {widget.duration.text()!r} "
                   f"{'folded' if widget.collapsed else 'open'} {widget.summary.text()!r}"
                   + (f" note={widget.note.text()!r}" if not widget.note.isHidden() else "")]
            for inner in widget.widgets():
                out += widget_lines(inner, indent + "    ")
            return out
        if isinstance(widget, ErrorCard):
            fix = widget.fix_label.text() if widget.fix_label is not None else ""
            return [f"{indent}error {widget.title.text()!r} {widget.text.text()!r}" + (f" fix={fix!r}" if fix else "")]
        if isinstance(widget, NoticeLine):
            action = widget.action_button.text() if widget.action_button is not None else ""
            return [f"{indent}notice {widget.label.text()!r}" + (f" [{action}]" if action else "")]
        if isinstance(widget, RunFooter):
            return [f"{indent}footer {widget.usage.text()!r} ({widget.usage.toolTip()}) {widget.status.text()!r}"]
        return [f"{indent}{type(widget).__name__}"]

    if chat._more_button is not None:
        lines.append(chat._more_button.text())
    for widget in chat.items():
        lines += widget_lines(widget, "")
    return "\n".join(lines)


__all__ = ["dump_widgets"]
