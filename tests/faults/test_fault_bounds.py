"""Everything read from a folder or a server is bounded.

- YAML from a folder or a person: a 1 KB alias bomb ("billion laughs"), a recursive alias and
  ``[[[[…`` nested deep are refused with a message naming the file, in milliseconds and a few MB
  (``workspace.yaml_limits``), through the real paths: a robot file, a network, config.yaml, an
  MCP servers file (YAML or JSON), the robot editor and the ``mcpServers`` editor.
- Robot templates: loops that do not end, ``'x' * 300000000``, a text doubled in a loop, 300 MB of
  output, huge widths and macros calling themselves fail naming the robot file
  (``workspace.template_limits``: 3 s, 4,000,000 characters).
- ``read_file`` streams a big file: lines deep in it, no range (cut with a note), the last lines,
  with memory far below the file's size; an empty file reads as empty.
- Tool-call arguments nested 100,000 deep (JSON text, or an object) are the invalid-arguments tool
  error; a function tool's or an MCP tool's result nested deep is cut or a clear error; the run goes on
  (``workspace.nesting``).
- An MCP server writing bytes that are not UTF-8 on stdout: skipped with a note before the handshake,
  named as the cause after it or when it never answers; never "no answer to the MCP handshake".

A case survives when the answer is a clear error naming the file or server (no traceback, no
``RecursionError``), the run (when there is one) finishes, and the memory used stays far below what the
input stands for. Times are bounded only by the anti-hang timeout; ``bench/bench_bounds.py`` and
``bench/bench_read_file.py`` print the figures.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from workspace import paths
from workspace.cli import main as cli_main

pytestmark = pytest.mark.timeout(60)


def alias_bomb(indent: str = "") -> str:
    """The 1 KB "billion laughs": nine levels of nine aliases, 9**9 (387 million) strings once expanded."""
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"


BOMB = alias_bomb()
RECURSIVE = "a: &a [1, *a]\n"
DEEP = "x: " + "[" * 50_000 + "]" * 50_000 + "\n"


def robot_with(front: str) -> str:
    return "---\nname: bad\nx-data:\n" + "".join(f"  {line}\n" for line in front.splitlines()) + "---\nYou help.\n"


@dataclass
class YamlCase:
    name: str
    argv: tuple[str, ...]
    file: str  # "config", "robot" or a name in the test's folder
    text: str
    says: tuple[str, ...]


YAML_CASES = [
    YamlCase("robot front matter: a 1 KB alias bomb", ("run", "bad", "hi"), "robot", robot_with(BOMB),
             ("{file}", "billion laughs", "write the values out")),
    YamlCase("robot front matter: a recursive alias", ("run", "bad", "hi"), "robot", robot_with(RECURSIVE),
             ("{file}", "recursive alias")),
    YamlCase("robot front matter: nested 50,000 deep", ("run", "bad", "hi"), "robot", robot_with(DEEP),
             ("{file}", "nest more than 100 levels")),
    YamlCase("network: a 1 KB alias bomb", ("network", "run", "{tmp}/n.yaml", "hi"), "n.yaml",
             "name: n\ntasks:\n  a:\n    robot: assistant\nx:\n" + alias_bomb("  "),
             ("{file}", "billion laughs")),
    YamlCase("network: a recursive alias", ("network", "run", "{tmp}/n.yaml", "hi"), "n.yaml",
             "name: n\ntasks: &t\n  a:\n    robot: assistant\n    input: *t\n", ("{file}", "recursive alias")),
    YamlCase("config.yaml: a 1 KB alias bomb", ("config", "show"), "config", "x-bomb:\n" + alias_bomb("  "),
             ("{file}", "billion laughs")),
    YamlCase("config.yaml: a recursive alias", ("config", "show"), "config", "llm: &l {model: x, more: *l}\n",
             ("{file}", "recursive alias")),
    YamlCase("config.yaml mcpServers: a 1 KB alias bomb", ("mcp", "list"), "config",
             "mcpServers:\n  s:\n    command: node\n    env:\n" + alias_bomb("      ") + "    args: *i\n",
             ("{file}", "billion laughs")),
    YamlCase("an MCP servers file (mcp import): a 1 KB alias bomb", ("mcp", "import", "{tmp}/servers.yaml"),
             "servers.yaml", alias_bomb() + "mcpServers:\n  s:\n    command: node\n    args: *i\n",
             ("{file}", "billion laughs")),
    YamlCase("an MCP servers file (mcp import): JSON nested 100,000 deep", ("mcp", "import", "{tmp}/servers.json"),
             "servers.json", '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}", ("{file}", "nests too deep")),
]


@pytest.fixture(scope="module", autouse=True)
def imported() -> None:
    """Import what the commands import before measuring (imports under tracemalloc are slow and big)."""
    import importlib

    for name in ("workspace.cli.runs", "workspace.cli.record", "workspace.session", "workspace.schemas.robot",
                 "workspace.schemas.config", "workspace.schemas.mcp", "workspace.network.loader",
                 "workspace.mcp.importers", "workspace.mcp.edit", "workspace.robot_files",
                 "workspace.catalog", "workspace.robot"):
        importlib.import_module(name)


@pytest.mark.parametrize("case", YAML_CASES, ids=[c.name for c in YAML_CASES])
def test_yaml_past_the_limits_is_refused_naming_the_file(case: YamlCase, tmp_path: Path, matrix: Any,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    matrix.case("bounded inputs", case.name)
    where = {"config": paths.user_config_file(), "robot": paths.user_robots_dir() / "bad.md"}
    path = where.get(case.file, tmp_path / case.file)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case.text, encoding="utf-8")
    monkeypatch.setenv("ROBOT_LAB_DEMO__DELAY", "0")
    tracemalloc.start()
    try:
        code = cli_main([arg.format(tmp=tmp_path) for arg in case.argv])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    shown = out + err
    assert code != 0, shown
    for part in case.says:
        assert part.format(file=path) in shown, (part.format(file=path), shown)
    assert "Traceback" not in shown and "RecursionError" not in shown, shown
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB"  # the bomb stands for gigabytes


def _draft(path: Path) -> Any:
    from workspace.robot_files import load_draft

    return load_draft(path)


def _servers_file(path: Path) -> Any:
    from workspace.mcp.edit import ServersFile

    return ServersFile(path)


EDITORS: list[tuple[str, Callable[[Path], Any], str]] = [
    ("the robot editor (ruamel): a 1 KB alias bomb", _draft, robot_with(BOMB)),
    ("the robot editor (ruamel): a recursive alias", _draft, robot_with(RECURSIVE)),
    ("the mcpServers editor (ruamel): a 1 KB alias bomb", _servers_file, "x:\n" + alias_bomb("  ")),
    ("a pasted mcpServers block: JSON nested 100,000 deep", lambda path: _pasted(path.read_text()),
     '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}"),
]


def _pasted(text: str) -> Any:
    from workspace.mcp.importers import parse_pasted

    return parse_pasted(text)


@pytest.mark.parametrize(("name", "open_it", "text"), EDITORS, ids=[e[0] for e in EDITORS])
def test_the_round_trip_editors_refuse_yaml_past_the_limits(name: str, open_it: Callable[[Path], Any], text: str,
                                                            tmp_path: Path, matrix: Any) -> None:
    from workspace.errors import ConfigurationError

    matrix.case("bounded inputs", name)
    path = tmp_path / "file.md"
    path.write_text(text, encoding="utf-8")
    tracemalloc.start()
    try:
        with pytest.raises(ConfigurationError) as caught:
            open_it(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    if "pasted" in name:  # no file: the problem is said
        assert "not JSON" in str(caught.value)
    else:
        assert str(path) in str(caught.value)
        assert "billion laughs" in str(caught.value) or "recursive alias" in str(caught.value)
    assert peak < 64 * 2**20


def test_aliases_used_as_intended_still_load(tmp_path: Path) -> None:
    """Merge keys and a few shared values are what aliases are for: well inside the limits."""
    from workspace.yaml_limits import safe_load

    text = "base: &base {command: node, args: [a, b], env: {A: '1'}}\n" + "".join(
        f"s{i}: {{<<: *base, cwd: /tmp/{i}}}\n" for i in range(200))
    data = safe_load(text)
    assert data["s199"] == {"command": "node", "args": ["a", "b"], "env": {"A": "1"}, "cwd": "/tmp/199"}


# -- robot templates: time and size ------------------------------------------------------------------

TEMPLATES = [  # (case, body, what the message says)
    ("template: range(10**9)", "{% for i in range(10**9) %}x{% endfor %}", "Range too big"),
    ("template: 'x' * 300000000", "{{ 'x' * 300000000 }}", "300,000,000"),
    ("template: a text doubled 40 times with ~", "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
     "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "more than the 4,000,000"),
    ("template: loops that do not end in time", "{% for i in range(100000) %}{% for j in range(100000) %}"
     "{% endfor %}{% endfor %}", "more than 3 seconds"),
    ("template: a loop over a loop over a loop (no calls inside)", "{% set r = range(100000) %}{% for i in r %}"
     "{% for j in r %}{% for k in r %}{% endfor %}{% endfor %}{% endfor %}", "more than 3 seconds"),
    ("template: 300 MB of output", "{% for i in range(100000) %}{{ 'x' * 3000 }}{% endfor %}", "more than the 4,000,000"),
    ("template: a width of 300,000,000", "{{ '{:>300000000}'.format(1) }}{{ 'x'|center(300000000) }}",
     "300,000,000"),
    ("template: a macro calling itself", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "too deep"),
]


@pytest.mark.parametrize(("name", "body", "says"), TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_a_template_past_the_limits_fails_naming_the_robot_file(name: str, body: str, says: str, matrix: Any,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    matrix.case("bounded inputs", name)
    path = paths.user_robots_dir() / "bad.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: bad\n---\n{body}\n", encoding="utf-8")
    monkeypatch.setenv("ROBOT_LAB_DEMO__DELAY", "0")
    tracemalloc.start()
    try:
        code = cli_main(["run", "bad", "hi", "--no-record"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    shown = out + err
    assert code != 0, shown
    assert str(path) in shown and "cannot render the template" in shown and says in shown, shown
    assert "Traceback" not in shown, shown
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB"


def test_a_set_inside_a_loop_does_not_double() -> None:
    """``{% set s = s ~ s %}`` in a loop doubles nothing: Jinja scopes the set to one iteration."""
    from workspace.templates import Template

    body = "{% set s = 'x' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}[{{ s }}]"
    assert Template.parse(body, name="t").render() == "[x]"


def test_templates_within_the_limits_render_as_before() -> None:
    from workspace.templates import Template

    body = ("Hello {{ name }} {% for i in range(3) %}{{ i }}{% endfor %} {{ 'ab' * 3 }} {{ [1, 2]|join(',') }} "
            "{{ 'a b'|replace(' ', '-') }} {{ '%05d' % 3 }} [{{ 'x'|center(5) }}] {{ '{:>4}'.format(7) }} "
            "{% for x in [1, 2] %}{{ loop.index }}/{{ loop.length }} {% endfor %}{{ 2 ** 10 }}")
    assert Template.parse(body, name="t").render(name="you") == (
        "Hello you 012 ababab 1,2 a-b 00003 [  x  ]    7 1/2 2/2 1024")


# -- read_file streams ---------------------------------------------------------------------------------


def _big_file(path: Path, lines: int) -> int:
    """``lines`` numbered lines of about 100 bytes; returns the file's size."""
    pad = "." * 90
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for start in range(1, lines + 1, 10_000):
            fh.write("".join(f"{n:08d} {pad}\n" for n in range(start, min(start + 10_000, lines + 1))))
    return path.stat().st_size


