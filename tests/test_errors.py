"""Spec 3: error_test.rb / errors_test.rb."""

from __future__ import annotations

import pytest

from workspace import errors
from workspace.errors import (
    AwaitTimeout,
    ConfigurationError,
    Error,
    InferenceError,
    MCPError,
    ProviderError,
    ToolNotFoundError,
    capture,
    deserialize,
    format_error,
    serialize,
)


@pytest.mark.parametrize("cls", [ConfigurationError, ToolNotFoundError, InferenceError, MCPError, AwaitTimeout,
                                 ProviderError])
def test_hierarchy_and_messages(cls: type[Error]) -> None:
    err = cls("boom")
    assert isinstance(err, Error) and isinstance(err, Exception)
    assert str(err) == "boom"
    with pytest.raises(Error):
        raise err


def test_serialize_type_and_message() -> None:
    assert serialize(ValueError("bad")) == {"type": "ValueError", "message": "bad"}
    assert serialize(Error("Wrapper error"))["type"] == "RobotLab::Error"


def test_serialize_backtrace_only_when_asked_and_capped() -> None:
    def deep(n: int) -> None:
        if n == 0:
            raise RuntimeError("deep")
        deep(n - 1)

    try:
        deep(20)
    except RuntimeError as exc:
        assert "backtrace" not in serialize(exc)
        data = serialize(exc, include_backtrace=True)
        assert 0 < len(data["backtrace"]) <= 10
    assert "backtrace" not in serialize(RuntimeError("never raised"), include_backtrace=True)


def test_serialize_cause_recursively() -> None:
    try:
        try:
            raise Exception("Root cause")
        except Exception as root:
            raise Error("Wrapper error") from root
    except Error as exc:
        assert serialize(exc) == {
            "type": "RobotLab::Error",
            "message": "Wrapper error",
            "cause": {"type": "Exception", "message": "Root cause"},
        }
    assert "cause" not in serialize(Error("alone"))


def test_deserialize_known_custom_and_unknown() -> None:
    assert isinstance(deserialize({"type": "RobotLab::MCPError", "message": "x"}), MCPError)
    assert isinstance(deserialize({"type": "ValueError", "message": "x"}), ValueError)
    unknown = deserialize({"type": "Nope::Thing", "message": "m"})
    assert type(unknown) is Exception and str(unknown) == "m"


def test_format_and_capture() -> None:
    assert format_error(Exception("Something failed")) == "[Exception] Something failed"
    assert capture(lambda: 42) == {"data": 42}
    assert capture(lambda: {"nested": [1, 2]}) == {"data": {"nested": [1, 2]}}
    assert capture(lambda: 1 / 0) == {"error": {"type": "ZeroDivisionError", "message": "division by zero"}}

    def lib_error() -> None:
        raise ToolNotFoundError("gone")

    assert capture(lib_error)["error"]["type"] == "RobotLab::ToolNotFoundError"


def test_capture_lets_system_exit_through() -> None:
    def leave() -> None:
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        capture(leave)


def test_provider_error_fields() -> None:
    err = ProviderError("HTTP 429", provider="openai/x", status_code=429, retryable=True)
    assert (err.provider, err.status_code, err.retryable) == ("openai/x", 429, True)
    assert isinstance(err, errors.InferenceError)
