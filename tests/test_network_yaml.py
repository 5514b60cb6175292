"""Network files: loading, validation errors that name file/line/task/field, the shipped examples
running on the offline demo, and the ``robotlab network`` command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.errors import ConfigurationError
from workspace.network import NetworkFileError, find_network_file, list_networks, load_network
from workspace.providers.demo import DemoProvider
from workspace.providers.testing import ScriptedProvider

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "resources" / "networks"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def collect(run: Any) -> list[ev.Event]:
    return [e async for e in run]


def problems_of(path: Path) -> NetworkFileError:
    with pytest.raises(NetworkFileError) as info:
        load_network(path, provider=ScriptedProvider(default="x"))
    return info.value


# -- the shipped examples, offline ----------------------------------------------------------------


@pytest.mark.parametrize(("message", "chosen"), [
    ("I was charged twice for my subscription, please refund one payment", "billing"),
    ("The app crashes with an error when I upload a file", "technical"),
    ("What are your opening hours?", "general"),
])
async def test_support_triage_routes_to_one_specialist_offline(message: str, chosen: str) -> None:
    net = load_network(SHIPPED / "support-triage.yaml", provider=DemoProvider(delay=0))
    run = net.stream(message)
    events = await collect(run)
    assert isinstance(events[-1], ev.RunFinished)
    statuses = {e.task: e.status for e in events if isinstance(e, ev.TaskFinished)}
    specialists = {"billing", "technical", "general"}
    assert statuses["classifier"] == "done"
    assert statuses[chosen] == "done"
    assert all(statuses[s] == "skipped" for s in specialists - {chosen})
    result = run.result
    assert result is not None
    assert result["classifier"].last_text_content == chosen
    answer = result.last_text_content
    assert result.last_task == chosen and message in answer and "specialist" in answer.lower()
    assert "offline demo" in answer.lower()  # honest about not being a model
    assert next(e for e in events if isinstance(e, ev.RunStarted)).is_language_model is False


async def test_parallel_analysis_runs_at_once_and_shares_memory_offline() -> None:
    net = load_network(SHIPPED / "parallel-analysis.yaml", provider=DemoProvider(delay=0))
    text = "The new Acme dashboard is fast and easy, but the export to Excel is broken."
    run = net.stream(text)
    events = await collect(run)
    assert isinstance(events[-1], ev.RunFinished)
    analysers = ["sentiment", "entities", "keywords"]
    first_finish = min(i for i, e in enumerate(events) if isinstance(e, ev.TaskFinished))
    started = [e.task for e in events[:first_finish] if isinstance(e, ev.TaskStarted)]
    assert sorted(started) == sorted(analysers)  # all three started before any finished
    writers = {e.key: e.writer for e in events if isinstance(e, ev.MemoryChanged)}
    assert writers == {"sentiment": "sentiment_analyzer", "entities": "entity_extractor",
                       "keywords": "keyword_extractor"}
    memory = net.memory
    assert memory.get("sentiment")["label"] in ("positive", "negative", "mixed", "neutral")
    assert "Acme" in memory.get("entities") and "Excel" in memory.get("entities")
    assert "dashboard" in memory.get("keywords")
    synthesis = next(i for i, e in enumerate(events) if isinstance(e, ev.TaskStarted) and e.task == "synthesis")
    assert all(i < synthesis for i, e in enumerate(events) if isinstance(e, ev.MemoryChanged))
    recalls = [e for e in events if isinstance(e, ev.ToolUse) and e.task == "synthesis"]
    assert sorted(e.input["key"] for e in recalls) == sorted(analysers)
    report = run.result.last_text_content if run.result else ""
    assert "sentiment" in report and "Excel" in report and "dashboard" in report
    assert run.result is not None and run.result.last_task == "synthesis"


def test_shipped_networks_are_listed_and_found() -> None:
    names = {n.name: n for n in list_networks()}
    assert {"support-triage", "parallel-analysis"} <= set(names)
    assert names["support-triage"].source == "shipped" and names["support-triage"].tasks == 4
    assert find_network_file("parallel-analysis") == SHIPPED / "parallel-analysis.yaml"
    with pytest.raises(ConfigurationError, match="Unknown network 'nope'"):
        find_network_file("nope")


def test_user_network_overrides_and_is_listed(robotlab_home: Path) -> None:
    write(robotlab_home / "config" / "networks" / "mine.yaml",
          "name: mine\ndescription: my own\nrobots:\n  a: {system_prompt: hi}\ntasks:\n  a: {}\n")
    names = {n.name: n for n in list_networks()}
    assert names["mine"].source == "user" and names["mine"].description == "my own"


# -- loading --------------------------------------------------------------------------------------


async def test_robots_by_reference_inline_and_from_files(tmp_path: Path, robotlab_home: Path) -> None:
    write(robotlab_home / "config" / "robots" / "helper.md",
          "---\ndescription: a helper\n---\nYou help {{ customer }}.")
    write(tmp_path / "templates" / "writer.md", "---\ntemperature: 0.1\n---\nYou write for {{ customer }}.")
    write(tmp_path / "robots" / "local.md", "You are local.")
    path = write(tmp_path / "net.yaml", """
