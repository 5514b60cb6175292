"""The command line with a robot whose tool delegates work in the background: ``robotlab`` started through a small
launcher script that registers the tool ``start_helper`` of the robot ``manager`` (``delegating_manager``'s robot
file) before the command line starts, as a program that adds tools would; the tool delegates "work slowly" to
``helper`` on a loopback OpenAI-compatible server. The scene of the tests of stopping that work from the command
line and of the reasons its threads keep."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tests.fakes.delegating_manager import write_manager

if TYPE_CHECKING:
    from tests.fakes.llm_server import FakeLLMServer

#: The repository (the commands' working folder).
ROOT = Path(__file__).resolve().parents[2]

LAUNCHER = '''
import sys
sys.path[:0] = [{root!r}, {tests!r}]
from workspace import Robot
from workspace.config import load_config
from workspace.delegation import delegate
from workspace.tools import registry
from workspace.tools.base import Tool

helper = Robot("helper", system_prompt="You help.", model="openai/fake", api_base={api_base!r},
               config=load_config(env={{}}, overrides={{"llm": {{"max_retries": 1}}}}))

async def start(arguments):
    await delegate(helper, "work slowly", delegated_by="manager", background=True)
    return "started"

registry._TOOLS["start_helper"] = Tool("start_helper", "Start the helper", {{"type": "object", "properties": {{}}}},
                                       start)
from workspace.cli import main
sys.exit(main(sys.argv[1:]))
'''


def write_launcher(robotlab_home: Path, script: Path, helper_api_base: str) -> Path:
    """The robot file ``manager`` in ``robotlab_home`` and the launcher at ``script``, its ``helper`` on the server
    at ``helper_api_base``: ``script``."""
    write_manager(robotlab_home)
    script.write_text(LAUNCHER.format(root=str(ROOT), tests=str(ROOT / "tests"), api_base=helper_api_base),
                      encoding="utf-8")
    return script


def start(script: Path, server: FakeLLMServer) -> subprocess.Popen[bytes]:
    """``robotlab run manager "get the helper going" --json`` through the launcher, the manager's model on
    ``server``."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    return subprocess.Popen([sys.executable, str(script), "run", "manager", "get the helper going", "--json",
                             "--model", "openai/fake", "--api-base", server.base_url + "/v1"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            env=env)


def helper_requests(server: FakeLLMServer) -> int:
    """How many of ``server``'s requests were the helper's (whose first message is its system prompt)."""
    return sum(1 for body in server.requests if "You help" in str((body.get("messages") or [{}])[0].get("content")))


def ended(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """The command's exit status and stderr once it ended (killed, and the test failed, if it does not end while its
    delegation waits for its model)."""
    try:
        _out, err = proc.communicate(timeout=60)  # bounds a hang only: the model would answer in two minutes
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the command did not end while its delegation waited for its model") from None
    return proc.returncode, err.decode()
