"""The secrets sweep: plant keys everywhere a user keeps them, make every part of the program meet
them, then grep every output, log, database file and export for them. The goal is 0 hits.

Planted: a provider key in the environment, another in the keyring (a file keyring in the
subprocesses), a password (user info) and a query key in ``api_base``, an MCP server's env value
(which the careless server prints on stderr and answers from a tool) and an MCP header value.

Met by: ``robotlab run`` (text and ``--json``) against the loopback model server answering 401 with
the Authorization header echoed, or failing to connect to an api_base holding a password; a
recording process like the window (app log file, database) whose runs fail the same way and whose
MCP tool answers the token; ``config show``, ``mcp list -v``, ``threads list|search|export`` in
every format (stdout and ``-o`` files); and a crash's traceback.
"""

from __future__ import annotations

import json
import os
import secrets as pysecrets
import sqlite3
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from faultkit import ROOT, fault_server

pytestmark = pytest.mark.timeout(240)

TAG = pysecrets.token_hex(4)
PLANTED = {
    "env key": f"sk-planted-env-{TAG}0123456789",
    "keyring key": f"sk-planted-keyring-{TAG}0123",
    "api_base password": f"PASSplanted{TAG}77",
    "api_base query key": f"QKEYplanted{TAG}88",
    "MCP env value": f"mcp-env-planted-{TAG}99",
    "MCP header value": f"mcp-header-planted-{TAG}66",
}
ECHO = "Incorrect API key provided: {authorization}. Request to {url}"

RECORDER = textwrap.dedent("""
    # What the window does, headless: app logging (a log file), redacted output, runs recorded.
    import asyncio, logging, sys
    from workspace.logsetup import setup_logging
    from workspace.secrets import install_output_redaction
    from workspace.session import Workspace

    install_output_redaction()
    setup_logging(log_file=True)
    log = logging.getLogger("sweep")

    async def main():
        workspace = Workspace()
        session = workspace.new_thread("sweeper", title="sweep")
        for text in sys.argv[1:]:
            run = session.send(text)
            terminal = await run.wait()
            log.warning("the run ended: %r", terminal)  # a careless log line: the whole event
            for event in run.events:
                log.info("event %s", event.to_dict())
        print("recorded", session.thread_id, flush=True)
        await workspace.aclose()
        from workspace.mcp import default_manager
        await default_manager().aclose()

    asyncio.run(main())
""")


def sweep(texts: dict[str, str]) -> dict[str, list[str]]:
    """``{where: [planted secrets found there]}`` for every text given."""
    return {where: [name for name, value in PLANTED.items() if value in text] for where, text in texts.items()}


def database_text(folder: Path) -> str:
    """Every byte of the database files, as text, and every blob decompressed."""
    parts = []
    for path in sorted(folder.glob("*.db*")):
        parts.append(path.read_bytes().decode("utf-8", "replace"))
    for db in folder.glob("*.db"):
        conn = sqlite3.connect(db)
        try:
            for (data,) in conn.execute("SELECT data FROM blobs"):
                parts.append(zlib.decompress(data).decode("utf-8", "replace"))
        finally:
            conn.close()
    return "\n".join(parts)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture
def setup(robotlab_home: Path, tmp_path: Path, server: FakeLLMServer) -> dict[str, Any]:
    """The planted configuration, robot, keyring, and the environment of the subprocesses."""
    from workspace import paths

    config = paths.user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    query_base = f"{server.base_url}/v1?api-key={PLANTED['api_base query key']}"
    config.write_text(json.dumps({
        "llm": {"model": "openai/fake", "api_base": query_base, "max_retries": 0},
        "mcpServers": {
            "careless": fault_server("ok", env={"FAULT_MCP_TOKEN": PLANTED["MCP env value"]}, autoApprove=["*"]),
            "remote": {"url": "http://127.0.0.1:9/mcp", "connectTimeout": 1,
                       "headers": {"Authorization": f"Bearer {PLANTED['MCP header value']}"}},
        },
    }), encoding="utf-8")
    paths.user_robots_dir().mkdir(parents=True, exist_ok=True)
    (paths.user_robots_dir() / "sweeper.md").write_text(
        "---\nname: sweeper\nmcp: [careless, remote]\n---\nYou help.\n", encoding="utf-8")
    keyring_file = tmp_path / "keyring.json"
    keyring_file.write_text(json.dumps({"robotlab/OPENAI_API_KEY": PLANTED["keyring key"]}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({
        "ROBOTLAB_HOME": str(robotlab_home), "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "faults")]),
        "PYTHON_KEYRING_BACKEND": "filekeyring.FileKeyring", "FILE_KEYRING": str(keyring_file),
        "OPENAI_API_KEY": PLANTED["env key"], "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1",
    })
    return {"env": env, "query_base": query_base, "home": robotlab_home,
            "userinfo_base": server.base_url.replace("http://", f"http://sweeper:{PLANTED['api_base password']}@")
            + "/v1"}


def robotlab(args: list[str], env: dict[str, str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, **options)


def test_no_planted_secret_reaches_any_output_log_database_or_export(setup: dict[str, Any], server: FakeLLMServer,
                                                                    tmp_path: Path, matrix: Any) -> None:
    env = setup["env"]
    outputs: dict[str, str] = {}

    def keep(name: str, proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
        outputs[f"{name}: stdout"] = proc.stdout
        outputs[f"{name}: stderr"] = proc.stderr
        return proc

    # 1. robotlab run: a 401 echoing the Authorization header; an api_base with a password.
    server.enqueue(Reply.error(401, ECHO, times=1000))
    for flags in (["--json"], []):
        proc = keep(f"run {' '.join(flags) or '(text)'} (401 echo, api_base ?api-key=)",
                    robotlab(["run", "sweeper", "hi", *flags], env))
        assert proc.returncode == 1 and "Incorrect API key provided: Bearer <" in proc.stdout, proc.stdout
        proc = keep(f"run {' '.join(flags) or '(text)'} (api_base with a password)",
                    robotlab(["run", "sweeper", "hi", "--api-base", setup["userinfo_base"], *flags], env))
        assert proc.returncode == 1 and "sweeper:<" in proc.stdout, proc.stdout
    # The key read from the keyring (no key in the environment; the server named by OPENAI_API_BASE).
    keyring_env = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
    keyring_env["OPENAI_API_BASE"] = f"{server.base_url}/v1"
    (setup["home"] / "config" / "robots" / "plain.md").write_text("---\nname: plain\nmodel: openai/fake\n---\nHi\n")
    plain_config = setup["home"] / "plain"
    plain_config.mkdir()
    proc = keep("run --json (key from the keyring, 401 echo)",
                robotlab(["run", "plain", "hi", "--json"], {**keyring_env, "ROBOT_LAB_LLM__API_BASE": ""}))
    assert "Incorrect API key provided: Bearer <" in proc.stdout, proc.stdout + proc.stderr

    # 2. A recording process like the window: a failed run (401 echo), then a tool answering the
    # MCP token and a model repeating every planted value this process knows (it never read the
    # keyring key, and its api_base has no password: that one it meets inside a URL).
    server.clear()
    everything = " ".join(v for k, v in PLANTED.items() if k not in ("keyring key", "api_base password"))
    server.enqueue(Reply.error(401, ECHO, times=1), Reply.tool("careless__whoami", {}),
                   Reply.say(f"The secrets are {everything} and http://u:{PLANTED['api_base password']}@h/"))
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER, encoding="utf-8")
    proc = keep("recording process (like the window)",
                subprocess.run([sys.executable, str(script), "first", f"second {everything}"], capture_output=True,
                               text=True, env=env, cwd=ROOT, timeout=120))
    assert proc.returncode == 0, proc.stderr
    thread_id = proc.stdout.split("recorded", 1)[1].split()[0]

    # 3. The commands that show configuration, servers and threads.
    keep("config show", robotlab(["config", "show"], env))
    keep("mcp list -v", robotlab(["mcp", "list", "-v"], env))
    keep("mcp list --json", robotlab(["mcp", "list", "--json"], env))
    keep("threads list", robotlab(["threads", "list"], env))
    keep("threads search", robotlab(["threads", "search", "secrets"], env))
    exports = tmp_path / "exports"
    exports.mkdir()
    for fmt in ("md", "json", "jsonl"):
        proc = keep(f"threads export -f {fmt}", robotlab(["threads", "export", thread_id, "-f", fmt], env))
        assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
        keep(f"threads export -f {fmt} -o", robotlab(["threads", "export", thread_id, "-f", fmt, "-o",
                                                      str(exports / f"thread.{fmt}")], env))
    assert "<redacted>" in outputs["threads export -f md: stdout"]

    # 4. A crash: an unexpected exception whose message holds the key.
    crash = (
        "import os, workspace.cli.misc as misc\n"
        "def boom(args):\n"
        "    raise RuntimeError('401 Bearer ' + os.environ['OPENAI_API_KEY'] + ' at ' + os.environ['BASE'])\n"
        "misc.cmd_paths = boom\n"
        "from workspace.cli import main\n"
        "main(['paths'])\n"
    )
    proc = keep("crash report (traceback)", subprocess.run(
        [sys.executable, "-c", crash], capture_output=True, text=True, cwd=ROOT, timeout=60,
        env={**env, "BASE": setup["userinfo_base"]}))
    assert proc.returncode == 1 and "RuntimeError: 401 Bearer <" in proc.stderr, proc.stderr

    files = {f"export file {p.name}": p.read_text(encoding="utf-8") for p in exports.iterdir()}
    logs = {f"log file {p.name}": p.read_text(encoding="utf-8", errors="replace")
            for p in (setup["home"] / "logs").glob("*")}
    assert logs, "the recording process wrote no log file"
    found = sweep({**outputs, **files, **logs, "database files and blobs": database_text(setup["home"] / "data")})
    for where, names in found.items():
        matrix.case("secrets sweep", where)
        matrix.lost(len(names), "planted secrets found: " + ", ".join(names) if names else "")
    assert {where: names for where, names in found.items() if names} == {}
    # The planted values were really met: the run and the log saw the echo, the tool its token.
    assert "<OPENAI_API_KEY>" in outputs["run --json (401 echo, api_base ?api-key=): stdout"]
    assert "careless__whoami" in database_text(setup["home"] / "data")