name: refs
context: {customer: Ada}
robots:
  inline: {system_prompt: "Plain {{ customer }}", model: demo}
  from_template: {template: writer}
  from_file: {file: robots/local.md}
  by_name: helper
tasks:
  inline: {}
  t2: {robot: from_template, depends_on: [inline]}
  t3: {robot: from_file, depends_on: [inline]}
  t4: {robot: by_name, depends_on: [t2, t3]}
  t5: {robot: {system_prompt: "I am inline in the task."}, depends_on: [t4]}
  t6: {robot: helper, depends_on: [t5]}
""")
    provider = ScriptedProvider(default="ok")
    net = load_network(path, provider=provider)
    await net.arun("go")
    systems = [call.system for call in provider.history]
    assert systems == ["Plain Ada", "You write for Ada.", "You are local.", "You help Ada.",
                       "I am inline in the task.", "You help Ada."]
    assert net.tasks["t2"].robot.settings["temperature"] == 0.1
    assert net.source == path


async def test_routes_list_json_field_tools_and_memory(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
tools: none
memory: {policy: 30 days}
robots:
  classifier: {system_prompt: classify}
  a: {system_prompt: a}
  b: {system_prompt: b}
tasks:
  classifier: {}
  a: {depends_on: optional, tools: [remember]}
  b: {depends_on: optional}
routes:
  - from: classifier
    field: category
    match: {"re:^(money|cash)$": a}
    default: b
""")
    provider = ScriptedProvider(default="ok")
    provider.enqueue('{"category": "money", "note": "b"}')
    net = load_network(path, provider=provider)
    assert net.name == "net" and net.memory.get("policy") == "30 days"
    result = await net.arun("go")
    assert result.statuses == {"classifier": "done", "a": "done", "b": "skipped"}
    # the network level says "none"; the task (the run level) names a tool, and the run level wins
    assert provider.history[1].tool_names == ["remember"]
    assert provider.history[0].tool_names == []


async def test_task_tools_level_and_input_and_wait_for(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
robots:
  w: {system_prompt: w, tools: [remember]}
  r: {system_prompt: "got {{ answer }}"}
tasks:
  w: {}
  r: {wait_for: answer, timeout: 2, input: run, tools: none}
""")
    from workspace.providers.testing import ToolCall

    def reply(messages: Any, info: Any) -> Any:
        if info.system == "w" and not messages[-1].is_tool_result:
            return [ToolCall("remember", {"key": "answer", "value": "yes"})]
        return "done"

    from workspace.providers.testing import FunctionProvider

    provider = FunctionProvider(reply)
    net = load_network(path, provider=provider)
    await net.arun("go")
    assert any(call.system == "got yes" for call in provider.history)


# -- validation -----------------------------------------------------------------------------------


def test_cycle_is_reported_with_file_and_tasks(tmp_path: Path) -> None:
    path = write(tmp_path / "cycle.yaml", """
robots:
  r: {system_prompt: x}
tasks:
  a: {robot: r, depends_on: [c]}
  b: {robot: r, depends_on: [a]}
  c: {robot: r, depends_on: [b]}
""")
    err = problems_of(path)
    text = str(err)
    assert str(path) in text and "cycle" in text
    assert any(s in text for s in ("a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c"))
    assert err.problems[0].field == "depends_on"


def test_unknown_robot_names_task_field_and_suggests(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
robots:
  billing: {system_prompt: x}
tasks:
  main:
    robot: biling
""")
    err = problems_of(path)
    problem = err.problems[0]
    assert problem.task == "main" and problem.field == "robot" and problem.line == 6
    assert "unknown robot 'biling'" in str(err) and "did you mean 'billing'" in str(err)
    assert str(err).startswith(f"{path}:6: task 'main', field 'robot'")


