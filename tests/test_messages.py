"""Messages: port of RobotLab's message_test.rb and user_message_test.rb (spec 1.1, 2.1-2.5)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from workspace.messages import (
    Message,
    TextMessage,
    ToolCallMessage,
    ToolMessage,
    ToolResultMessage,
    UserMessage,
    format_time,
    parse_time,
)

# --------------------------------------------------------------------------------------------
# message_test.rb


class TestTextMessage:
    def test_user_text_message(self) -> None:
        msg = TextMessage(role="user", content="Hello")
        assert msg.type == "text"
        assert msg.role == "user"
        assert msg.content == "Hello"
        assert msg.stop_reason is None

    def test_system_role_accepted(self) -> None:
        assert TextMessage(role="system", content="Be brief").role == "system"

    def test_to_dict_has_type_role_content(self) -> None:
        d = TextMessage(role="user", content="Hello").to_dict()
        assert d == {"type": "text", "role": "user", "content": "Hello"}

    def test_to_dict_key_order_and_compaction(self) -> None:
        d = TextMessage("assistant", "Sunny, 22 C.", "stop").to_dict()
        assert list(d) == ["type", "role", "content", "stop_reason"]
        assert TextMessage("assistant", None).to_dict() == {"type": "text", "role": "assistant"}

    def test_to_json_parses_back(self) -> None:
        parsed = json.loads(TextMessage(role="user", content="What's the weather in Paris?").to_json())
        assert parsed == {"type": "text", "role": "user", "content": "What's the weather in Paris?"}


class TestValidation:
    def test_invalid_type(self) -> None:
        with pytest.raises(ValueError) as exc:
            Message("bogus", "user", "x")
        assert str(exc.value) == "Invalid message type: bogus. Must be one of: text, tool_call, tool_result"

    def test_invalid_role(self) -> None:
        with pytest.raises(ValueError) as exc:
            TextMessage(role="tool", content="x")  # OpenAI's "tool" role is not a RobotLab role
        assert str(exc.value) == "Invalid role: tool. Must be one of: system, user, assistant, tool_result"

    def test_invalid_stop_reason(self) -> None:
        with pytest.raises(ValueError) as exc:
            TextMessage(role="assistant", content="x", stop_reason="max_tokens")
        assert str(exc.value) == "Invalid stop_reason: max_tokens. Must be one of: tool, stop"

    def test_invalid_tool(self) -> None:
        with pytest.raises(ValueError, match="Invalid tool: must be ToolMessage or dict"):
            ToolCallMessage(role="assistant", tools=[42])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="Invalid tool: must be ToolMessage or dict"):
            ToolResultMessage(tool="nope", content={"data": 1})  # type: ignore[arg-type]

    def test_from_dict_unknown_type_fails_validation(self) -> None:
        with pytest.raises(ValueError, match="Invalid message type: image"):
            Message.from_dict({"type": "image", "role": "user", "content": "x"})


class TestToolCallMessage:
    def test_from_list_of_dicts(self) -> None:
        msg = ToolCallMessage(role="assistant", tools=[{"id": "call_1", "name": "get_weather",
                                                        "input": {"location": "Paris"}}])
        assert msg.type == "tool_call"
        assert msg.role == "assistant"
        assert len(msg.tools) == 1
        assert isinstance(msg.tools[0], ToolMessage)
        assert msg.stop_reason == "tool"
        assert msg.content is None

    def test_explicit_stop_reason(self) -> None:
        msg = ToolCallMessage(role="assistant", tools=[], stop_reason="tool")
        assert msg.stop_reason == "tool"
        assert msg.is_tool_stop

    def test_to_dict_shape(self) -> None:
        msg = ToolCallMessage(tools=[ToolMessage("call_1", "get_weather", {"location": "Paris"})])
        d = msg.to_dict()
        assert d == {
            "type": "tool_call",
            "role": "assistant",
            "tools": [{"type": "tool", "id": "call_1", "name": "get_weather", "input": {"location": "Paris"}}],
            "stop_reason": "tool",
        }
        assert list(d) == ["type", "role", "tools", "stop_reason"]
        assert "content" not in d
        assert len(d["tools"]) == 1


class TestToolResultMessage:
    def tool(self) -> ToolMessage:
        return ToolMessage(id="call_abc123", name="get_weather", input={"city": "NYC"})

    def test_basic(self) -> None:
        msg = ToolResultMessage(tool=self.tool(), content={"data": {"temperature": 72}})
        assert msg.type == "tool_result"
        assert msg.role == "tool_result"
        assert msg.tool.id == "call_abc123"
        assert msg.tool.name == "get_weather"
        assert msg.stop_reason == "tool"

    def test_error(self) -> None:
        msg = ToolResultMessage(tool=self.tool(), content={"error": "Division by zero"})
        assert msg.is_error
        assert not msg.is_success
        assert msg.error == "Division by zero"
        assert msg.data is None

    def test_success(self) -> None:
        msg = ToolResultMessage(tool=self.tool(), content={"data": "42"})
        assert msg.is_success
        assert not msg.is_error
        assert msg.data == "42"
        assert msg.error is None

    def test_nested_data_intact(self) -> None:
        nested = {"weather": {"temp": 72, "days": [1, 2, {"x": None}]}}
        msg = ToolResultMessage(tool=self.tool(), content={"data": nested})
        assert msg.data == nested

    def test_both_keys(self) -> None:
        msg = ToolResultMessage(tool=self.tool(), content={"data": 1, "error": "partial"})
        assert msg.is_success and msg.is_error

    def test_to_dict(self) -> None:
        msg = ToolResultMessage(tool=self.tool(), content={"data": {"temperature": 72, "conditions": "sunny"}})
        d = msg.to_dict()
        assert list(d) == ["type", "role", "tool", "content", "stop_reason"]
        assert d["type"] == "tool_result"
        assert d["role"] == "tool_result"
        assert isinstance(d["tool"], dict)
        assert d["tool"] == {"type": "tool", "id": "call_abc123", "name": "get_weather", "input": {"city": "NYC"}}
        assert d["content"] == {"data": {"temperature": 72, "conditions": "sunny"}}

    def test_tool_given_as_dict(self) -> None:
        msg = ToolResultMessage(tool={"id": "c1", "name": "calc", "input": {}}, content={"data": 3})
        assert isinstance(msg.tool, ToolMessage)
        assert msg.tool.name == "calc"

    def test_plain_string_content(self) -> None:
        msg = ToolResultMessage(tool=self.tool(), content="just text")
        assert msg.is_tool_result
        assert not msg.is_success
        assert not msg.is_error
        assert msg.data is None and msg.error is None

    def test_success_after_json_round_trip(self) -> None:
        # Spec 6.2: nested keys arrive as strings after JSON; success/error must still work.
        ok = ToolResultMessage(tool=self.tool(), content={"data": {"temperature": 72}})
        bad = ToolResultMessage(tool=self.tool(), content={"error": {"type": "ZeroDivisionError",
                                                                     "message": "divided by 0"}})
        ok2 = Message.from_dict(json.loads(ok.to_json()))
        bad2 = Message.from_dict(json.loads(bad.to_json()))
        assert isinstance(ok2, ToolResultMessage) and isinstance(bad2, ToolResultMessage)
        assert ok2.is_success and ok2.data == {"temperature": 72}
        assert bad2.is_error and bad2.error == {"type": "ZeroDivisionError", "message": "divided by 0"}


class TestFromDict:
    def test_dispatch_text(self) -> None:
        msg = Message.from_dict({"type": "text", "role": "user", "content": "Hi"})
        assert isinstance(msg, TextMessage)
        assert msg.content == "Hi"

    def test_dispatch_tool_call(self) -> None:
        msg = Message.from_dict({"type": "tool_call", "role": "assistant",
                                 "tools": [{"id": "1", "name": "x", "input": {}}]})
        assert isinstance(msg, ToolCallMessage)
        assert msg.tools[0].name == "x"

    def test_dispatch_tool_result_without_role(self) -> None:
        msg = Message.from_dict({"type": "tool_result", "tool": {"id": "1", "name": "x", "input": {}},
                                 "content": {"data": 5}})
        assert isinstance(msg, ToolResultMessage)
        assert msg.role == "tool_result"
        assert msg.data == 5

    def test_message_passes_through(self) -> None:
        msg = TextMessage("user", "hi")
        assert Message.from_dict(msg) is msg

    @pytest.mark.parametrize(
        "msg",
        [
            TextMessage("user", "What's the weather in Paris?"),
            TextMessage("assistant", "Sunny, 22 C.", "stop"),
            TextMessage("system", "Ünïcödé ✓"),
            ToolCallMessage(tools=[ToolMessage("call_1", "get_weather", {"location": "Paris"})]),
            ToolCallMessage(tools=[ToolMessage(None, "anon", None)]),
            ToolResultMessage(ToolMessage("call_abc123", "get_weather", {"city": "NYC"}),
                              {"data": {"temperature": 72, "conditions": "sunny"}}),
            ToolResultMessage(ToolMessage("call_order", "get_order", {"id": "bad"}), {"error": "Order not found"}),
            ToolResultMessage(ToolMessage("c9", "calc", {}),
                              {"error": {"type": "ZeroDivisionError", "message": "divided by 0"}}),
            ToolResultMessage(ToolMessage("c10", "echo", {}), "plain"),
        ],
    )
    def test_json_round_trip(self, msg: Message) -> None:
        again = Message.from_dict(json.loads(msg.to_json()))
        assert again == msg
        assert type(again) is type(msg)
        assert again.to_dict() == msg.to_dict()


class TestPredicates:
    def test_type_predicates_exclusive(self) -> None:
        text = TextMessage("user", "x")
        call = ToolCallMessage(tools=[])
        result = ToolResultMessage(ToolMessage("1", "t"), {"data": 1})
        assert (text.is_text, text.is_tool_call, text.is_tool_result) == (True, False, False)
        assert (call.is_text, call.is_tool_call, call.is_tool_result) == (False, True, False)
        assert (result.is_text, result.is_tool_call, result.is_tool_result) == (False, False, True)

    def test_role_predicates_exclusive(self) -> None:
        for role in ("system", "user", "assistant"):
            msg = TextMessage(role, "x")
            assert (msg.is_system, msg.is_user, msg.is_assistant) == (
                role == "system", role == "user", role == "assistant")

    def test_stop_predicates(self) -> None:
        stopped = TextMessage("assistant", "done", "stop")
        tooling = TextMessage("assistant", "calling", "tool")
        plain = TextMessage("assistant", "x")
        assert stopped.is_stopped and not stopped.is_tool_stop
        assert tooling.is_tool_stop and not tooling.is_stopped
        assert not plain.is_stopped and not plain.is_tool_stop

    def test_equality(self) -> None:
        assert TextMessage("user", "a") == TextMessage("user", "a")
        assert TextMessage("user", "a") != TextMessage("user", "b")
        assert TextMessage("user", "a") != "a"


class TestToolMessage:
    def test_attributes(self) -> None:
        tool = ToolMessage(id="call_1", name="get_weather", input={"location": "Paris"})
        assert tool.id == "call_1"
        assert tool.name == "get_weather"
        assert tool.input == {"location": "Paris"}

    def test_nil_input_is_empty_dict(self) -> None:
        assert ToolMessage(id="1", name="x", input=None).input == {}

    def test_to_dict_never_compacted(self) -> None:
        d = ToolMessage(id=None, name="x").to_dict()
        assert d == {"type": "tool", "id": None, "name": "x", "input": {}}
        assert list(d) == ["type", "id", "name", "input"]

    def test_to_json_has_id(self) -> None:
        assert json.loads(ToolMessage("call_1", "x").to_json())["id"] == "call_1"

    def test_from_dict_input(self) -> None:
        tool = ToolMessage.from_dict({"id": "1", "name": "search", "input": {"q": "x"}})
        assert tool.input == {"q": "x"}

    def test_from_dict_arguments_alias(self) -> None:
        tool = ToolMessage.from_dict({"id": "1", "name": "search", "arguments": {"q": "y"}})
        assert tool.input == {"q": "y"}

    def test_from_dict_missing_input(self) -> None:
        assert ToolMessage.from_dict({"id": "1", "name": "search"}).input == {}

    def test_is_not_a_message(self) -> None:
        tool = ToolMessage("1", "x")
        assert not isinstance(tool, Message)
        assert not hasattr(tool, "is_text")

    def test_round_trip(self) -> None:
        tool = ToolMessage("call_1", "get_weather", {"location": "Paris"})
        assert ToolMessage.from_dict(json.loads(tool.to_json())) == tool


# --------------------------------------------------------------------------------------------
# user_message_test.rb


class TestUserMessage:
    def test_content_and_defaults(self) -> None:
        msg = UserMessage("Help me with billing")
        assert msg.content == "Help me with billing"
        assert msg.metadata == {}
        assert msg.session_id is None
        assert msg.system_prompt is None

    def test_metadata_lookup(self) -> None:
        msg = UserMessage("x", metadata={"user_id": "user_123", "priority": "high"})
        assert msg.metadata["user_id"] == "user_123"
        assert msg.metadata["priority"] == "high"

    def test_custom_fields(self) -> None:
        msg = UserMessage("x", id="custom-id", session_id="thread_123", system_prompt="Be nice")
        assert msg.id == "custom-id"
        assert msg.session_id == "thread_123"
        assert msg.system_prompt == "Be nice"

    def test_to_message(self) -> None:
        text = UserMessage("Hello").to_message()
        assert isinstance(text, TextMessage)
        assert text.role == "user"
        assert text.content == "Hello"

    def test_str(self) -> None:
        assert str(UserMessage("Hello")) == "Hello"

    def test_to_dict(self) -> None:
        msg = UserMessage("Help me with billing", session_id="thread_123", metadata={"user_id": "user_123"},
                          id="0b0e7c1e-6a4c-4c55-9f57-1f7d1c9c2a10", created_at="2024-01-15T10:30:00+00:00")
        d = msg.to_dict()
        assert d == {
            "content": "Help me with billing",
            "session_id": "thread_123",
            "metadata": {"user_id": "user_123"},
            "id": "0b0e7c1e-6a4c-4c55-9f57-1f7d1c9c2a10",
            "created_at": "2024-01-15T10:30:00Z",
        }
        assert list(d) == ["content", "session_id", "metadata", "id", "created_at"]

    def test_to_dict_omits_nil_keeps_empty_metadata(self) -> None:
        d = UserMessage("x").to_dict()
        assert "session_id" not in d
        assert "system_prompt" not in d
        assert d["metadata"] == {}
        assert d["content"] == "x"

    def test_from_dict(self) -> None:
        msg = UserMessage.from_({"content": "Hi", "session_id": "s1"})
        assert msg.content == "Hi"
        assert msg.session_id == "s1"

    def test_from_string(self) -> None:
        msg = UserMessage.from_("Hello")
        assert isinstance(msg, UserMessage)
        assert msg.content == "Hello"

    def test_from_user_message_returns_same_object(self) -> None:
        msg = UserMessage("x")
        assert UserMessage.from_(msg) is msg
        assert UserMessage.coerce(msg) is msg

    def test_from_text_message(self) -> None:
        assert UserMessage.from_(TextMessage("user", "from text")).content == "from text"

    def test_from_other_uses_str(self) -> None:
        assert UserMessage.from_(123).content == "123"

    def test_from_dict_with_all_fields(self) -> None:
        data = {"content": "Full", "session_id": "s", "system_prompt": "sp", "metadata": {"k": "v"},
                "id": "my-id"}
        msg = UserMessage.coerce(data)
        assert (msg.content, msg.session_id, msg.system_prompt, msg.metadata, msg.id) == (
            "Full", "s", "sp", {"k": "v"}, "my-id")

    def test_new_with_non_string(self) -> None:
        assert UserMessage(123).content == "123"

    def test_to_json_parses(self) -> None:
        parsed = json.loads(UserMessage("Hi", metadata={"a": 1}).to_json())
        assert parsed["content"] == "Hi"
        assert parsed["metadata"] == {"a": 1}

    def test_id_is_uuid4(self) -> None:
        assert uuid.UUID(UserMessage("x").id).version == 4

    def test_created_at_set(self) -> None:
        msg = UserMessage("x")
        assert isinstance(msg.created_at, datetime)
        assert msg.created_at.tzinfo is not None
        assert abs((datetime.now(UTC) - msg.created_at).total_seconds()) < 5

    def test_json_round_trip(self) -> None:
        msg = UserMessage("Help ✓", session_id="t", system_prompt="sp", metadata={"n": [1, 2]})
        assert UserMessage.from_dict(json.loads(msg.to_json())) == msg


# --------------------------------------------------------------------------------------------
# time helpers


def test_format_time_utc_z_and_offsets() -> None:
    from datetime import timedelta, timezone

    assert format_time(datetime(2024, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)) == "2024-01-15T10:30:00Z"
    tz = timezone(timedelta(hours=-6))
    assert format_time(datetime(2026, 1, 16, 10, 30, tzinfo=tz)) == "2026-01-16T10:30:00-06:00"
    assert format_time(datetime(2024, 1, 15, 10, 30)) == "2024-01-15T10:30:00Z"  # naive = UTC


def test_parse_time() -> None:
    assert parse_time("2024-01-15T10:30:00Z") == datetime(2024, 1, 15, 10, 30, tzinfo=UTC)
    assert parse_time(1705314600) == datetime(2024, 1, 15, 10, 30, tzinfo=UTC)
    assert parse_time("2026-01-16T10:30:00-06:00").utcoffset() is not None
    with pytest.raises(ValueError):
        parse_time("yesterday")
