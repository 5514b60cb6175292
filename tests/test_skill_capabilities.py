"""A skill's ``capabilities`` enforced per script in the real sandbox (bubblewrap): no network unless
``network: true`` (and the user's ``sandbox.network`` allows it), only ``fs_read`` / ``fs_write`` paths of the folder
there and only the ``fs_write`` ones writable (their writes proposed as any command's), ``timeout`` as the call's
time limit, never above the user's ceiling; what a script tried beyond them is explained to the model."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from fakes.script_folders import require_sandbox, skill_folder

from workspace import AgentSkill
from workspace.agent_skills import skill_script_tools
from workspace.changes import ChangeSet
from workspace.config import load_config
from workspace.tools.base import ToolContext
from workspace.tools.capabilities import Ceiling, script_limits
from workspace.tools.script import ScriptToolError

require_sandbox()

pytestmark = pytest.mark.timeout(180)

# Connects to the loopback server with bash's /dev/tcp (no curl needed): prints what happened.
CONNECT = """#!/bin/bash
if exec 3<>/dev/tcp/127.0.0.1/$1; then
  printf 'GET /v1/models HTTP/1.0\\r\\n\\r\\n' >&3
  head -c 12 <&3; echo; echo connected
else
  echo refused; exit 7
fi
"""
WRITE = """#!/bin/sh
mkdir -p out && echo made > out/result.txt && echo "wrote out"
echo sneaky > notes.txt && echo "wrote notes" || { echo "notes refused"; exit 3; }
"""
READ = """#!/bin/sh
cat docs/readme.txt; cat secret.txt || echo "no secret"
"""
SLEEP = """#!/bin/sh
echo sleeping; sleep 60; echo woke
"""


def skill(root: Path, name: str, front: str, scripts: dict[str, str]) -> AgentSkill:
    return AgentSkill.from_path(skill_folder(root, name, name, scripts, front=front, body="Use it.\n"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "readme.txt").write_text("read me\n")
    (project / "secret.txt").write_text("s3cret\n")
    return project


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


async def call(s: AgentSkill, folder: Path, args: str = "", *, ceiling: Ceiling | None = None
               ) -> tuple[dict[str, Any], ChangeSet]:
    [tool] = await skill_script_tools([s], ceiling=ceiling)
    changes = ChangeSet(folder)
    out = await tool.invoke({"args": args} if args else {}, ToolContext(folder=folder, changes=changes))
    assert not out.is_error, out.data
    return out.data, changes


def port(server: FakeLLMServer) -> str:
    return server.base_url.rsplit(":", 1)[1].strip("/")


def test_the_loopback_server_is_reachable_from_here(server: FakeLLMServer) -> None:
    with socket.create_connection(("127.0.0.1", int(port(server))), timeout=10):
        pass  # so a refusal below is the sandbox's doing


async def test_no_network_unless_the_skill_and_the_user_allow_it(tmp_path: Path, folder: Path,
                                                                 server: FakeLLMServer) -> None:
    closed = skill(tmp_path / "a", "closed", "network: false\n", {"connect.sh": CONNECT})
    data, _ = await call(closed, folder, port(server))
    assert data["exit_code"] == 7 and "refused" in data["output"] and "connected" not in data["output"]
    assert any("network: none" in note and "Network is unreachable" in note for note in data["notes"])

    wants = skill(tmp_path / "b", "wants", "network: true\n", {"connect.sh": CONNECT})
    data, _ = await call(wants, folder, port(server))  # the user's ceiling (default) keeps the network off
    assert data["exit_code"] == 7 and "refused" in data["output"]
    assert any("not given, above the user's sandbox settings: network" in note for note in data["notes"])

    ceiling = Ceiling.from_config(load_config(env={}, overrides={"sandbox": {"network": True}}))
    data, _ = await call(wants, folder, port(server), ceiling=ceiling)
    assert data["exit_code"] == 0 and "HTTP/1." in data["output"] and "connected" in data["output"]


async def test_fs_write_is_the_only_writable_place(tmp_path: Path, folder: Path) -> None:
    writer = skill(tmp_path / "a", "writer", "fs_read: [.]\nfs_write: [out/]\n", {"write.sh": WRITE})
    data, changes = await call(writer, folder)
    assert "wrote out" in data["output"] and "notes refused" in data["output"]
    assert "Read-only file system" in data["output"]
    assert data["exit_code"] == 3 and data["changes"] == ["out/result.txt"]
    assert [f.path for f in changes.pending_files] == ["out/result.txt"]
    assert not (folder / "out").exists() and not (folder / "notes.txt").exists()  # proposed, not on disk
    assert any("writable: out" in note for note in data["notes"])


async def test_only_fs_read_paths_are_visible(tmp_path: Path, folder: Path) -> None:
    reader = skill(tmp_path / "a", "reader", "fs_read: [docs]\n", {"read.sh": READ})
    data, _ = await call(reader, folder)
    assert "read me" in data["output"] and "s3cret" not in data["output"] and "no secret" in data["output"]
    # Without capabilities the script sees the whole folder, as every script tool does.
    plain = skill(tmp_path / "b", "plain", "", {"read.sh": READ})
    data, _ = await call(plain, folder)
    assert "read me" in data["output"] and "s3cret" in data["output"]


async def test_the_timeout_stops_a_sleeping_script_never_above_the_ceiling(tmp_path: Path, folder: Path) -> None:
    sleeper = skill(tmp_path / "a", "sleeper", "timeout: 1\n", {"sleep.sh": SLEEP})
    data, _ = await call(sleeper, folder)
    assert data["timed_out"] is True and data["exit_code"] is None and "woke" not in data["output"]
    assert any("time limit 1 s" in note for note in data["notes"])
    greedy = skill(tmp_path / "b", "greedy", "timeout: 3600\n", {"sleep.sh": SLEEP})
    limits = script_limits(greedy.capabilities, Ceiling(timeout_s=2))
    assert limits.timeout_s == 2 and "timeout 3600 s (the most is 2 s)" in limits.refused[0]
    data, _ = await call(greedy, folder, ceiling=Ceiling(timeout_s=1))
    assert data["timed_out"] is True and "woke" not in data["output"]


@pytest.mark.parametrize(("front", "message"), [
    ("timeout: soon\n", "timeout must be a positive number of seconds, e.g. timeout: 30"),
    ("fs_write: [/etc]\n", "fs_write entry '/etc' must be a path inside the opened folder"),
    ("fs_read: [../up]\n", "fs_read entry '../up' must be a path inside the opened folder"),
    ("network: maybe\n", "network must be true or false"),
])
async def test_a_bad_capability_is_refused_naming_the_key(tmp_path: Path, front: str, message: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    bad = skill(tmp_path, "bad", front, {"read.sh": READ})
    with pytest.raises(ScriptToolError, match="SKILL.md"):
        bad.script_tools  # noqa: B018 - RobotLab's property reads the scripts
    assert await skill_script_tools([bad]) == []
    assert message in caplog.text and "bad" in caplog.text


async def test_a_granted_path_that_links_out_of_the_folder_is_refused(tmp_path: Path, folder: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key.txt").write_text("private\n")
    (folder / "docs-link").symlink_to(outside)
    reader = skill(tmp_path / "a", "linker", "fs_read: [docs-link]\n", {"read.sh": "#!/bin/sh\ncat docs-link/key.txt\n"})
    [tool] = await skill_script_tools([reader])
    out = await tool.invoke({}, ToolContext(folder=folder, changes=ChangeSet(folder)))
    assert out.is_error and "leads out of the folder" in str(out.data) and "private" not in str(out.data)