def test_bad_fields_are_named_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
robots:
  r: {system_prompt: x, tool: [remember]}
tasks:
  a:
    robot: r
    depend_on: [b]
  b:
    robot: r
    depends_on: [zzz]
    tools: some
    timeout: -1
concurency: 2
""")
    err = problems_of(path)
    text = str(err)
    assert f"{path}: " in text and "problems" in text
    assert "line 3: unknown setting 'tool' in robots.r — did you mean 'tools'?" in text
    assert "line 7: unknown setting 'depend_on' in tasks.a — did you mean 'depends_on'?" in text
    # the file's shape has problems, and its references are still checked: every problem at once
    assert "line 10: task 'b', field 'depends_on': unknown task 'zzz'" in text
    assert "line 11: tasks.b.tools: 'some' is not valid: must be inherit, none, all or a list of names" in text
    assert "line 12: tasks.b.timeout: -1 is out of range: it must be more than 0" in text
    assert "line 13: unknown setting 'concurency' — did you mean 'concurrency'?" in text
    assert [p.line for p in err.problems] == [3, 7, 10, 11, 12, 13]


def test_a_misspelt_setting_names_file_line_and_the_right_key(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
robots:
  r:
    system_prompt: x
    temprature: 0.3
tasks:
  r: {}
""")
    err = problems_of(path)
    assert str(err) == f"{path}:5: unknown setting 'temprature' in robots.r — did you mean 'temperature'?"
    assert err.problems[0].line == 5 and err.problems[0].path == path


