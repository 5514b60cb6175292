"""Values as people read them: multi-line strings as text, pretty JSON otherwise."""

from __future__ import annotations

from workspace.readable import JsonBlock, JsonPieces, TextBlock, readable_blocks, readable_parts


def test_a_string_is_text_and_a_json_string_is_json() -> None:
    assert readable_blocks("one\ntwo") == [TextBlock("", "one\ntwo")]
    assert readable_blocks('{"a": 1}') == [JsonBlock('{\n  "a": 1\n}')]


def test_structures_without_strings_to_escape_are_pretty_json() -> None:
    assert readable_blocks({"path": "a.txt", "n": 3}) == [JsonBlock('{\n  "path": "a.txt",\n  "n": 3\n}')]


def test_strings_with_quotes_or_a_final_newline_are_text_too() -> None:
    blocks = readable_blocks({"path": "a.txt", "say": 'he said "hi"', "line": "x = 1\n"})
    assert blocks == [JsonBlock('{\n  "path": "a.txt",\n  "say": "<text below>",\n  "line": "<text below>"\n}'),
                      TextBlock("say", 'he said "hi"'), TextBlock("line", "x = 1\n")]


def test_multi_line_strings_come_out_as_text_under_their_key() -> None:
    value = {"path": "notes.txt", "content": "alpha\nbeta\n", "files": [{"text": "x\ny"}]}
    blocks = readable_blocks(value)
    assert isinstance(blocks[0], JsonBlock)
    assert "\\n" not in blocks[0].text
    assert '"content": "<text below: 2 lines>"' in blocks[0].text
    assert blocks[1:] == [TextBlock("content", "alpha\nbeta\n"), TextBlock("files[0].text", "x\ny")]


def test_a_single_wrapped_text_is_just_the_text_and_nested_json_strings_are_read() -> None:
    assert readable_blocks({"data": "line 1\nline 2"}) == [TextBlock("", "line 1\nline 2")]
    assert readable_blocks({"output": "a\nb"}) == [TextBlock("output", "a\nb")]
    blocks = readable_blocks({"content": [{"type": "text", "text": '{"rows": [1, 2]}'}]})
    assert blocks == [JsonBlock('{\n  "content": [\n    {\n      "type": "text",\n      "text": {\n        "rows": [\n'
                                '          1,\n          2\n        ]\n      }\n    }\n  ]\n}')]


def test_has_text_says_whether_some_part_is_shown_as_text() -> None:
    from workspace.readable import has_text

    values = ["one\ntwo", "plain words", '{"a": 1}', '{"a": "x\\ny"}', {"path": "a.txt", "n": [1, 2.5, None]},
              {"say": 'he said "hi"'}, [{"deep": ['{"k": "tab\\there"}']}], [], {}, 3, None, ["[1, 2]", "{x"]]
    for value in values:
        assert has_text(value) == any(isinstance(b, TextBlock) for b in readable_blocks(value)), value


def test_the_parts_made_as_they_are_read_are_the_blocks() -> None:
    def parts(value: object) -> list[object]:
        return [JsonBlock("".join(part.pieces)) if isinstance(part, JsonPieces) else part
                for part in readable_parts(value)]

    for value in ({"data": [{"id": i, "v": "a"} for i in range(50)]}, {"a": "x\ny", "b": [1, '{"q": "r\\ns"}', (1, 2)]},
                  {"data": "a\nb"}, {"k": "a\nb"}, "plain", "[1, 2]", [], 5):
        assert parts(value) == readable_blocks(value)
    # a key JSON has no text for: the blocks' text of it (its repr), after the fragments given before it
    for value in ({(1, 2): "a\nb", "b": 1}, {"a": 1, (1, 2): 2}):
        made, blocks = parts(value), readable_blocks(value)
        assert isinstance(made[0], JsonBlock) and made[0].text.endswith(blocks[0].text) and made[1:] == blocks[1:]
