"""RobotResult and Usage: port of RobotLab's result_test.rb (spec 1.2, 2.6)."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from workspace.messages import TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.result import RobotResult, Usage

VECTOR_ID = "5f1c2c7e-2b7a-4d0e-9b7e-2a5d1c3e4f60"
VECTOR_CHECKSUM = "5d3ec496d10cbc7e6483e33f49785505b2292cf6b184006a97cda3c84e183327"


def hello_result(**kwargs: object) -> RobotResult:
    defaults: dict[str, object] = {
        "robot_name": "assistant",
        "output": [TextMessage("assistant", "Hello!", "stop")],
        "created_at": "2024-01-15T10:30:00Z",
        "id": VECTOR_ID,
        "stop_reason": "stop",
    }
    defaults.update(kwargs)
    return RobotResult(**defaults)  # type: ignore[arg-type]


def tool_result(data: object = "42") -> ToolResultMessage:
    return ToolResultMessage(ToolMessage("call_1", "calc", {"expr": "6*7"}), {"data": data})


class TestChecksum:
    def test_spec_test_vector(self) -> None:
        result = hello_result()
        assert result.checksum == VECTOR_CHECKSUM
        exact = ('{"output":[{"type":"text","role":"assistant","content":"Hello!","stop_reason":"stop"}],'
                 '"tool_calls":[],"created_at":1705314600}')
        assert hashlib.sha256(exact.encode()).hexdigest() == VECTOR_CHECKSUM

    def test_non_empty_string(self) -> None:
        checksum = RobotResult("bot", [TextMessage("assistant", "x")]).checksum
        assert isinstance(checksum, str) and len(checksum) == 64

    def test_same_content_same_second_same_checksum(self) -> None:
        a = hello_result(robot_name="one", id="a")
        b = hello_result(robot_name="two", id="b")  # robot_name and id are not part of it
        assert a.checksum == b.checksum

    def test_sub_second_differences_ignored(self) -> None:
        a = hello_result(created_at=datetime(2024, 1, 15, 10, 30, 0, 1000, tzinfo=UTC))
        b = hello_result(created_at=datetime(2024, 1, 15, 10, 30, 0, 999000, tzinfo=UTC))
        assert a.checksum == b.checksum == VECTOR_CHECKSUM

    def test_differs_when_content_differs(self) -> None:
        other = hello_result(output=[TextMessage("assistant", "Bye!", "stop")])
        assert other.checksum != VECTOR_CHECKSUM

    def test_differs_when_second_differs(self) -> None:
        assert hello_result(created_at="2024-01-15T10:30:01Z").checksum != VECTOR_CHECKSUM

    def test_offset_time_same_instant(self) -> None:
        local = datetime(2024, 1, 15, 4, 30, tzinfo=timezone(timedelta(hours=-6)))
        assert hello_result(created_at=local).checksum == VECTOR_CHECKSUM


class TestConstruction:
    def test_defaults(self) -> None:
        result = RobotResult("bot", [TextMessage("assistant", "hi")])
        assert result.tool_calls == []
        assert result.stop_reason is None
        assert result.prompt is None and result.history is None and result.raw is None
        assert result.usage is None and result.duration is None

    def test_tool_calls_keep_content(self) -> None:
        result = RobotResult("bot", [], tool_calls=[tool_result("42")])
        assert result.tool_calls[0].content == {"data": "42"}

    def test_arbitrary_stop_reason_kept(self) -> None:
        assert RobotResult("bot", [], stop_reason="max_tokens").stop_reason == "max_tokens"

    def test_id_is_uuid4(self) -> None:
        assert uuid.UUID(RobotResult("bot", []).id).version == 4

    def test_created_at_auto(self) -> None:
        result = RobotResult("bot", [])
        assert result.created_at.tzinfo is not None
        assert abs((datetime.now(UTC) - result.created_at).total_seconds()) < 5

    def test_output_dicts_normalized(self) -> None:
        result = RobotResult("bot", [{"type": "text", "role": "assistant", "content": "from dict"}])
        assert isinstance(result.output[0], TextMessage)
        assert result.output[0].content == "from dict"

    def test_single_message_wrapped(self) -> None:
        result = RobotResult("bot", TextMessage("assistant", "one"))
        assert len(result.output) == 1

    def test_invalid_output(self) -> None:
        with pytest.raises(ValueError, match="Invalid message: must be Message or dict"):
            RobotResult("bot", [42])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="Invalid message: must be Message or dict"):
            RobotResult("bot", "text")  # type: ignore[arg-type]

    def test_tool_calls_normalization(self) -> None:
        as_dict = tool_result().to_dict()
        result = RobotResult("bot", [], tool_calls=[as_dict])
        assert isinstance(result.tool_calls[0], ToolResultMessage)
        with pytest.raises(ValueError, match="Invalid tool result: must be ToolResultMessage or dict"):
            RobotResult("bot", [], tool_calls=[TextMessage("assistant", "x")])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="Invalid tool result"):
            RobotResult("bot", [], tool_calls=[3])  # type: ignore[list-item]


class TestSerialization:
    def test_export_shape_and_order(self) -> None:
        exported = hello_result().export()
        assert exported == {
            "robot_name": "assistant",
            "output": [{"type": "text", "role": "assistant", "content": "Hello!", "stop_reason": "stop"}],
            "tool_calls": [],
            "created_at": "2024-01-15T10:30:00Z",
            "id": VECTOR_ID,
            "checksum": VECTOR_CHECKSUM,
            "stop_reason": "stop",
        }
        assert list(exported) == ["robot_name", "output", "tool_calls", "created_at", "id", "checksum",
                                  "stop_reason"]

    def test_export_types(self) -> None:
        exported = RobotResult("bot", [TextMessage("assistant", "x")], stop_reason="stop").export()
        assert exported["robot_name"] == "bot"
        assert exported["stop_reason"] == "stop"
        assert isinstance(exported["checksum"], str)
        assert isinstance(exported["created_at"], str)
        assert isinstance(exported["id"], str)

    def test_export_drops_nil_stop_reason(self) -> None:
        assert "stop_reason" not in RobotResult("bot", []).export()

    def test_to_json_is_export(self) -> None:
        result = hello_result()
        assert json.loads(result.to_json()) == result.export()

    def test_to_dict_has_fields(self) -> None:
        d = hello_result().to_dict()
        assert d["robot_name"] == "assistant"
        assert d["stop_reason"] == "stop"
        assert isinstance(d["output"], list)
        assert "prompt" not in d and "history" not in d and "raw" not in d

    def test_to_dict_includes_debug_fields(self) -> None:
        result = hello_result()
        result.prompt = [TextMessage("user", "Hi")]
        result.history = [TextMessage("system", "sys")]
        result.raw = {"provider": "x"}
        d = result.to_dict()
        assert d["prompt"] == [{"type": "text", "role": "user", "content": "Hi"}]
        assert d["history"] == [{"type": "text", "role": "system", "content": "sys"}]
        assert d["raw"] == {"provider": "x"}
        assert list(d)[-3:] == ["prompt", "history", "raw"]
        # to_json stays the export
        assert "prompt" not in json.loads(result.to_json())

    def test_usage_and_duration_after_robotlab_keys(self) -> None:
        result = hello_result(usage=Usage(10, 5, 0.001), duration=1.5)
        data = result.to_dict()
        assert list(data)[-2:] == ["usage", "duration"]
        assert data["usage"] == {"input_tokens": 10, "output_tokens": 5, "cost": 0.001}
        assert data["duration"] == 1.5
        assert data["checksum"] == VECTOR_CHECKSUM  # additions do not change the checksum
        # to_json is the spec's export alone: no additions, whatever the result carries
        result.output_data = {"a": 1}
        result.delegated_by = "boss"
        assert json.loads(result.to_json()) == result.export()
        assert not {"usage", "duration", "output_data", "delegated_by"} & set(json.loads(result.to_json()))
        assert {"usage", "duration", "output_data", "delegated_by"} <= set(result.to_dict())

    def test_from_dict_string_keys(self) -> None:
        result = RobotResult.from_dict({
            "robot_name": "bot",
            "output": [{"type": "text", "role": "assistant", "content": "Hi"}],
            "created_at": "2024-01-15T10:30:00Z",
            "stop_reason": "stop",
        })
        assert result.robot_name == "bot"
        assert isinstance(result.output[0], TextMessage)
        assert result.created_at == datetime(2024, 1, 15, 10, 30, tzinfo=UTC)

    def test_from_dict_tolerates_missing_fields(self) -> None:
        result = RobotResult.from_dict({"robot_name": "bot", "output": []})
        assert result.id and result.created_at and result.checksum

    def test_from_dict_ignores_stored_checksum(self) -> None:
        data = hello_result().export()
        data["checksum"] = "bogus"
        assert RobotResult.from_dict(data).checksum == VECTOR_CHECKSUM

    def test_from_dict_restores_debug_fields(self) -> None:
        result = hello_result(usage={"input_tokens": 3, "output_tokens": 4}, duration=0.25)
        result.prompt = [TextMessage("user", "Hi")]
        result.raw = {"n": 1}
        again = RobotResult.from_dict(json.loads(json.dumps(result.to_dict())))
        assert again.prompt == [TextMessage("user", "Hi")]
        assert again.raw == {"n": 1}
        assert again.usage == Usage(3, 4)
        assert again.duration == 0.25
        assert again == result

    def test_json_round_trip(self) -> None:
        result = RobotResult(
            "bot",
            [ToolCallMessage(tools=[ToolMessage("call_1", "calc", {"expr": "6*7"})]),
             TextMessage("assistant", "42 ✓", "stop")],
            tool_calls=[tool_result({"n": 42})],
            stop_reason="stop",
        )
        again = RobotResult.from_dict(json.loads(result.to_json()))
        assert again == result
        assert again.checksum == result.checksum
        assert again.id == result.id
        assert again.created_at == result.created_at


class TestHelpers:
    def test_last_text_content(self) -> None:
        result = RobotResult("bot", [TextMessage("assistant", "First"), ToolCallMessage(tools=[]),
                                     TextMessage("assistant", "Last")])
        assert result.last_text_content == "Last"

    def test_last_text_content_none(self) -> None:
        assert RobotResult("bot", [ToolCallMessage(tools=[])]).last_text_content is None
        assert RobotResult("bot", []).last_text_content is None

    def test_has_tool_calls(self) -> None:
        assert RobotResult("bot", [ToolCallMessage(tools=[])]).has_tool_calls
        assert RobotResult("bot", [TextMessage("assistant", "x")], tool_calls=[tool_result()]).has_tool_calls
        assert not RobotResult("bot", [TextMessage("assistant", "x")]).has_tool_calls

    def test_is_stopped(self) -> None:
        assert RobotResult("bot", [TextMessage("assistant", "x", "stop")]).is_stopped
        # no tool calls and nil stop reason
        assert RobotResult("bot", [TextMessage("assistant", "x")]).is_stopped
        # a tool call in the output
        assert not RobotResult("bot", [ToolCallMessage(tools=[])]).is_stopped
        # nil stop reason but tool results present
        assert not RobotResult("bot", [TextMessage("assistant", "x")], tool_calls=[tool_result()]).is_stopped
        # last says "stop" even with tool calls earlier
        assert RobotResult("bot", [ToolCallMessage(tools=[]), TextMessage("assistant", "x", "stop")]).is_stopped
        assert not RobotResult("bot", []).is_stopped


class TestUsage:
    def test_add(self) -> None:
        assert Usage(1, 2) + Usage(3, 4) == Usage(4, 6, None)
        assert Usage(1, 2, 0.5) + Usage(3, 4) == Usage(4, 6, 0.5)
        assert (Usage(1, 2, 0.5) + Usage(0, 0, 0.25)).cost == 0.75
        assert Usage(1, 2).total_tokens == 3

    def test_dict_round_trip(self) -> None:
        assert Usage(1, 2).to_dict() == {"input_tokens": 1, "output_tokens": 2}
        assert Usage.from_dict(Usage(1, 2, 0.1).to_dict()) == Usage(1, 2, 0.1)
        assert Usage.from_dict({"prompt_tokens": 7, "completion_tokens": 8}) == Usage(7, 8)
        assert Usage.from_dict(None) == Usage()