def test_an_unknown_task_key_names_file_line_and_the_right_key(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
robots:
  r: {system_prompt: x}
tasks:
  - name: r
    wait_fr: [answer]
""")
    err = problems_of(path)
    assert str(err) == f"{path}:6: unknown setting 'wait_fr' in tasks[0] — did you mean 'wait_for'?"


@pytest.mark.parametrize(("where", "text", "message"), [
    ("robot", "robots:\n  r: {system_prompt: x, temperature: 7}\ntasks:\n  r: {}\n",
     ":2: robots.r.temperature: 7 is out of range: it must be at most 2"),
    ("robot", "robots:\n  r: {system_prompt: x, top_p: 3}\ntasks:\n  r: {}\n",
     ":2: robots.r.top_p: 3 is out of range: it must be at most 1"),
    ("inline robot", "tasks:\n  r:\n    robot: {system_prompt: x, max_tokens: 0}\n",
     ":3: tasks.r.robot.max_tokens: 0 is out of range: it must be at least 1"),
    ("network", "concurrency: 0\nrobots:\n  r: {system_prompt: x}\ntasks:\n  r: {}\n",
     ":1: concurrency: 0 is out of range: it must be at least 1"),
    ("network", "concurrency: many\nrobots:\n  r: {system_prompt: x}\ntasks:\n  r: {}\n",
     ":1: concurrency: 'many' is not valid: must be 'auto' or a positive number"),
    ("robot", "robots:\n  r: {system_prompt: x, temperature: hot}\ntasks:\n  r: {}\n",
     ":2: robots.r.temperature: 'hot' is not valid: Input should be a valid number"),
])
def test_values_out_of_range_or_of_the_wrong_type_are_errors(tmp_path: Path, where: str, text: str,
                                                             message: str) -> None:
    path = write(tmp_path / "net.yaml", text)
    assert str(problems_of(path)) == f"{path}{message}", where


def test_the_json_schema_is_valid_and_describes_the_shipped_networks() -> None:
    import jsonschema
    import yaml

    from workspace.network.schema import network_json_schema

    schema = network_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["properties"]) == {"name", "description", "concurrency", "max_concurrent_robots", "tools", "mcp",
                                         "context", "memory", "robots", "tasks", "groups", "routes", "bus", "budget",
                                         "config"}
    assert schema["required"] == ["tasks"] and schema["additionalProperties"] is False
    json.dumps(schema)  # plain JSON
    validator = jsonschema.Draft202012Validator(schema)
    for path in SHIPPED.glob("*.yaml"):
        assert not list(validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))), path
    assert list(validator.iter_errors({"tasks": {"a": {"depend_on": ["b"]}}}))
    assert list(validator.iter_errors({"robots": {"r": {"temperature": 7}}, "tasks": {}}))


def test_route_problems(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", """
robots:
  r: {system_prompt: x}
tasks:
  c:
    robot: r
    route: {match: {x: a, y: nope}}
  a: {robot: r}
""")
    text = str(problems_of(path))
    assert "task 'c', field 'route': routes to 'a', which is not optional: give 'a' depends_on: optional" in text
    assert "unknown task 'nope'" in text


def test_invalid_yaml_and_wrong_shapes(tmp_path: Path) -> None:
    err = problems_of(write(tmp_path / "broken.yaml", "tasks: [\n  a: {\n"))
    assert "not valid YAML" in str(err) and str(tmp_path / "broken.yaml") in str(err)
    assert "needs 'tasks'" in str(problems_of(write(tmp_path / "empty.yaml", "name: x\n")))
    assert "a network file is a mapping" in str(problems_of(write(tmp_path / "list.yaml", "- a\n")))
    text = str(problems_of(write(tmp_path / "robot.yaml", "robots:\n  r: {model: x}\ntasks:\n  r: {}\n")))
    assert "robot 'r': give its instructions" in text
    with pytest.raises(ConfigurationError, match="network file not found"):
        load_network(tmp_path / "missing.yaml")


def test_pydantic_is_imported_only_when_a_file_is_loaded() -> None:
    code = ("import sys, workspace.network\n"
            "assert 'pydantic' not in sys.modules and 'workspace.network.schema' not in sys.modules\n"
            "print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_nothing_runs_when_a_file_has_problems(tmp_path: Path) -> None:
    path = write(tmp_path / "net.yaml", "robots:\n  r: {system_prompt: x}\ntasks:\n  a: {robot: r, depends_on: [b]}\n")
    provider = ScriptedProvider(default="x")
    with pytest.raises(NetworkFileError):
        load_network(path, provider=provider)
    assert provider.history == []


# -- command line ---------------------------------------------------------------------------------


def robotlab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "ui.main", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def test_cli_network_run_prints_events_per_task() -> None:
    result = robotlab("network", "run", "support-triage", "I need a refund for my invoice")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "▶ task classifier" in out and "[classifier] billing" in out
    assert "■ task technical skipped" in out and "▶ task billing" in out
    assert "tasks: classifier done, billing done, technical skipped, general skipped" in out


def test_cli_network_run_json_and_show_and_list(tmp_path: Path) -> None:
    result = robotlab("network", "run", str(SHIPPED / "parallel-analysis.yaml"), "Acme is great", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    finished = ev.RunFinished.kind
    network_run = events[0]["run_id"]
    own = [e for e in events if e["run_id"] == network_run]
    assert [e["kind"] for e in own].count(finished) == 1 and events[-1]["kind"] == finished
    assert "parent_run_id" not in events[-1]
    # Every task's robot run that started ends with its own terminal event, naming the network's run.
    started = {e["run_id"] for e in events if e["kind"] == ev.RunStarted.kind and e["run_id"] != network_run}
    ended = [e for e in events if e["kind"] in ev.TERMINAL_KINDS and e["run_id"] != network_run]
    assert started and sorted(e["run_id"] for e in ended) == sorted(started)
    assert all(e["parent_run_id"] == network_run and e["task"] for e in ended)
    assert {e["task"] for e in events if e["kind"] == ev.MemoryChanged.kind} == {"sentiment", "entities", "keywords"}

    show = robotlab("network", "show", "support-triage")
    assert show.returncode == 0 and "Execution plan" in show.stdout and "graph TD" in show.stdout
    listed = json.loads(robotlab("network", "list", "--json").stdout)
    assert {"support-triage", "parallel-analysis"} <= {n["name"] for n in listed}

    bad = write(tmp_path / "bad.yaml", "tasks:\n  a: {robot: nobody}\n")
    failed = robotlab("network", "run", str(bad), "hi")
    assert failed.returncode == 2 and "unknown robot 'nobody'" in failed.stderr and "Traceback" not in failed.stderr