READS = [  # (case, arguments, what the answer holds)
    ("read_file: 11 lines deep in a 30 MB file", {"start_line": 250_000, "end_line": 250_010},
     {"start_line": 250_000, "end_line": 250_010, "total_lines": 300_000, "first": "00250000", "lines": 11}),
    ("read_file: a 30 MB file without a range is cut with a note", {},
     {"start_line": 1, "end_line": 2000, "total_lines": 300_000, "first": "00000001", "lines": 2000,
      "note": "call read_file with start_line=2001"}),
    ("read_file: the last lines of a 30 MB file", {"start_line": 299_999},
     {"start_line": 299_999, "end_line": 300_000, "total_lines": 300_000, "first": "00299999", "lines": 2}),
]


@pytest.fixture(scope="module")
def big_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("big")
    _big_file(folder / "big.log", 300_000)
    (folder / "empty.txt").write_bytes(b"")
    return folder


@pytest.mark.parametrize(("name", "arguments", "expected"), READS, ids=[r[0] for r in READS])
async def test_read_file_streams_a_big_file(name: str, arguments: dict[str, Any], expected: dict[str, Any],
                                            big_folder: Path, matrix: Any) -> None:
    from workspace.changes import ChangeSet
    from workspace.tools import registry
    from workspace.tools.base import ToolContext

    matrix.case("bounded inputs", name)
    size = (big_folder / "big.log").stat().st_size
    context = ToolContext(robot="r", run_id="run", call_id="call", folder=big_folder, changes=ChangeSet(big_folder),
                          emit=lambda event: None)
    tool = registry.get("read_file")
    assert tool is not None
    await tool.invoke({"path": "empty.txt"}, context)  # imports (the arguments' schema) before measuring
    tracemalloc.start()
    try:
        out = await tool.invoke({"path": "big.log", **arguments}, context)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not out.is_error, out.data
    data = out.data
    for key in ("start_line", "end_line", "total_lines"):
        assert data[key] == expected[key], (key, data)
    lines = data["content"].splitlines()
    assert lines[0].startswith(expected["first"]) and len(lines) == expected["lines"]
    assert expected.get("note", "") in data.get("note", "")
    assert peak < size / 8, f"{peak / 2**20:.1f} MB for a {size / 2**20:.0f} MB file"


