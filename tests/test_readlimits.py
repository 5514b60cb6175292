"""Files read from a folder or the user's configuration are read bounded, as regular files only.

A FIFO named like a robot file made every read of it wait forever (the window lists robots), a
symbolic link to ``/dev/zero`` (which a cloned repository can carry) read until memory ran out,
and a huge file was read whole. Real files here: FIFOs made with ``os.mkfifo``, symlinks to
``/dev/zero`` (read in a child process with a capped address space, so that a regression fails
instead of taking the machine's memory), sparse files made with ``truncate``. A read that used to
hang runs in a thread joined with a generous timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fakes.bounded_reads import HUGE
from fakes.bounded_reads import bounded as _bounded
from fakes.bounded_reads import huge as _huge

from workspace.errors import ConfigurationError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")

GOOD_ROBOT = "---\nname: good\ndescription: A good robot\n---\nYou help.\n"


def _robots(folder: Path) -> Path:
    robots = folder / ".robotlab" / "robots"
    robots.mkdir(parents=True)
    (robots / "good.md").write_text(GOOD_ROBOT, encoding="utf-8")
    return robots


def test_a_fifo_and_a_huge_robot_file_are_reported_and_the_others_still_list(tmp_path: Path) -> None:
    from workspace.catalog import list_robots

    robots = _robots(tmp_path)
    list_robots(tmp_path)  # imports what it imports before memory is measured
    os.mkfifo(robots / "evil.md")
    _huge(robots / "huge.md")
    problems: list[str] = []
    listed, peak = _bounded(lambda: list_robots(tmp_path, problems=problems))
    assert [r.name for r in listed if r.source == "project"] == ["good"]
    assert len(problems) == 2, problems
    fifo = next(p for p in problems if "evil.md" in p)
    assert "not a regular file (a FIFO)" in fifo and "remove it or replace it" in fifo
    huge = next(p for p in problems if "huge.md" in p)
    assert "64.0 MB" in huge and "1.0 MB" in huge and "make it smaller" in huge
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_a_fifo_and_a_huge_network_file_are_described_and_the_others_still_list(tmp_path: Path) -> None:
    from workspace.network.loader import list_networks, load_network

    networks = tmp_path / ".robotlab" / "networks"
    networks.mkdir(parents=True)
    (networks / "good.yaml").write_text("name: good\ndescription: fine\ntasks: {}\n", encoding="utf-8")
    list_networks(tmp_path)  # imports what it imports before memory is measured
    os.mkfifo(networks / "evil.yaml")
    _huge(networks / "huge.yaml")
    listed, peak = _bounded(lambda: list_networks(tmp_path))
    by_name = {n.name: n for n in listed}
    assert by_name["good"].description == "fine"
    assert "not a regular file (a FIFO)" in str(by_name["evil"].description)
    assert "more than the 1.0 MB" in str(by_name["huge"].description)
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"
    with pytest.raises(ConfigurationError, match="not a regular file"):
        _bounded(lambda: load_network(networks / "evil.yaml", folder=tmp_path))


def test_a_huge_skill_file_is_a_problem_of_its_own(tmp_path: Path) -> None:
    from workspace.agent_skills import AgentSkillCatalog

    good = tmp_path / "skills" / "good"
    good.mkdir(parents=True)
    (good / "SKILL.md").write_text("---\nname: good\ndescription: fine\n---\nDo it.\n", encoding="utf-8")
    AgentSkillCatalog(tmp_path).all()  # imports what it imports before memory is measured
    bad = tmp_path / "skills" / "bad"
    bad.mkdir()
    _huge(bad / "SKILL.md")
    catalog = AgentSkillCatalog(tmp_path)
    skills, peak = _bounded(catalog.all)
    assert [s.name for s in skills] == ["good"]
    assert len(catalog.problems) == 1 and "more than the 1.0 MB" in catalog.problems[0]
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_a_config_file_over_its_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """20 MiB of YAML took 15 s and 356 MiB to parse; a file over the limit is not parsed at all."""
    from workspace.config import load_config

    config = tmp_path / ".robotlab" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("llm:\n  temperature: 0.5\n" + "# padding\n" * (2 * 1024 * 1024 // 10), encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        _bounded(lambda: load_config(tmp_path))
    assert str(config) in str(caught.value) and "more than the 1.0 MB" in str(caught.value)


def test_attaching_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    from workspace.attachments import Attachment, AttachmentError

    os.mkfifo(tmp_path / "pipe.txt")
    with pytest.raises(AttachmentError, match=r"pipe\.txt: the attachment is not a regular file \(a FIFO\)"):
        _bounded(lambda: Attachment.from_path("pipe.txt", folder=tmp_path))
    with pytest.raises(AttachmentError, match="not a regular file"):
        _bounded(lambda: Attachment.from_path(tmp_path / "pipe.txt"))


_CHILD = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))
    folder = Path(sys.argv[1])
    from workspace.attachments import Attachment, AttachmentError
    from workspace.catalog import list_robots
    from workspace.network.loader import list_networks
    problems = []
    robots = [r.name for r in list_robots(folder, problems=problems) if r.source == "project"]
    networks = {n.name: str(n.description) for n in list_networks(folder)}
    try:
        Attachment.from_path(Path(sys.argv[2]))
        attached = "read"
    except AttachmentError as exc:
        attached = str(exc)
    print(json.dumps({"robots": robots, "problems": problems, "networks": networks, "attached": attached}))
""")


