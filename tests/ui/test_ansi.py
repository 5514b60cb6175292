"""A command's ANSI colours: SGR codes become styled spans (the 16 colours, bold, reset), every other escape
sequence is dropped, a sequence cut across chunks waits for the rest; the tool card paints the colours."""

from __future__ import annotations

from typing import Any

from ui.ansi import DARK_PALETTE, LIGHT_PALETTE, PLAIN, AnsiParser, Style, apply_sgr, palette, styled
from ui.chat.model.tool_calls import OUTPUT_KEEP, OutputState, ToolCallItem

RED, GREEN = Style(fg=1), Style(fg=2)


def test_colours_bold_and_reset_become_spans() -> None:
    text = "\x1b[31mred\x1b[0m plain \x1b[1;92mbright green bold\x1b[39m bold\x1b[22m plain\x1b[m"
    assert styled(text) == [("red", RED), (" plain ", PLAIN), ("bright green bold", Style(fg=10, bold=True)),
                            (" bold", Style(bold=True)), (" plain", PLAIN)]
    assert styled("\x1b[44;33mon blue\x1b[49m\x1b[103mon bright yellow") == [
        ("on blue", Style(fg=3, bg=4)), ("on bright yellow", Style(fg=3, bg=11))]


def test_extended_colours_below_16_are_kept_and_others_skipped_with_their_arguments() -> None:
    assert apply_sgr(PLAIN, "38;5;9") == Style(fg=9)
    assert apply_sgr(PLAIN, "38;5;200") == PLAIN  # 256 colours: the view's own colour
    assert apply_sgr(PLAIN, "38;2;255;0;0;1") == Style(bold=True)  # true colour skipped, bold after it read
    assert apply_sgr(Style(fg=1), "48;5;4") == Style(fg=1, bg=4)


def test_other_escape_sequences_are_dropped_and_line_ends_made_plain() -> None:
    text = "\x1b[2K\x1b[1Gprogress\x1b[?25l\x1b]0;a title\x07 done\x1b]8;;http://x\x1b\\link\x1b(B\r\n"
    assert styled(text) == [("progress done" + "link\n", PLAIN)]


def test_a_sequence_cut_across_chunks_waits_for_the_rest() -> None:
    parser = AnsiParser()
    assert parser.feed("ok \x1b") == [("ok ", PLAIN)] and parser.pending == "\x1b"
    assert parser.feed("[3") == [] and parser.pending == "\x1b[3"
    assert parser.feed("1mred") == [("red", RED)]
    assert parser.feed(" still red\x1b[0") == [(" still red", RED)]
    assert parser.feed("m plain") == [(" plain", PLAIN)]
    assert parser.feed("\x1b]0;ti") == [] and parser.feed("tle\x07after") == [("after", PLAIN)]


def test_the_kept_output_knows_its_colours_also_once_its_start_is_cut() -> None:
    state = OutputState()
    assert state.append("plain \x1b[3") == "plain "
    assert state.append("2mgreen\x1b[0m end\n") == "green end\n"
    assert state.text == "plain green end\n"
    assert state.styled() == [("plain ", PLAIN), ("green", GREEN), (" end\n", PLAIN)]
    assert state.styled(8) == [("een", GREEN), (" end\n", PLAIN)]
    state.append("\x1b[31m" + "r" * 99 + "\n")  # red from here on, past what is kept
    for _ in range(OUTPUT_KEEP // 100 + 5):
        state.append("r" * 99 + "\n")
    assert state.cut > 0 and len(state.text) <= OUTPUT_KEEP
    assert state.styled() == [(state.text, RED)]  # the style in force where the kept text starts


def test_the_palettes_have_16_colours_per_theme() -> None:
    assert len(LIGHT_PALETTE) == len(DARK_PALETTE) == 16
    assert palette("dark") is DARK_PALETTE and palette("light") is LIGHT_PALETTE


def test_the_card_paints_the_colours_and_shows_no_codes(qapp_instance: Any) -> None:
    from PySide6.QtGui import QColor, QFont

    from ui import theme
    from ui.chat.view.cards import ToolCard

    card = ToolCard(call_id="c1", tool="run_command", robot="file-helper", server=None, arguments={"command": "make"})
    card.resize(700, 400)
    card.show()
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    for chunk in ("PASS \x1b[3", "2mok\x1b[0m\n\x1b[1;31mFAIL", "\x1b[0m done\n"):
        card.append_output(item.output, item.output.append(chunk))
        qapp_instance.processEvents()
    shown = card.output
    assert shown is not None and shown.text == "PASS ok\nFAIL done\n"
    colors = palette(theme.colors().name)

    def format_at(text: str) -> Any:
        found = shown.view.document().find(text)
        assert not found.isNull(), text
        return found.charFormat()

    assert format_at("ok").foreground().color() == QColor(colors[2])
    fail = format_at("FAIL")
    assert fail.foreground().color() == QColor(colors[1]) and fail.fontWeight() == QFont.Weight.Bold
    assert format_at("done").foreground().style().name == "NoBrush"  # plain: the view's own colour
    card.close()


def test_a_long_output_shown_anew_keeps_the_colours_where_it_ends(qapp_instance: Any) -> None:
    from PySide6.QtGui import QColor

    from ui import theme
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.command_output import RESTYLE_CHARS

    card = ToolCard(call_id="c1", tool="run_command", robot="file-helper", server=None, arguments={"command": "make"})
    item = ToolCallItem(parent=None, call_id="c1", tool="run_command", robot="file-helper", arguments={})
    item.output = OutputState()
    line = "x" * 40 + " \x1b[32mok\x1b[0m\n"
    for n in range(2 * OUTPUT_KEEP // 44 // 500 + 1):
        chunk = "".join(line.replace("x" * 40, f"{n:05d}-{i:04d}".ljust(40, "x")) for i in range(500))
        card.append_output(item.output, item.output.append(chunk))
    shown = card.output
    assert shown is not None and item.output.cut > 0 and "\x1b" not in shown.text
    document = shown.view.document()
    last = document.find(item.output.text.splitlines()[-1][:10])
    assert not last.isNull()
    ok = document.find("ok", last.position())
    assert ok.charFormat().foreground().color() == QColor(palette(theme.colors().name)[2])
    assert len(item.output.text) > RESTYLE_CHARS
    card.close()