async def test_an_empty_file_reads_as_empty(big_folder: Path, matrix: Any) -> None:
    from workspace.tools import registry
    from workspace.tools.base import ToolContext

    matrix.case("bounded inputs", "read_file: an empty file")
    context = ToolContext(robot="r", run_id="run", call_id="call", folder=big_folder, changes=None,
                          emit=lambda event: None)
    out = await registry.get("read_file").invoke({"path": "empty.txt"}, context)  # type: ignore[union-attr]
    assert not out.is_error, out.data
    assert out.data["content"] == "" and out.data["total_lines"] == 0 and "empty" in out.data["note"]


async def test_a_big_file_with_a_pending_edit_reads_the_edit(tmp_path: Path) -> None:
    """Streaming reads the disk only when the run left the file as it is there."""
    from workspace.changes import ChangeSet
    from workspace.tools import registry
    from workspace.tools.base import ToolContext
    from workspace.tools.files import reading

    (tmp_path / "a.txt").write_text("one\ntwo\n")
    changes = ChangeSet(tmp_path)
    context = ToolContext(robot="r", run_id="run", call_id="call", folder=tmp_path, changes=changes,
                          emit=lambda event: None)
    tool = registry.get("read_file")
    assert tool is not None
    edit = registry.get("edit_file")
    assert edit is not None
    streamed = reading.STREAM_BYTES
    reading.STREAM_BYTES = 0  # every file is "big"
    try:
        before = await tool.invoke({"path": "a.txt"}, context)
        await edit.invoke({"path": "a.txt", "search": "two", "replace": "deux"}, context)
        after = await tool.invoke({"path": "a.txt"}, context)
    finally:
        reading.STREAM_BYTES = streamed
    assert before.data["content"] == "one\ntwo\n" and "big" in before.data["note"]
    assert after.data["content"] == "one\ndeux\n" and "pending" in after.data