def test_symlinks_to_dev_zero_are_refused_without_reading(tmp_path: Path) -> None:
    """A cloned repository can carry ``evil.md -> /dev/zero``: it read until memory ran out (here a
    child process with a 2 GiB address space, so a regression fails with MemoryError)."""
    robots = _robots(tmp_path)
    (robots / "evil.md").symlink_to("/dev/zero")
    networks = tmp_path / ".robotlab" / "networks"
    networks.mkdir()
    (networks / "evil.yaml").symlink_to("/dev/zero")
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), str(tmp_path / "zero.txt")],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["robots"] == ["good"]
    assert len(seen["problems"]) == 1 and "evil.md: the robot file is not a regular file (a device)" in \
        seen["problems"][0]
    assert "not a regular file (a device)" in seen["networks"]["evil"]
    assert "not a regular file (a device)" in seen["attached"]


def test_read_bounded_reads_a_file_up_to_its_limit_as_read_text_does(tmp_path: Path) -> None:
    from workspace.readlimits import FileLimitError, read_bounded, read_text_bounded

    path = tmp_path / "a.md"
    path.write_bytes(b"one\r\ntwo\rthree\n")
    assert read_text_bounded(path, 15, "robot file") == path.read_text(encoding="utf-8")
    assert read_bounded(path, 15) == path.read_bytes()
    with pytest.raises(FileLimitError, match="15 B, more than the 14 B"):
        read_bounded(path, 14, "robot file")
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing.md", 16)
    with pytest.raises(FileLimitError, match="not a regular file \\(a folder\\)"):
        read_bounded(tmp_path, 16)
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(FileLimitError, match="not a regular file \\(a device\\)"):
        read_bounded(tmp_path / "zero", 16)


SCRIPT = "#!/bin/sh\n# ---\n# description: Says hello\n# ---\necho hello\n"


def test_a_huge_script_tool_is_described_from_its_start_only(tmp_path: Path) -> None:
    """A script tool's description is its leading ``# ---`` comments: only the start of the file is read."""
    from workspace.tools.script import ScriptTool

    small = tmp_path / "hello.sh"
    small.write_text(SCRIPT, encoding="utf-8")
    small.chmod(0o755)
    ScriptTool.from_path(small)  # imports what it imports before memory is measured
    huge = tmp_path / "huge.sh"
    huge.write_text(SCRIPT, encoding="utf-8")
    with open(huge, "r+b") as fh:
        fh.truncate(HUGE)
    huge.chmod(0o755)
    tool, peak = _bounded(lambda: ScriptTool.from_path(huge))
    assert tool is not None and tool.description == "Says hello"
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def test_a_script_tools_front_matter_is_read_with_the_yaml_limits(tmp_path: Path) -> None:
    from workspace.tools.script import ScriptTool, ScriptToolError

    levels = ['# a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
        levels.append(f"# {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    bomb = tmp_path / "bomb.sh"
    bomb.write_text("#!/bin/sh\n# ---\n# description: x\n" + "\n".join(levels) + "\n# ---\necho\n", encoding="utf-8")
    bomb.chmod(0o755)
    with pytest.raises(ScriptToolError, match="billion laughs"):
        _bounded(lambda: ScriptTool.from_path(bomb))


def test_a_fifo_swapped_in_after_the_check_is_refused_on_its_open_descriptor(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The path is checked before it is opened, and the open descriptor again: a FIFO put in place between the two
    is opened without waiting (O_NONBLOCK) and refused by fstat."""
    from workspace import readlimits

    plain = os.stat(__file__)
    os.mkfifo(tmp_path / "swapped.md")
    monkeypatch.setattr(readlimits.os, "stat", lambda *_a, **_k: plain)  # the check saw a regular file
    with pytest.raises(readlimits.FileLimitError, match="not a regular file \\(a FIFO\\)"):
        _bounded(lambda: readlimits.read_bounded(tmp_path / "swapped.md", 1024, "robot file"))
