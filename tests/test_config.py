"""Configuration layers and errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace import paths
from workspace.config import DEFAULTS, load_config
from workspace.errors import ConfigurationError
from workspace.trust import trust


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    cfg = load_config(env={})
    assert cfg.llm.model is None and cfg.agent.max_turns == 20
    assert cfg.agent.tools == "all" and cfg.review.mode == "review" and cfg.ui.theme == "light"
    assert cfg.get("llm.timeout") == DEFAULTS["llm"]["timeout"]


def test_layers_in_order(tmp_path: Path) -> None:
    write(paths.user_config_file(), "llm:\n  model: user/model\n  temperature: 0.1\nagent:\n  max_turns: 5\n")
    project = tmp_path / "proj"
    write(paths.project_config_file(project), "llm:\n  model: project/model\n")
    env = {"ROBOT_LAB_AGENT__MAX_TURNS": "7"}
    cfg = load_config(project, env=env, overrides={"ui": {"theme": "dark"}})
    assert cfg.llm.model == "project/model"
    assert cfg.llm.temperature == 0.1
    assert cfg.agent.max_turns == 7
    assert cfg.ui.theme == "dark"
    assert cfg.source_of("llm.model") == str(paths.project_config_file(project))
    assert cfg.source_of("agent.max_turns") == "ROBOT_LAB_AGENT__MAX_TURNS"
    assert cfg.source_of("ui.theme") == "argument"
    assert cfg.source_of("llm.timeout") == "default"


def test_robotlab_ruby_llm_section_alias() -> None:
    assert load_config(env={"ROBOT_LAB_RUBY_LLM__MODEL": "gpt-4o"}).llm.model == "gpt-4o"


def test_bad_value_names_file_and_key() -> None:
    write(paths.user_config_file(), "llm:\n  temperature: hot\n")
    with pytest.raises(ConfigurationError) as info:
        load_config(env={})
    message = str(info.value)
    assert str(paths.user_config_file()) in message and "llm.temperature" in message and "'hot'" in message


def test_unknown_key_lists_allowed_keys(tmp_path: Path) -> None:
    project = tmp_path / "p"
    write(paths.project_config_file(project), "review:\n  mode: review\n  colour: blue\n")
    with pytest.raises(ConfigurationError, match=r"unknown key 'review.colour'; allowed keys: mode"):
        load_config(project, env={})


def test_bad_enum_from_environment_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="ROBOT_LAB_REVIEW__MODE: 'review.mode' = 'sometimes'"):
        load_config(env={"ROBOT_LAB_REVIEW__MODE": "sometimes"})


def test_malformed_yaml_names_file_and_line() -> None:
    write(paths.user_config_file(), "llm:\n  model: [unclosed\n")
    with pytest.raises(ConfigurationError, match=r"config.yaml: the configuration file is not valid YAML at line"):
        load_config(env={})


def test_non_mapping_file() -> None:
    write(paths.user_config_file(), "- just\n- a list\n")
    with pytest.raises(ConfigurationError, match="must hold a mapping"):
        load_config(env={})


def test_mcp_servers_merge_by_name_and_keep_unknown_keys(tmp_path: Path) -> None:
    write(paths.user_config_file(), "mcpServers:\n  a: {command: one, custom: kept}\n  b: {url: 'http://x'}\n")
    project = tmp_path / "p"
    write(paths.project_config_file(project), "mcp_servers:\n  a: {command: two}\n")
    trust(project)
    cfg = load_config(project, env={})
    assert cfg.mcp_servers == {"a": {"command": "two"}, "b": {"url": "http://x"}}
    cfg2 = load_config(env={})
    assert cfg2.mcp_servers["a"]["custom"] == "kept"


def test_api_keys_are_not_configuration() -> None:
    write(paths.user_config_file(), "llm:\n  api_key: sk-secret\n")
    with pytest.raises(ConfigurationError, match="unknown key 'llm.api_key'"):
        load_config(env={})


# -- each layer is checked where it was written: file and line, or the variable -----------------------
def test_an_unknown_key_names_the_line_and_the_closest_key() -> None:
    user = write(paths.user_config_file(), "llm:\n  model: m\n  temprature: 0.3\n")
    with pytest.raises(ConfigurationError) as info:
        load_config(env={})
    assert str(info.value) == (
        f"Invalid configuration:\n  {user}:3: unknown key 'llm.temprature'; allowed keys: model, api_base, "
        "temperature, top_p, max_tokens, timeout, first_token_timeout, idle_timeout, max_wait, max_retries, "
        "max_concurrent_requests, provider, litellm_process, tool_choice, max_answer_chars, max_tool_result_chars, context_window, "
        "context_policy, compaction_threshold, local_max_tokens_share, compaction_model, vision, embedding_model, "
        "embedding_api_base — did you mean 'temperature'?")


def test_values_out_of_range_name_the_file_and_line(tmp_path: Path) -> None:
    project = tmp_path / "p"
    config_file = write(paths.project_config_file(project), "agent:\n  max_turns: 0\nllm:\n  top_p: 3\n")
    with pytest.raises(ConfigurationError) as info:
        load_config(project, env={})
    message = str(info.value)
    assert f"{config_file}:2: 'agent.max_turns' = 0: out of range: it must be at least 1" in message
    assert f"{config_file}:4: 'llm.top_p' = 3: out of range: it must be at most 1" in message


def test_environment_variables_are_named_with_the_variable_that_would_work() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(env={"ROBOT_LAB_LLM__TEMPRATURE": "0.3", "ROBOT_LAB_LMM__MODEL": "x",
                         "ROBOT_LAB_LLM__TEMPERATURE": "7"})
    message = str(info.value)
    assert "ROBOT_LAB_LLM__TEMPRATURE: unknown key 'llm.temprature'" in message
    assert "did you mean ROBOT_LAB_LLM__TEMPERATURE?" in message
    assert "ROBOT_LAB_LMM__MODEL: unknown key 'lmm'" in message and "did you mean ROBOT_LAB_LLM__MODEL?" in message
    assert "ROBOT_LAB_LLM__TEMPERATURE: 'llm.temperature' = 7: out of range: it must be at most 2" in message


def test_arguments_are_checked_too() -> None:
    with pytest.raises(ConfigurationError, match="argument: 'agent.tools' = 5: must be all, none, inherit or a list"):
        load_config(env={}, overrides={"agent": {"tools": 5}})