# -- arguments and results nested deep, and an MCP server's bytes that are not UTF-8 ---------------------


@pytest.fixture
async def manager() -> Any:
    from workspace.mcp import set_default_manager
    from workspace.mcp.manager import MCPManager

    fresh = MCPManager()
    previous = set_default_manager(fresh)
    yield fresh
    await fresh.aclose()
    set_default_manager(previous)


def configure(servers: dict[str, Any], *, wait: float = 20) -> None:
    for entry in servers.values():
        entry.setdefault("autoApprove", ["*"])
    config = paths.user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"agent": {"mcp_startup_wait": wait}, "mcpServers": servers}), encoding="utf-8")
    robots = paths.user_robots_dir()
    robots.mkdir(parents=True, exist_ok=True)
    (robots / "helper.md").write_text(f"---\nname: helper\nmcp: {json.dumps(list(servers))}\n---\nYou help.\n",
                                      encoding="utf-8")


async def record(replies: list[Any], tmp_path: Path) -> tuple[Any, Any]:
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    workspace = Workspace(provider=ScriptedProvider(replies), db_path=tmp_path / "threads.db")
    session = workspace.new_thread("helper")
    run = session.send("go")
    await run.wait()
    return workspace, run


def stored_kinds(workspace: Any, run: Any) -> list[str]:
    return [e.kind for e in workspace.store.turn_events(run.turn_id) if e.kind != "text_delta"]


