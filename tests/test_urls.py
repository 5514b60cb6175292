"""Which addresses are one server, and which may get the user's API keys (workspace.urls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace.config import Config
from workspace.urls import key_may_go, normal_base, user_api_bases


@pytest.mark.parametrize("spelling", ["http://127.0.0.1:8080", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1",
                                      "http://127.0.0.1:8080/v1/", "HTTP://127.0.0.1:8080/V1",
                                      "http://me:secret@127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1?api-key=k"])
def test_one_server_spelt_many_ways_is_one_address(spelling: str) -> None:
    assert normal_base(spelling) == "http://127.0.0.1:8080"


def test_a_different_path_or_port_is_another_address() -> None:
    assert normal_base("http://h:8080/openai/v1") == "http://h:8080/openai"
    assert normal_base("http://h:8080/v2") == "http://h:8080/v2"
    assert normal_base("http://h:8081/v1") != normal_base("http://h:8080/v1")


def user_config(base: str, **sources: str) -> Config:
    return Config(data={"llm": {"api_base": base}}, sources=sources)


def test_the_users_own_address_gets_the_key_with_or_without_v1() -> None:
    config = user_config("http://127.0.0.1:8080")
    assert user_api_bases(config) == {"http://127.0.0.1:8080"}
    assert key_may_go("http://127.0.0.1:8080/v1", config=config, folder_written=True)
    config = user_config("http://127.0.0.1:8080/v1/")
    assert key_may_go("http://127.0.0.1:8080", config=config, folder_written=True)
    assert not key_may_go("http://127.0.0.1:9090/v1", config=config, folder_written=True)


def test_the_folders_address_gets_no_key_however_it_is_spelt(tmp_path: Path) -> None:
    folder_file = tmp_path / ".robotlab" / "config.yaml"
    config = Config(data={"llm": {"api_base": "http://their.example/v1"}},
                    sources={"llm.api_base": str(folder_file)}, folder=tmp_path)
    assert user_api_bases(config) == set()
    for spelling in ("http://their.example/v1", "http://their.example", "http://x:y@THEIR.example/v1/"):
        assert not key_may_go(spelling, config=config)
    assert key_may_go(None, config=config)  # the provider's own address
    assert key_may_go("http://elsewhere.example/v1", config=config)
