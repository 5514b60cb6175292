"""Keys go only where the user sent them, as fault cases.

- A folder robot's, network's or trusted folder configuration's ``api_base`` gets no key of the user's
  (environment or keyring) unless the user configured that same address; both providers, the
  library and the command line.
- A folder robot named like a user's or shipped robot shows as the folder's.
- ``mcp import --write`` writes no secret in clear.
- Without a keyring, Settings keeps a key in a 0600 file (see tests/ui/test_settings_keys.py for the window).
- A missing key is reported before any provider library loads.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from faultkit import ROOT

pytestmark = pytest.mark.timeout(120)

USER_KEY = "sk-user-own-key-0123456789abcdef"
KEYRING_KEY = "sk-user-keyring-key-0123456789ab"
KINDS = ["lean", "litellm"]


class MemoryKeyring:
    """An in-process keyring (the keyring package's backend interface, the calls secrets.py makes)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture
def servers() -> Iterator[tuple[FakeLLMServer, FakeLLMServer]]:
    with FakeLLMServer(default_text="user's") as mine, FakeLLMServer(default_text="folder's") as theirs:
        yield mine, theirs


def sent_keys(server: FakeLLMServer) -> list[str]:
    return [r.headers.get("authorization", "") + r.headers.get("x-api-key", "")
            for r in server.request_log if r.method == "POST"]


def folder_with(tmp_path: Path, *, robot: str | None = None, config: str | None = None,
                network: str | None = None) -> Path:
    folder = tmp_path / "project"
    (folder / ".robotlab" / "robots").mkdir(parents=True)
    if robot is not None:
        (folder / ".robotlab" / "robots" / "leaky.md").write_text(robot, encoding="utf-8")
    if config is not None:
        (folder / ".robotlab" / "config.yaml").write_text(config, encoding="utf-8")
    if network is not None:
        (folder / ".robotlab" / "networks").mkdir(parents=True)
        (folder / ".robotlab" / "networks" / "leaky.yaml").write_text(network, encoding="utf-8")
    return folder


def user_config(text: str) -> None:
    from workspace import paths

    path = paths.user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def robot_file(api_base: str, *, name: str = "leaky", model: str = "openai/fake") -> str:
    return f"---\nname: {name}\nmodel: {model}\napi_base: {api_base}\n---\nYou answer.\n"


async def answer(robot: Any) -> str:
    result = await asyncio.wait_for(robot.arun("hi"), 30)
    return str(result.last_text_content)


@pytest.fixture
def user_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", USER_KEY)
    return USER_KEY


@pytest.fixture
def keyring_key(monkeypatch: pytest.MonkeyPatch) -> str:
    from workspace import secrets

    ring = MemoryKeyring()
    ring.set_password(secrets.SERVICE, "OPENAI_API_KEY", KEYRING_KEY)
    monkeypatch.setattr(secrets, "_keyring", lambda: ring)
    return KEYRING_KEY


def provider_choice(kind: str) -> str:
    return "llm:\n  provider: litellm\n" if kind == "litellm" else "llm:\n  provider: auto\n"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_folder_robots_api_base_gets_no_user_key(matrix: Any, tmp_path: Path, kind: str, user_key: str,
                                                         keyring_key: str,
                                                         servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", f"folder robot's api_base, untrusted folder ({kind})")
    _, theirs = servers
    user_config(provider_choice(kind))
    folder = folder_with(tmp_path, robot=robot_file(theirs.base_url))
    from workspace.catalog import load_robot

    robot = load_robot("leaky", folder=folder)
    assert await answer(robot) == "folder's"
    sent = sent_keys(theirs)
    assert sent and not any(USER_KEY in s or KEYRING_KEY in s for s in sent), sent


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("mine", "folders"), [("/", ""), ("/v1", ""), ("", "/v1/")])
async def test_the_same_api_base_in_the_users_configuration_gets_the_key(
        matrix: Any, tmp_path: Path, kind: str, mine: str, folders: str, user_key: str,
        servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", f"folder robot's api_base the user also configured gets the key ({kind}, {mine!r} vs "
                        f"{folders!r})")
    _, theirs = servers
    # Spelt with a slash or a /v1 on either side: the same server.
    user_config(provider_choice(kind) + f"  api_base: {theirs.base_url}{mine}\n")
    folder = folder_with(tmp_path, robot=robot_file(theirs.base_url + folders))
    from workspace.catalog import load_robot

    assert await answer(load_robot("leaky", folder=folder)) == "folder's"
    assert sent_keys(theirs) == [f"Bearer {USER_KEY}"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_trusted_folders_llm_api_base_gets_no_user_key(
        matrix: Any, tmp_path: Path, kind: str, user_key: str,
        servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", f"trusted folder configuration's llm.api_base ({kind})")
    mine, theirs = servers
    user_config(provider_choice(kind) + f"  model: openai/fake\n  api_base: {mine.base_url}\n")
    folder = folder_with(tmp_path, config=f"llm:\n  api_base: {theirs.base_url}\n")
    from workspace import trust
    from workspace.config import load_config
    from workspace.robot import Robot

    trust.trust(folder)
    config = load_config(folder)
    assert config.get("llm.api_base") == theirs.base_url  # trusted: the folder's server is used ...
    robot = Robot("plain", system_prompt="You answer.", folder=folder, config=config)
    assert await answer(robot) == "folder's"
    assert sent_keys(theirs) and not any(USER_KEY in s for s in sent_keys(theirs))  # ... without the key
    assert not mine.request_log


@pytest.mark.parametrize("kind", KINDS)
async def test_a_folder_networks_api_base_gets_no_user_key(
        matrix: Any, tmp_path: Path, kind: str, user_key: str,
        servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", f"folder network's api_base ({kind})")
    _, theirs = servers
    user_config(provider_choice(kind))
    folder = folder_with(tmp_path, network=textwrap.dedent(f"""\
        name: leaky
        robots:
          asker:
            system_prompt: You answer.
            model: openai/fake
            api_base: {theirs.base_url}
        tasks:
          ask:
            robot: asker
        """))
    from workspace.config import load_config
    from workspace.network.loader import load_network

    network = load_network(folder / ".robotlab" / "networks" / "leaky.yaml", folder=folder, config=load_config(folder))
    await asyncio.wait_for(network.arun("hi"), 30)
    sent = sent_keys(theirs)
    assert sent and not any(USER_KEY in s for s in sent), sent


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workspace", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=90)


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("ROBOT_LAB_")}
    env.update(ROBOTLAB_HOME=str(home), PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests' / 'faults'}", **extra)
    return env


def test_robotlab_run_sends_no_key_to_a_folder_robots_api_base_unless_given_on_the_command_line(
        matrix: Any, tmp_path: Path, robotlab_home: Path, servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", "robotlab run: folder robot's api_base; --api-base of the same address")
    _, theirs = servers
    folder = folder_with(tmp_path, robot=robot_file(theirs.base_url))
    env = cli_env(robotlab_home, OPENAI_API_KEY=USER_KEY)
    done = cli("run", "leaky", "hi", "--no-record", "--folder", str(folder), cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert "folder's" in done.stdout
    assert sent_keys(theirs) and not any(USER_KEY in s for s in sent_keys(theirs))
    done = cli("run", "leaky", "hi", "--no-record", "--folder", str(folder), "--api-base", theirs.base_url,
               cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert sent_keys(theirs)[-1] == f"Bearer {USER_KEY}"  # the user sent it there themselves


LIBRARY_RUN = textwrap.dedent("""
    import asyncio, sys
    from workspace.robot import Robot

    robot = Robot("asker", system_prompt="You answer.", model=sys.argv[1])
    try:
        result = asyncio.run(robot.arun("hi"))
        print("ANSWER", result.stop_reason)
    except Exception as exc:
        print("ERROR", exc)
    print("LITELLM LOADED" if "litellm" in sys.modules else "LITELLM NOT LOADED")
""")


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
def test_a_missing_key_is_reported_before_litellm_loads_in_the_library(matrix: Any, tmp_path: Path,
                                                                       robotlab_home: Path, model: str) -> None:
    matrix.case("keys", f"missing key, library run of {model}: said before litellm loads")
    script = tmp_path / "run.py"
    script.write_text(LIBRARY_RUN, encoding="utf-8")
    env = cli_env(robotlab_home, PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    done = subprocess.run([sys.executable, str(script), model], env=env, capture_output=True, text=True, timeout=90)
    var = "OPENAI_API_KEY" if model.startswith("openai") else "ANTHROPIC_API_KEY"
    assert f"no API key. Set {var}" in done.stdout, done.stdout + done.stderr
    assert "LITELLM NOT LOADED" in done.stdout, done.stdout


def test_a_missing_key_is_reported_before_litellm_loads_on_the_command_line(matrix: Any, tmp_path: Path,
                                                                            robotlab_home: Path) -> None:
    matrix.case("keys", "missing key, robotlab run --model openai/gpt-4o-mini: said before litellm loads")
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import atexit, sys
        atexit.register(lambda: sys.__stderr__.write("LITELLM LOADED\\n" if "litellm" in sys.modules else ""))
        from workspace.cli import main
        sys.exit(main(sys.argv[1:]))
    """), encoding="utf-8")
    env = cli_env(robotlab_home, PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    done = subprocess.run([sys.executable, str(probe), "run", "assistant", "hi", "--model", "openai/gpt-4o-mini",
                           "--no-record"], env=env, capture_output=True, text=True, timeout=90, cwd=tmp_path)
    assert done.returncode != 0
    assert "OPENAI_API_KEY" in done.stderr, done.stderr
    assert "LITELLM LOADED" not in done.stderr
    assert "Traceback" not in done.stderr


async def test_a_missing_key_is_reported_before_litellms_process_starts(matrix: Any) -> None:
    matrix.case("keys", "missing key in the window (litellm in a process of its own): said before it starts")
    from workspace.errors import ProviderError
    from workspace.providers import registry
    from workspace.providers.litellm_process import SeparateLiteLLMProvider, litellm_process

    registry.set_litellm_process("separate")
    provider = registry.provider_for("anthropic/claude-sonnet-4-5")
    assert isinstance(provider, SeparateLiteLLMProvider)
    running_before = litellm_process().running
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as caught:
        async for _ in provider.stream(system=None, messages=[], tools=[], settings={}):
            pass
    assert caught.value.reason == "auth"
    assert litellm_process().running == running_before


def test_without_a_keyring_a_saved_key_is_kept_in_a_file_only_the_user_reads(matrix: Any, monkeypatch: pytest.MonkeyPatch,
                                                                             user_key: str) -> None:
    matrix.case("keys", "no OS keyring: Settings keeps the key in a 0600 file of the config folder")
    from workspace import paths, secrets

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr(secrets, "_keyring", lambda: None)
    old = os.umask(0o022)
    try:
        where = secrets.save_key("OPENAI_API_KEY", USER_KEY)
    finally:
        os.umask(old)
    path = secrets.keys_file()
    assert path.parent == paths.config_dir() and str(path) in where
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secrets.get_key("OPENAI_API_KEY") == USER_KEY
    assert "OPENAI_API_KEY" not in os.environ  # read for the call, never put into commands' environment
    assert USER_KEY not in secrets.redact(f"echo {USER_KEY}")
    secrets.delete_key("OPENAI_API_KEY")
    assert secrets.get_key("OPENAI_API_KEY") is None


SHADOW = "---\nname: assistant\ndescription: the folder's own\n---\nYou are the folder's robot.\n"


def test_a_folder_robot_named_like_a_shipped_one_is_the_folders_not_a_replacement(
        matrix: Any, tmp_path: Path, robotlab_home: Path) -> None:
    matrix.case("keys", "folder robot named like the shipped 'assistant': listed, run and shown as the folder's")
    folder = folder_with(tmp_path)
    (folder / ".robotlab" / "robots" / "assistant.md").write_text(SHADOW, encoding="utf-8")
    from workspace.catalog import find_robot_file, list_robots, load_robot

    robots = {r.name: r for r in list_robots(folder)}
    assert robots["assistant"].source == "shipped"
    assert robots["assistant · this folder"].source == "project"
    assert find_robot_file("assistant", folder) == robots["assistant"].path
    assert load_robot("assistant", folder=folder).name == "assistant"
    theirs = load_robot("assistant · this folder", folder=folder)
    assert theirs.name == "assistant · this folder" and "folder's robot" in str(theirs.template.body)

    env = cli_env(robotlab_home)
    listed = cli("--folder", str(folder), "robots", "list", cwd=folder, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = {line.split("  ")[0].strip(): line for line in listed.stdout.splitlines()}
    assert "shipped" in lines["assistant"] and "project" in lines["assistant · this folder"]
    plain = cli("run", "assistant", "hi", "--no-record", "--folder", str(folder), cwd=folder, env=env)
    assert plain.returncode == 0, plain.stderr
    assert "● assistant · " in plain.stdout and "this folder" not in plain.stdout
    folders = cli("run", "assistant · this folder", "hi", "--no-record", "--folder", str(folder), cwd=folder, env=env)
    assert folders.returncode == 0, folders.stderr
    assert "● assistant · this folder · " in folders.stdout


def test_a_user_robot_named_like_a_shipped_one_still_replaces_it(matrix: Any, tmp_path: Path) -> None:
    matrix.case("keys", "the user's own robot named 'assistant' replaces the shipped one (theirs to choose)")
    from workspace import paths
    from workspace.catalog import list_robots

    robots_dir = paths.config_dir() / "robots"
    robots_dir.mkdir(parents=True)
    (robots_dir / "assistant.md").write_text(SHADOW, encoding="utf-8")
    robots = {r.name: r for r in list_robots(folder_with(tmp_path))}
    assert robots["assistant"].source == "user"
    assert not any(name.endswith("this folder") for name in robots)


ENV_SECRET = "ghp_imported-env-secret-0123456789"
HEADER_SECRET = "imported-header-token-0123456789"


def test_mcp_import_write_keeps_secrets_out_of_the_file_and_the_preview(matrix: Any, tmp_path: Path,
                                                                        robotlab_home: Path) -> None:
    matrix.case("keys", "robotlab mcp import: preview masks env and headers; --write keeps them out of a 0600 file")
    import json

    client = tmp_path / "claude_desktop_config.json"
    client.write_text(json.dumps({"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": ENV_SECRET, "LOG_LEVEL": "debug", "FROM_ENV": "${HOME}"}},
        "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": f"Bearer {HEADER_SECRET}",
                                                                     "X-Team": HEADER_SECRET}},
    }}), encoding="utf-8")
    keyring_file = tmp_path / "keyring.json"
    env = cli_env(robotlab_home, PYTHON_KEYRING_BACKEND="filekeyring.FileKeyring", FILE_KEYRING=str(keyring_file))
    preview = cli("mcp", "import", str(client), cwd=tmp_path, env={**env, "PYTHONIOENCODING": "utf-8"})
    assert preview.returncode == 0, preview.stderr
    assert ENV_SECRET not in preview.stdout and HEADER_SECRET not in preview.stdout
    assert "***" in preview.stdout and "${HOME}" in preview.stdout

    target = robotlab_home / "config" / "config.yaml"
    done = cli("mcp", "import", str(client), "--write", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    text = target.read_text(encoding="utf-8")
    assert ENV_SECRET not in text and HEADER_SECRET not in text and "debug" not in text
    assert "${keyring:MCP_GITHUB_ENV_GITHUB_PERSONAL_ACCESS_TOKEN}" in text and "${HOME}" in text
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    stored = json.loads(keyring_file.read_text(encoding="utf-8"))
    assert stored["robotlab/MCP_GITHUB_ENV_GITHUB_PERSONAL_ACCESS_TOKEN"] == ENV_SECRET
    assert stored["robotlab/MCP_REMOTE_HEADER_AUTHORIZATION"] == f"Bearer {HEADER_SECRET}"
    assert ENV_SECRET not in done.stdout + done.stderr and HEADER_SECRET not in done.stdout + done.stderr

    resolve = ("from workspace.config import load_config; from workspace.mcp.config import parse_server;"
               "spec = parse_server('github', load_config().mcp_servers['github']);"
               f"print(spec.env['GITHUB_PERSONAL_ACCESS_TOKEN'] == {ENV_SECRET!r})")
    back = subprocess.run([sys.executable, "-c", resolve], env=env, capture_output=True, text=True, timeout=60)
    assert back.stdout.strip() == "True", back.stderr  # the server still gets its value, from the keyring


def test_a_key_kept_by_settings_goes_to_the_users_own_server_and_never_into_the_environment(
        matrix: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    matrix.case("keys", "a Settings key (keyring or file) reaches the user's configured server, not os.environ")
    from workspace import secrets
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    monkeypatch.setattr(secrets, "_keyring", lambda: None)
    secrets.save_key("OPENAI_API_KEY", USER_KEY)
    mine = OpenAICompatibleProvider("openai/fake", api_base="https://gateway.example.com/v1")
    assert mine._key() == USER_KEY
    folder = OpenAICompatibleProvider("openai/fake", api_base="https://gateway.example.com/v1", user_key=False)
    assert folder._key() != USER_KEY
    assert "OPENAI_API_KEY" not in os.environ


@pytest.mark.parametrize("kind", KINDS)
async def test_the_windows_thread_of_a_folder_robot_sends_no_user_key(
        matrix: Any, tmp_path: Path, kind: str, user_key: str,
        servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", f"the window's thread of a folder robot (litellm in its own process) ({kind})")
    from workspace.providers import registry
    from workspace.session import Workspace

    _, theirs = servers
    user_config(provider_choice(kind))
    folder = folder_with(tmp_path, robot=robot_file(theirs.base_url))
    registry.set_litellm_process("separate")  # as the window runs it
    workspace = Workspace(folder=folder, db_path=tmp_path / "threads.db")
    try:
        session = workspace.new_thread("leaky")
        run = session.send("hi")
        await asyncio.wait_for(run.wait(), 60)
    finally:
        await workspace.aclose()
    sent = sent_keys(theirs)
    assert sent and not any(USER_KEY in s for s in sent), sent


@pytest.mark.parametrize("kind", KINDS)
async def test_a_folder_server_that_wants_a_key_is_refused_with_the_fix(
        matrix: Any, tmp_path: Path, kind: str, user_key: str,
        servers: tuple[FakeLLMServer, FakeLLMServer]) -> None:
    matrix.case("keys", f"folder robot's server answers 401: the message says how to send the key there ({kind})")
    from fakes.llm_server import Reply

    from workspace import events as ev

    _, theirs = servers
    theirs.enqueue(Reply.error(401, "Incorrect API key provided", times=5))
    user_config(provider_choice(kind))
    folder = folder_with(tmp_path, robot=robot_file(theirs.base_url))
    from workspace.catalog import load_robot

    run = load_robot("leaky", folder=folder).stream("hi")
    failed = None
    async for event in run:
        if isinstance(event, ev.RunFailed):
            failed = event
    assert failed is not None
    assert "set by a file in the opened folder" in str(failed.error), failed.error
    assert "same api_base in your own configuration" in str(failed.error)
    assert not any(USER_KEY in s for s in sent_keys(theirs))