def deep_list(depth: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return top


DEEP_JSON = '{"message": ' + "[" * 100_000 + "]" * 100_000 + "}"
DEEP_ARGUMENTS = [  # (case, arguments as the model sends them)
    ("tool arguments: [[[[…]]]] 100,000 deep (JSON text)", DEEP_JSON),
    ("tool arguments: 500 deep (JSON text json.loads parses)", '{"message": ' + "[" * 500 + "]" * 500 + "}"),
    ("tool arguments: 100,000 deep (an object from the provider)", {"message": deep_list(100_000)}),
]


@pytest.mark.parametrize(("name", "arguments"), DEEP_ARGUMENTS, ids=[a[0] for a in DEEP_ARGUMENTS])
async def test_arguments_nested_too_deep_are_an_invalid_arguments_error(name: str, arguments: Any, manager: Any,
                                                                        tmp_path: Path, matrix: Any) -> None:
    from workspace import events as ev
    from workspace.providers.testing import ToolCall

    matrix.case("bounded inputs", name)
    configure({"fault": _fault_server("ok")})
    workspace, run = await record([ToolCall("fault__echo", arguments), "Sorry, my arguments were too deep."],
                                  tmp_path)
    try:
        assert isinstance(run.terminal, ev.RunFinished), run.terminal
        [error] = [e for e in run.events if isinstance(e, ev.ToolError)]
        assert "are nested deeper than 100 levels" in str(error.error), error.error
        assert "nested less deep" in str(error.error) and len(str(error.error)) < 1000
        kinds = stored_kinds(workspace, run)
        assert kinds.count("tool_error") == 1 and kinds[-1] == "run_finished", kinds
    finally:
        await workspace.aclose()


async def test_a_function_tool_result_nested_too_deep_is_cut(tmp_path: Path, matrix: Any) -> None:
    from workspace import events as ev
    from workspace.providers.testing import ScriptedProvider, ToolCall
    from workspace.robot import Robot
    from workspace.tools.decorator import tool

    matrix.case("bounded inputs", "a function tool's result nested 100,000 deep")

    @tool(name="deep")
    def deep() -> Any:
        """Answer something nested very deep."""
        return {"x": deep_list(100_000)}

    provider = ScriptedProvider([ToolCall("deep", {}), "It was deep."])
    robot = Robot(name="r", system_prompt="You help.", provider=provider, tools=[deep])
    events = [e async for e in robot.stream("go")]
    assert isinstance(events[-1], ev.RunFinished), events[-1]
    [result] = [e for e in events if isinstance(e, ev.ToolResult)]
    assert "nested deeper than 100 levels" in result.payload["data"]["note"]
    json.dumps([e.to_dict() for e in events])  # what the store writes


async def test_an_mcp_result_nested_too_deep_is_an_error_or_cut(manager: Any, tmp_path: Path, matrix: Any) -> None:
    from workspace import events as ev
    from workspace.providers.testing import ToolCall

    matrix.case("bounded inputs", "an MCP tool's result nested 100,000 deep")
    configure({"fault": _fault_server("ok")})
    workspace, run = await record([ToolCall("fault__deep", {}), ToolCall("fault__deep", {"depth": 150}),
                                   ToolCall("fault__echo", {"message": "still there?"}), "Done."], tmp_path)
    try:
        assert isinstance(run.terminal, ev.RunFinished), run.terminal
        answers = [e for e in run.events if isinstance(e, ev.ToolResult | ev.ToolError)]
        assert len(answers) == 3, answers
        first, second, echo = answers
        assert isinstance(first, ev.ToolError) and "'fault'" in str(first.error), first  # the SDK cannot parse it
        assert "nested too deep to parse" in str(first.error) and "RecursionError" not in str(first.error)
        assert isinstance(second, ev.ToolResult), second
        assert "nested deeper than 100 levels" in json.dumps(second.to_dict())
        assert isinstance(echo, ev.ToolResult) and "still there?" in json.dumps(echo.payload)
        assert stored_kinds(workspace, run)[-1] == "run_finished"
    finally:
        await workspace.aclose()


def _fault_server(mode: str) -> dict[str, Any]:
    from faultkit import fault_server

    return fault_server(mode)


NOT_UTF8 = [  # (case, mode, the call answered)
    ("an MCP server writes a line that is not UTF-8 before its handshake answer", "badutf8", True),
    ("an MCP server writes lines that are not UTF-8 among its answers", "badutf8-among", False),
    ("an MCP server answers its handshake with bytes that are not UTF-8 only", "badutf8-only", False),
]


@pytest.mark.parametrize(("name", "mode", "answered"), NOT_UTF8, ids=[n[0] for n in NOT_UTF8])
async def test_an_mcp_server_writing_bytes_that_are_not_utf8(name: str, mode: str, answered: bool, manager: Any,
                                                             tmp_path: Path, matrix: Any) -> None:
    from workspace import events as ev
    from workspace.providers.testing import ToolCall

    matrix.case("bounded inputs", name)
    configure({"fault": {**_fault_server(mode), "connectTimeout": 4}})
    workspace, run = await record([ToolCall("fault__echo", {"message": "hello"}), "Done."], tmp_path)
    try:
        assert isinstance(run.terminal, ev.RunFinished), run.terminal
        status = manager.status("fault")
        said = json.dumps([e.to_dict() for e in run.events]) + str(status.reason or "")
        assert "no answer to the MCP handshake" not in said, said
        [answer] = [e for e in run.events if isinstance(e, ev.ToolResult | ev.ToolError)]
        if answered:  # the bad line before the handshake is skipped (with a note in the server's log)
            assert isinstance(answer, ev.ToolResult) and "echo: hello" in json.dumps(answer.payload), answer
            notes = list(status.stderr)
            assert any("not UTF-8" in line for line in notes), notes
        else:
            assert "'fault'" in said and "not UTF-8" in said, said
    finally:
        await workspace.aclose()
