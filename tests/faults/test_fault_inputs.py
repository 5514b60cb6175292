"""Bad inputs: what people write wrong (configuration, robot files, network files, MCP servers, an
output schema, thread ids, ``--db``) through the command line in-process, and what a model sends
wrong (tool arguments, binary files, names that are not UTF-8, a huge message) through the tools.

A case survives when the exit code is non-zero where it should be, the message names the file (and
line, and key, where there is one) and the fix, there is no traceback, and nothing was written or
lost: the files read are unchanged and no database appeared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from workspace import paths
from workspace.cli import main as cli_main

pytestmark = pytest.mark.timeout(60)


def robot(front_matter: str) -> str:
    return f"---\n{front_matter}---\nYou help.\n"


@dataclass
class BadInput:
    name: str
    argv: tuple[str, ...]
    #: Files to write first: "config" (the user's config.yaml), "robot" (a robot file named bad), or a
    #: name in the test's folder ({tmp} in argv).
    files: dict[str, str | bytes] = field(default_factory=dict)
    says: tuple[str, ...] = ()
    code: int = 2
    env: dict[str, str] = field(default_factory=dict)
    #: A database at {tmp}/threads.db first (for thread ids); a run that fails may record itself.
    db: bool = False
    records: bool = False


NOTES = "just some notes\n" * 50

INPUTS = [
    # configuration (config.yaml and ROBOT_LAB_ variables)
    BadInput("config.yaml: not valid YAML", ("config", "show"), {"config": "llm: [1\n"},
             ("{config}", "not valid YAML at line 2", "Fix the file")),
    BadInput("config.yaml: unknown key", ("config", "show"), {"config": "llm:\n  temprature: 0.3\n"},
             ("{config}:2", "'llm.temprature'", "did you mean 'temperature'?")),
    BadInput("config.yaml: unknown section", ("config", "show"), {"config": "lllm:\n  model: x\n"},
             ("{config}:1", "did you mean 'llm'?")),
    BadInput("config.yaml: wrong type", ("config", "show"), {"config": "llm:\n  max_retries: many\n"},
             ("{config}:2", "'llm.max_retries' = 'many'", "valid integer")),
    BadInput("config.yaml: out of range", ("config", "show"), {"config": "llm:\n  temperature: 7\n"},
             ("{config}:2", "out of range: it must be at most 2")),
    BadInput("config.yaml: a list, not a mapping", ("config", "show"), {"config": "- a\n- b\n"},
             ("{config}", "must hold a mapping of sections")),
    BadInput("config.yaml: not UTF-8", ("config", "show"), {"config": b"llm:\n  model: \xff\xfe\n"},
             ("{config}", "not UTF-8 text")),
    BadInput("a ROBOT_LAB_ variable of the wrong type", ("run", "assistant", "hi"), {},
             ("ROBOT_LAB_LLM__TEMPERATURE", "'hot'", "valid number"), env={"ROBOT_LAB_LLM__TEMPERATURE": "hot"}),
    # robot front matter
    BadInput("front matter: unknown key", ("run", "bad", "hi"), {"robot": robot("temprature: 0.3\n")},
             ("{robot}:2", "unknown setting 'temprature'", "did you mean 'temperature'?")),
    BadInput("front matter: wrong type", ("run", "bad", "hi"), {"robot": robot("max_turns: lots\n")},
             ("{robot}:2", "'max_turns' must be a positive whole number, got 'lots'")),
    BadInput("front matter: out of range", ("run", "bad", "hi"), {"robot": robot("model: x\ntemperature: 9\n")},
             ("{robot}:3", "temperature: 9 is out of range", "from 0 to 2")),
    BadInput("front matter: no closing ---", ("run", "bad", "hi"), {"robot": "---\nname: x\nYou help.\n"},
             ("{robot}", "has no closing '---' line")),
    BadInput("front matter: not valid YAML", ("run", "bad", "hi"), {"robot": robot("tools: [read_file\n")},
             ("{robot}", "not valid YAML at line 3")),
    BadInput("front matter: a list, not a mapping", ("run", "bad", "hi"), {"robot": robot("- a\n")},
             ("{robot}", "must be a mapping of keys")),
    BadInput("front matter: an unknown tool", ("run", "bad", "hi"), {"robot": robot("tools: [read_fiel]\n")},
             ("{robot}", "tool(s) that do not exist: read_fiel", "read_file", "the robot's 'tools:' list"), code=1,
             records=True),
    BadInput("robot file: not UTF-8", ("run", "bad", "hi"), {"robot": b"---\nname: \xff\n---\nYou help.\n"},
             ("{robot}", "not UTF-8 text")),
    # network YAML
    BadInput("network: not valid YAML", ("network", "run", "{tmp}/n.yaml", "hi"), {"n.yaml": "tasks: [\n"},
             ("{tmp}/n.yaml:2", "not valid YAML", "Check the indentation and quoting")),
    BadInput("network: unknown task key", ("network", "run", "{tmp}/n.yaml", "hi"),
             {"n.yaml": "name: n\ntasks:\n  a:\n    robot: assistant\n    wait_fro: [b]\n"},
             ("{tmp}/n.yaml:5", "unknown setting 'wait_fro' in tasks.a", "did you mean 'wait_for'?")),
    BadInput("network: unknown robot", ("network", "run", "{tmp}/n.yaml", "hi"),
             {"n.yaml": "name: n\ntasks:\n  a:\n    robot: asistant\n"},
             ("{tmp}/n.yaml:4", "unknown robot 'asistant'", "did you mean 'assistant'?")),
    BadInput("network: a cycle", ("network", "run", "{tmp}/n.yaml", "hi"),
             {"n.yaml": "name: n\ntasks:\n  a:\n    robot: assistant\n    depends_on: [b]\n"
                        "  b:\n    robot: assistant\n    depends_on: [a]\n"},
             ("{tmp}/n.yaml:3", "task 'a', field 'depends_on'", "the tasks form a cycle: a -> b -> a")),
    BadInput("network: wait_for a key nothing writes (timeout)", ("network", "run", "{tmp}/n.yaml", "hi"),
             {"n.yaml": "name: n\ntasks:\n  a:\n    robot: assistant\n    wait_for: [b]\n    timeout: 0.3\n"},
             ("task a failed: Timeout waiting for b after 0.3 seconds (wait_for of task 'a')",), code=1, records=True),
    # mcpServers entries
    BadInput("mcpServers: no command or url", ("mcp", "list"), {"config": "mcpServers:\n  x:\n    args: [a]\n"},
             ("{config}", "mcpServers.x", "needs 'command'", "or 'url'"), code=1),
    BadInput("mcpServers: misspelt key", ("mcp", "list"), {"config": "mcpServers:\n  x:\n    comand: node\n"},
             ("{config}:3", "mcpServers.x", "did you mean 'command'?"), code=1),
    BadInput("mcpServers: env not a mapping", ("mcp", "list"),
             {"config": "mcpServers:\n  x:\n    command: node\n    env: [a]\n"},
             ("{config}", "mcpServers.x.env", "expected a mapping of NAME: value"), code=1),
    BadInput("mcpServers: a bad duration", ("mcp", "list"),
             {"config": "mcpServers:\n  x:\n    command: node\n    timeout: soon\n"},
             ("{config}", "mcpServers.x.timeout", "expected a time like 60", "got 'soon'"), code=1),
    BadInput("mcpServers: a list", ("mcp", "list"), {"config": "mcpServers: [1]\n"},
             ("{config}:1", "'mcpServers' = [1]", "valid dictionary")),
    # an output schema file
    BadInput("--output-schema: not JSON", ("run", "assistant", "hi", "--output-schema", "{tmp}/s.json"),
             {"s.json": "{not json"}, ("--output-schema {tmp}/s.json", "not JSON", "give a JSON Schema file like")),
    BadInput("--output-schema: not a JSON Schema", ("run", "assistant", "hi", "--output-schema", "{tmp}/s.json"),
             {"s.json": '{"type": "nope"}'}, ("--output-schema {tmp}/s.json", "not a valid JSON Schema")),
    BadInput("--output-schema: missing", ("run", "assistant", "hi", "--output-schema", "{tmp}/missing.json"), {},
             ("--output-schema {tmp}/missing.json", "cannot read it")),
    # thread ids
    BadInput("an unknown thread id", ("threads", "show", "zzzz", "--db", "{tmp}/threads.db"), {},
             ("No thread id starts with 'zzzz'", "robotlab threads list"), db=True),
    BadInput("a thread id that is SQL", ("threads", "show", "'; DROP TABLE threads; --", "--db", "{tmp}/threads.db"),
             {}, ("No thread id starts with", "robotlab threads list"), db=True),
    BadInput("a thread id with a control character",
             ("run", "assistant", "hi", "--thread", "nope\x01", "--db", "{tmp}/threads.db"), {},
             ("'nope\\x01'", "robotlab threads list"), db=True),
    # --db
    BadInput("--db: a text file (list)", ("threads", "list", "--db", "{tmp}/notes.txt"), {"notes.txt": NOTES},
             ("{tmp}/notes.txt is not a usable RobotLab database", "Nothing was changed", "robotlab threads recover")),
    BadInput("--db: a text file (before the action)", ("threads", "--db", "{tmp}/notes.txt", "list"),
             {"notes.txt": NOTES}, ("{tmp}/notes.txt is not a usable RobotLab database",)),
    BadInput("--db: a text file (run)", ("run", "assistant", "hi", "--db", "{tmp}/notes.txt"), {"notes.txt": NOTES},
             ("{tmp}/notes.txt is not a usable RobotLab database", "Nothing was changed")),
    BadInput("--db: a folder", ("run", "assistant", "hi", "--db", "{tmp}"), {},
             ("--db {tmp} is a folder", "give a file, e.g. --db {tmp}/threads.db")),
    BadInput("--db: does not exist (reading)", ("threads", "list", "--db", "{tmp}/nowhere/x.db"), {},
             ("no database at {tmp}/nowhere/x.db", "Check --db")),
]


@pytest.mark.parametrize("bad", INPUTS, ids=[b.name for b in INPUTS])
def test_a_bad_input_is_named_with_its_fix(bad: BadInput, tmp_path: Path, matrix: Any,
                                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    matrix.case("bad inputs", bad.name)
    where = {"config": paths.user_config_file(), "robot": paths.user_robots_dir() / "bad.md"}
    written: dict[Path, bytes] = {}
    for name, text in bad.files.items():
        path = where.get(name, tmp_path / name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        written[path] = path.read_bytes()
    if bad.db:
        from workspace.persistence import Store

        with Store(tmp_path / "threads.db"):
            pass
        written[tmp_path / "threads.db"] = (tmp_path / "threads.db").read_bytes()
    for key, value in bad.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ROBOT_LAB_DEMO__DELAY", "0")
    before = sorted(p.name for p in tmp_path.iterdir())
    fill = {"tmp": str(tmp_path), "config": str(where["config"]), "robot": str(where["robot"])}
    code = cli_main([arg.format(**fill) for arg in bad.argv])
    out, err = capsys.readouterr()
    shown = out + err
    assert code == bad.code, shown
    for part in bad.says:
        assert part.format(**fill) in shown, (part.format(**fill), shown)
    assert "Traceback" not in shown
    # Nothing written or lost: the files as they were, no database made (the app's or another).
    changed = [p for p, data in written.items() if p.read_bytes() != data]
    made = [n for n in sorted(p.name for p in tmp_path.iterdir()) if n not in before]
    matrix.lost(len(changed) + len(made), "files changed or made")
    assert not changed and not made, (changed, made)
    assert bad.records or not paths.database_path().exists()


# -- what a model sends ------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    (root / "latin.txt").write_bytes("café au lait\n".encode("latin-1"))
    if os.name == "posix":  # a name that is not UTF-8 (Linux allows any bytes but '/' and NUL)
        with open(os.fsencode(root) + b"/caf\xe9.txt", "wb") as fh:
            fh.write(b"inside a badly named file\n")
    return root


TOOL_INPUTS = [  # (case, tool, arguments, error or None for a success, what the answer must hold)
    ("tool arguments: a required one missing", "read_file", {}, "'path' is a required property"),
    ("tool arguments: the wrong type", "read_file", {"path": 5}, "path: 5 is not of type 'string'"),
    ("tool arguments: an extra one", "read_file", {"path": "a.txt", "colour": "red"},
     "unknown argument 'colour' (it takes: path, start_line, end_line)"),
    ("tool arguments: misspelt", "read_file", {"path": "a.txt", "start_lines": 2}, "did you mean 'start_line'?"),
    ("tool arguments: out of range", "read_file", {"path": "a.txt", "start_line": -3}, "start_line counts from 1"),
    ("tool arguments: empty search text", "edit_file", {"path": "a.txt", "search": "", "replace": "x"},
     "search is empty"),
    ("read_file of a binary file", "read_file", {"path": "img.png"}, "is a binary file (1,040 bytes)"),
    ("edit_file of a binary file", "edit_file", {"path": "img.png", "search": "PNG", "replace": "JPG"},
     "the file tools read and edit text files only"),
    ("read_file of a text file that is not UTF-8", "read_file", {"path": "latin.txt"}, None),
    ("a file name that is not UTF-8: listed, searched, read", "search_files", {"query": "badly named"}, None),
    ("a file name that is not UTF-8: not created", "write_file", {"path": "caf\udce9-2.txt", "content": "x"},
     "U+DCE9"),
]


@pytest.mark.parametrize(("case", "name", "arguments", "error"), TOOL_INPUTS, ids=[t[0] for t in TOOL_INPUTS])
async def test_a_bad_tool_input_is_an_error_the_model_can_act_on(folder: Path, case: str, name: str,
                                                                 arguments: dict[str, Any], error: str | None,
                                                                 matrix: Any) -> None:
    from workspace.changes import ChangeSet
    from workspace.sandbox import unsafe_character
    from workspace.tools import registry
    from workspace.tools.base import ToolContext

    matrix.case("bad inputs", case)
    if "not UTF-8" in case and "name" in case and os.name != "posix":
        pytest.skip("names that are not UTF-8 are a POSIX matter")
    before = {p: p.read_bytes() for p in folder.iterdir()}
    changes = ChangeSet(folder)
    context = ToolContext(robot="r", run_id="run", call_id="call", folder=folder, changes=changes,
                          emit=lambda event: None)
    tool = registry.get(name)
    assert tool is not None
    out = await tool.invoke(arguments, context)
    text = str(out.data)
    assert "Traceback" not in text and "TypeError" not in text and unsafe_character(text) is None, text
    if error is not None:
        assert out.is_error and error in text, text
    elif name == "read_file":
        assert not out.is_error and out.data["content"] == "café au lait\n" and "cp1252" in out.data["format"]
    else:
        assert [m["path"] for m in out.data["matches"]] == ["caf\udce9.txt"]
        listed = await registry.get("list_files").invoke({}, context)  # type: ignore[union-attr]
        assert "caf\udce9.txt" in [e["path"] for e in listed.data["entries"]]
        read = await registry.get("read_file").invoke({"path": "caf\udce9.txt"}, context)  # type: ignore[union-attr]
        assert read.data["content"] == "inside a badly named file\n"
    assert changes.files == [] and {p: p.read_bytes() for p in folder.iterdir()} == before


async def test_a_huge_message_is_recorded_whole(tmp_path: Path, matrix: Any) -> None:
    """A 4 MB message: the run answers, and the thread keeps all of it. (It costs about 13 MB of database:
    the turn's text, the search table's copy of it and the full-text index.)"""
    from workspace.persistence import Store
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    matrix.case("bad inputs", "a 4 MB message")
    message = ("All work and no play makes Jack a dull boy. " * 100_000)[:4_000_000]
    db = tmp_path / "threads.db"
    workspace = Workspace(provider=ScriptedProvider(["Noted."]), db_path=db)
    try:
        session = workspace.new_thread("assistant")
        terminal = await session.send(message).wait()
        assert terminal.kind == "run_finished"
        thread = session.thread_id
    finally:
        await workspace.aclose()
    with Store(db) as store:
        [turn] = store.turns(thread)
        matrix.lost(0 if turn.user_text == message else 1, "messages cut")
        assert turn.user_text == message
    assert db.stat().st_size < 3.5 * len(message)
