"""Network YAML files: where they are (:func:`list_networks`, :func:`find_network_file`) and how one
becomes a :class:`~workspace.network.model.Network` (:func:`load_network`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.network.errors import NetworkFileError, Problem
from workspace.network.graph import find_cycle
from workspace.network.model import Network, Task
from workspace.network.routing import Route

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.providers.base import Provider
    from workspace.robot import Robot

__all__ = ["NetworkInfo", "find_network_file", "list_networks", "load_network", "network_dirs"]


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


_NETWORK_KEYS = ("name", "description", "concurrency", "tools", "mcp", "context", "memory", "robots", "tasks",
                 "groups", "routes")
_ROBOT_KEYS = ("name", "description", "system_prompt", "template", "robot", "file", "model", "api_base", "tools",
               "mcp", "context", "max_turns", "temperature", "top_p", "top_k", "max_tokens", "presence_penalty",
               "frequency_penalty", "stop")
_TASK_KEYS = ("robot", "description", "depends_on", "context", "tools", "mcp", "memory", "route", "input",
              "wait_for", "timeout")
_ROUTE_KEYS = ("match", "default", "field")
_ROUTES_KEYS = ("from", *_ROUTE_KEYS)


@dataclass(frozen=True, slots=True)
class NetworkInfo:
    name: str
    description: str | None
    path: Path
    #: "project", "user" or "shipped"
    source: str
    tasks: int = 0


def network_dirs(folder: Path | None = None) -> list[Path]:
    """Where network files are looked up: the project's, the user's, the shipped ones."""
    from workspace.templates import search_path

    return search_path(folder, kind="networks")


def list_networks(folder: Path | None = None) -> list[NetworkInfo]:
    """Every network file found (first of each name), sorted by name. Files that do not parse
    are listed with their problem as the description."""
    import yaml

    from workspace.catalog import _source

    seen: dict[str, NetworkInfo] = {}
    for directory in network_dirs(folder):
        if not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                data = {"description": f"(cannot be read: {type(exc).__name__})"}
            if not isinstance(data, dict):
                data = {"description": "(not a network file: the top level must be a mapping)"}
            name = str(data.get("name") or path.stem)
            tasks = data.get("tasks")
            if name not in seen:
                seen[name] = NetworkInfo(name, data.get("description"), path, _source(path, folder),
                                         len(tasks) if isinstance(tasks, dict | list) else 0)
    return sorted(seen.values(), key=lambda n: n.name)


def find_network_file(name: str | Path, folder: Path | None = None) -> Path:
    """A network file by path, or by name among :func:`list_networks`."""
    candidate = Path(name)
    if candidate.is_file():
        return candidate
    text = str(name)
    for info in list_networks(folder):
        if text in (info.name, info.path.stem):
            return info.path
    for directory in network_dirs(folder):
        for ext in (".yaml", ".yml"):
            path = directory / f"{text}{ext}"
            if path.is_file():
                return path
    available = ", ".join(n.name for n in list_networks(folder)) or "(none)"
    raise ConfigurationError(
        f"Unknown network '{text}': no such file, and no network of that name. Available networks: {available}. "
        f"Add your own as a YAML file in {network_dirs(folder)[-2]}"
    )


class _Lines:
    """Line numbers of the YAML keys, by path (``("tasks", "billing", "robot")``)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[Any, ...], int] = {}
        try:
            import yaml

            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except Exception:
            node = None
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: Any, path: tuple[Any, ...]) -> None:
        import yaml

        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, str(key.value))
                self.lines[sub] = key.start_mark.line + 1
                self._walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = (*path, i)
                self.lines[sub] = item.start_mark.line + 1
                self._walk(item, sub)

    def at(self, *path: Any) -> int | None:
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return None


class _Loader:
    def __init__(self, path: Path, text: str, *, folder: Path | None, config: Config | None,
                 provider: Provider | None, model: str | None) -> None:
        self.path = path
        self.base = path.parent
        self.lines = _Lines(text)
        self.folder = folder
        self.config = config
        self.provider = provider
        self.model = model
        self.problems: list[Problem] = []
        self.robots: dict[str, Robot] = {}
        self.failed_robots: set[str] = set()

    def problem(self, message: str, *path: Any, task: str | None = None, robot: str | None = None,
                field: str | None = None) -> None:
        self.problems.append(Problem(message, task=task, robot=robot, field=field, path=self.path,
                                     line=self.lines.at(*path)))

    def unknown_keys(self, data: Mapping[str, Any], allowed: Sequence[str], *path: Any, task: str | None = None,
                     robot: str | None = None, what: str = "") -> None:
        for key in data:
            if str(key) not in allowed:
                self.problem(f"unknown field{_suggest(str(key), allowed)}; {what}fields are: {', '.join(allowed)}",
                             *path, str(key), task=task, robot=robot, field=str(key))

    def allowed_here(self, *path: Any, mcp: Any = None, api_base: Any = None, robot: str | None = None,
                     task: str | None = None) -> bool:
        """A network file inside the opened folder may only name MCP servers and use local api_bases
        (see :func:`workspace.trust.folder_file_problem`); False (and a problem) when it does more."""
        from workspace.trust import folder_file_problem

        problem = folder_file_problem(self.path, self.folder, mcp=mcp, api_base=api_base)
        if problem is None:
            return True
        field = str(path[-1]) if path else None
        self.problem(problem.split(": ", 1)[1], *path, robot=robot, task=task, field=field)
        return False

    # -- robots ---------------------------------------------------------------------------
    def template_dirs(self) -> list[Path]:
        from workspace.templates import search_path

        return [self.base, self.base / "templates", *search_path(self.folder, kind="templates")]

    def robot_options(self, spec: Mapping[str, Any], name: str, path: tuple[Any, ...]) -> dict[str, Any]:
        from workspace.templates import SETTING_KEYS
        from workspace.tools import selection

        options: dict[str, Any] = {"config": self.config, "folder": self.folder}
        if self.provider is not None:
            options["provider"] = self.provider
        for key in ("tools", "mcp"):
            if key in spec:
                try:
                    selection.check_level(spec[key], what=key)
                except ValueError as exc:
                    self.problem(str(exc), *path, key, robot=name, field=key)
                    continue
                if key == "mcp" and not self.allowed_here(*path, key, mcp=spec[key], robot=name):
                    continue
                options[key] = spec[key] if spec[key] is not None else "none"
        if spec.get("api_base") is not None:
            self.allowed_here(*path, "api_base", api_base=spec["api_base"], robot=name)
        if "context" in spec:
            if isinstance(spec["context"], Mapping):
                options["context"] = dict(spec["context"])
            else:
                self.problem("must be a mapping of template variables", *path, "context", robot=name,
                             field="context")
        for key in ("description", "api_base"):
            if spec.get(key) is not None:
                options[key] = str(spec[key])
        model = self.model or spec.get("model")
        if model is not None:
            if not isinstance(model, str):
                self.problem("must be a model id like 'openai/gpt-4o-mini'", *path, "model", robot=name, field="model")
            else:
                options["model"] = model
        if "max_turns" in spec:
            value = spec["max_turns"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                self.problem("must be a positive whole number", *path, "max_turns", robot=name, field="max_turns")
            else:
                options["max_turns"] = value
        for key in SETTING_KEYS:
            if key in spec:
                options[key] = spec[key]
        return options

    def build_robot(self, name: str, spec: Any, path: tuple[Any, ...]) -> Robot | None:
        from workspace.robot import Robot
        from workspace.templates import Template

        if isinstance(spec, str):
            spec = {"robot": spec}
        if not isinstance(spec, Mapping):
            self.problem("a robot is a mapping (system_prompt, template, file or robot, and options) or the name "
                         "of a robot file", *path, robot=name)
            return None
        self.unknown_keys(spec, _ROBOT_KEYS, *path, robot=name, what="robot ")
        sources = [k for k in ("system_prompt", "template", "file", "robot") if spec.get(k) is not None]
        if not sources:
            self.problem("give its instructions: system_prompt, template, file (a robot .md file) or robot "
                         "(the name of a robot file)", *path, robot=name)
            return None
        if "robot" in sources and len(sources) > 1:
            self.problem(f"'robot' refers to a robot file; it cannot be combined with {', '.join(sources[:-1])}",
                         *path, "robot", robot=name, field="robot")
            return None
        robot_name = str(spec.get("name") or name)
        options = self.robot_options(spec, name, path)
        try:
            template: Any = None
            system_prompt = spec.get("system_prompt")
            if system_prompt is not None and not isinstance(system_prompt, str):
                self.problem("must be text", *path, "system_prompt", robot=name, field="system_prompt")
                return None
            if spec.get("robot") is not None:
                template = self.find_robot_template(str(spec["robot"]), path + ("robot",), robot=name)
                if template is None:
                    return None
            elif spec.get("file") is not None:
                file = Path(str(spec["file"]))
                file = file if file.is_absolute() else self.base / file
                if not file.is_file():
                    self.problem(f"no such file: {file}", *path, "file", robot=name, field="file")
                    return None
                template = Template.load(file)
            elif spec.get("template") is not None:
                ref = str(spec["template"])
                from workspace.templates import find_template

                try:
                    template = find_template(ref, self.template_dirs())
                except ConfigurationError as exc:
                    self.problem(str(exc), *path, "template", robot=name, field="template")
                    return None
            if template is None and system_prompt is not None and ("{{" in system_prompt or "{%" in system_prompt):
                # A system prompt with template syntax is rendered with the run's variables.
                template, system_prompt = Template(name=robot_name, body=system_prompt), None
            return Robot(robot_name, system_prompt=system_prompt, template=template, **options)
        except (ConfigurationError, ValueError, TypeError) as exc:
            self.problem(str(exc), *path, robot=name)
            return None

    def find_robot_template(self, ref: str, path: tuple[Any, ...], *, robot: str | None = None,
                            task: str | None = None) -> Any:
        """A robot file (catalog) or a template by name; None (problem noted) when neither exists."""
        from workspace.catalog import find_robot_file, list_robots
        from workspace.templates import Template, find_template

        local = Path(ref)
        if local.suffix in (".md", ".markdown"):
            file = local if local.is_absolute() else self.base / local
            if file.is_file():
                return Template.load(file)
        try:
            return Template.load(find_robot_file(ref, self.folder))
        except ConfigurationError:
            pass
        try:
            return find_template(ref, self.template_dirs())
        except ConfigurationError:
            pass
        known = [*self.robots, *(r.name for r in list_robots(self.folder))]
        self.problem(f"unknown robot '{ref}': not defined under 'robots' in this file, and no robot file or template "
                     f"has that name{_suggest(ref, known)}", *path, task=task, robot=robot,
                     field="robot")
        return None

    # -- tasks ----------------------------------------------------------------------------
    def task_robot(self, task: str, spec: Mapping[str, Any], path: tuple[Any, ...]) -> Robot | None:
        ref = spec.get("robot", task)
        if isinstance(ref, Mapping):
            key = f"{task}"
            robot = self.build_robot(key, ref, path + ("robot",))
            return robot
        if not isinstance(ref, str):
            self.problem("must be the name of a robot (under 'robots', or a robot file) or a robot mapping",
                         *path, "robot", task=task, field="robot")
            return None
        if ref in self.robots:
            return self.robots[ref]
        if ref in self.failed_robots:
            return None
        from workspace.robot import Robot

        template = self.find_robot_template(ref, path + ("robot",), task=task)
        if template is None:
            return None
        options = self.robot_options({}, ref, path)
        try:
            robot = Robot(ref, template=template, **options)
        except (ConfigurationError, ValueError, TypeError) as exc:
            self.problem(str(exc), *path, "robot", task=task, field="robot")
            return None
        self.robots[ref] = robot
        return robot

    def route(self, spec: Any, path: tuple[Any, ...], *, task: str | None, keys: Sequence[str]) -> Route | None:
        if not isinstance(spec, Mapping):
            self.problem("a route is a mapping: match (answer -> task), default, field", *path, task=task,
                         field="route")
            return None
        self.unknown_keys(spec, keys, *path, task=task, what="route ")
        match = spec.get("match") or {}
        if not isinstance(match, Mapping):
            self.problem("match maps an answer word (or re:regex) to a task name", *path, "match", task=task,
                         field="route.match")
            return None
        clean: dict[str, str | list[str]] = {}
        for pattern, target in match.items():
            if isinstance(target, str):
                clean[str(pattern)] = target
            elif isinstance(target, list) and all(isinstance(t, str) for t in target):
                clean[str(pattern)] = list(target)
            else:
                self.problem(f"the target of '{pattern}' must be a task name or a list of task names",
                             *path, "match", str(pattern), task=task, field="route.match")
        default = spec.get("default")
        if default is not None and not isinstance(default, str | list):
            self.problem("default must be a task name or a list of task names", *path, "default", task=task,
                         field="route.default")
            default = None
        if not clean and default is None:
            self.problem("a route needs match entries or a default", *path, task=task, field="route")
        if "match" in spec and spec["match"] and not clean:
            return None
        field_name = spec.get("field")
        if field_name is not None and not isinstance(field_name, str):
            self.problem("field must be the name of a field of a JSON answer", *path, "field", task=task,
                         field="route.field")
            field_name = None
        return Route(match=clean, default=default, field=field_name)

    def load(self, data: Any) -> Network | None:
        if not isinstance(data, Mapping):
            self.problem("a network file is a mapping with at least 'tasks' (and usually 'robots')")
            return None
        self.unknown_keys(data, _NETWORK_KEYS, what="network ")
        name = str(data.get("name") or self.path.stem)
        concurrency = data.get("concurrency", "auto")
        if not (concurrency in ("auto", "threads", "async") or (
                isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0)):
            self.problem(f"must be 'auto' or a positive number, got {concurrency!r}", "concurrency",
                         field="concurrency")
            concurrency = "auto"
        from workspace.tools import selection

        levels: dict[str, Any] = {}
        for key in ("tools", "mcp"):
            value = data.get(key, "inherit")
            try:
                selection.check_level(value, what=key)
                levels[key] = value if value is not None else "none"
            except ValueError as exc:
                self.problem(str(exc), key, field=key)
                levels[key] = "inherit"
            if key == "mcp" and not self.allowed_here(key, mcp=value):
                levels[key] = "inherit"
        context = data.get("context") or {}
        if not isinstance(context, Mapping):
            self.problem("must be a mapping of template variables", "context", field="context")
            context = {}
        memory_values = data.get("memory") or {}
        if not isinstance(memory_values, Mapping):
            self.problem("must be a mapping of initial shared-memory values", "memory", field="memory")
            memory_values = {}

        robots = data.get("robots") or {}
        if not isinstance(robots, Mapping):
            self.problem("must be a mapping of robot name -> robot", "robots", field="robots")
            robots = {}
        for robot_name, spec in robots.items():
            robot = self.build_robot(str(robot_name), spec, ("robots", str(robot_name)))
            if robot is None:
                self.failed_robots.add(str(robot_name))
            else:
                self.robots[str(robot_name)] = robot

        raw_tasks = data.get("tasks")
        tasks: list[tuple[str, Mapping[str, Any], tuple[Any, ...]]] = []
        if isinstance(raw_tasks, Mapping):
            for task_name, spec in raw_tasks.items():
                tasks.append((str(task_name), spec if spec is not None else {}, ("tasks", str(task_name))))
        elif isinstance(raw_tasks, list):
            for i, spec in enumerate(raw_tasks):
                if not isinstance(spec, Mapping) or not spec.get("name"):
                    self.problem("each task in a list needs a name", "tasks", i, field="tasks")
                    continue
                rest = {k: v for k, v in spec.items() if k != "name"}
                tasks.append((str(spec["name"]), rest, ("tasks", i)))
        else:
            self.problem("a network needs 'tasks': a mapping of task name -> task", "tasks", field="tasks")
        task_names = [t[0] for t in tasks]
        if len(set(task_names)) != len(task_names):
            dupes = sorted({n for n in task_names if task_names.count(n) > 1})
            self.problem(f"task names must be unique: {', '.join(dupes)}", "tasks", field="tasks")

        groups = data.get("groups") or {}
        if not isinstance(groups, Mapping):
            self.problem("must map a group name to a list of task names", "groups", field="groups")
            groups = {}
        group_members: dict[str, list[str]] = {}
        for group, members in groups.items():
            if isinstance(members, Mapping):
                members = members.get("tasks")
            if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
                self.problem("a group is a list of task names", "groups", str(group), field=f"groups.{group}")
                continue
            if str(group) in task_names:
                self.problem(f"'{group}' is already a task name", "groups", str(group), field=f"groups.{group}")
                continue
            for member in members:
                if member not in task_names:
                    self.problem(f"unknown task '{member}'{_suggest(member, task_names)}", "groups", str(group),
                                 field=f"groups.{group}")
            group_members[str(group)] = list(members)

        network = Network(name, concurrency=concurrency, tools=levels["tools"], mcp=levels["mcp"],
                          context=context, description=data.get("description"))
        network.source = self.path
        deps_of: dict[str, list[str]] = {}
        routes: list[tuple[Route, tuple[Any, ...]]] = []
        built: list[Task] = []
        for task_name, spec, path in tasks:
            if not isinstance(spec, Mapping):
                self.problem("a task is a mapping (robot, depends_on, context, ...)", *path, task=task_name)
                continue
            self.unknown_keys(spec, _TASK_KEYS, *path, task=task_name, what="task ")
            depends = spec.get("depends_on", "none")
            if depends is None:
                depends = "none"
            if isinstance(depends, str) and depends not in ("none", "optional"):
                depends = [depends]
            if isinstance(depends, list):
                if not all(isinstance(d, str) for d in depends):
                    self.problem("must be 'none', 'optional' or a list of task names", *path, "depends_on",
                                 task=task_name, field="depends_on")
                    depends = []
                known = [*task_names, *group_members]
                for dep in depends:
                    if dep not in known:
                        self.problem(f"unknown task '{dep}'{_suggest(dep, known)}", *path, "depends_on",
                                     task=task_name, field="depends_on")
                    elif dep == task_name:
                        self.problem("a task cannot depend on itself", *path, "depends_on", task=task_name,
                                     field="depends_on")
                expanded: list[str] = []
                for dep in depends:
                    expanded.extend(group_members.get(dep, [dep]))
                deps_of[task_name] = [d for d in expanded if d in task_names and d != task_name]
            elif not isinstance(depends, str):
                self.problem("must be 'none', 'optional' or a list of task names", *path, "depends_on",
                             task=task_name, field="depends_on")
                depends = "none"
            else:
                deps_of[task_name] = []
            options: dict[str, Any] = {"depends_on": depends}
            for key in ("tools", "mcp"):
                if key in spec:
                    try:
                        selection.check_level(spec[key], what=key)
                        options[key] = spec[key] if spec[key] is not None else "none"
                    except ValueError as exc:
                        self.problem(str(exc), *path, key, task=task_name, field=key)
                    if key == "mcp" and not self.allowed_here(*path, key, mcp=spec[key], task=task_name):
                        options.pop(key, None)
            for key, kind in (("context", "template variables"), ("memory", "values merged into shared memory")):
                if key in spec:
                    if isinstance(spec[key], Mapping):
                        options[key] = dict(spec[key])
                    else:
                        self.problem(f"must be a mapping of {kind}", *path, key, task=task_name, field=key)
            if "input" in spec:
                if isinstance(spec["input"], str) and spec["input"].strip():
                    options["input"] = spec["input"]
                else:
                    self.problem("must be 'run', 'upstream' or a template text", *path, "input", task=task_name,
                                 field="input")
            if "wait_for" in spec:
                value = spec["wait_for"]
                if isinstance(value, str) or (isinstance(value, list) and value
                                              and all(isinstance(v, str) for v in value)):
                    options["wait_for"] = value
                else:
                    self.problem("must be a memory key or a list of keys", *path, "wait_for", task=task_name,
                                 field="wait_for")
            if "timeout" in spec:
                value = spec["timeout"]
                if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                    self.problem("must be a positive number of seconds", *path, "timeout", task=task_name,
                                 field="timeout")
                elif "wait_for" not in spec:
                    self.problem("timeout limits wait_for; add wait_for: [keys]", *path, "timeout",
                                 task=task_name, field="timeout")
                else:
                    options["wait_timeout"] = float(value)
            if spec.get("description") is not None:
                options["description"] = str(spec["description"])
            if "route" in spec:
                route = self.route(spec["route"], (*path, "route"), task=task_name, keys=_ROUTE_KEYS)
                if route is not None:
                    route.source = task_name
                    routes.append((route, (*path, "route")))
            robot = self.task_robot(task_name, spec, path)
            if robot is None:
                continue
            try:
                built.append(Task(task_name, robot, **options))
            except (ValueError, TypeError) as exc:
                self.problem(str(exc).replace(f"Task '{task_name}': ", ""), *path, task=task_name)

        raw_routes = data.get("routes") or []
        if not isinstance(raw_routes, list):
            self.problem("must be a list of routes (from, match, default, field)", "routes", field="routes")
            raw_routes = []
        for i, spec in enumerate(raw_routes):
            source = spec.get("from") if isinstance(spec, Mapping) else None
            if not isinstance(source, str):
                self.problem("a route needs 'from': the task whose answer decides", "routes", i, field="routes.from")
                continue
            if source not in task_names:
                self.problem(f"unknown task '{source}'{_suggest(source, task_names)}", "routes", i, "from",
                             field="routes.from")
                continue
            route = self.route(spec, ("routes", i), task=source, keys=_ROUTES_KEYS)
            if route is not None:
                route.source = source
                routes.append((route, ("routes", i)))

        optional = {name for name, spec, _ in tasks if isinstance(spec, Mapping) and spec.get("depends_on") ==
                    "optional"}
        for route, path in routes:
            for target in route.targets():
                if target not in task_names:
                    self.problem(f"unknown task '{target}'{_suggest(target, task_names)}", *path, task=route.source,
                                 field="route")
                elif target not in optional:
                    self.problem(f"routes to '{target}', which is not optional: give '{target}' depends_on: optional",
                                 *path, task=route.source, field="route")
        edges = {name: list(deps_of.get(name, [])) for name in task_names}
        for route, _ in routes:
            for target in route.targets():
                if target in edges and route.source is not None:
                    edges[target].append(route.source)
        cycle = find_cycle(edges)
        if cycle:
            self.problem("the tasks form a cycle: " + " -> ".join(cycle), "tasks", cycle[0], task=cycle[0],
                         field="depends_on")
        if self.problems:
            return None
        for task in built:
            network.add_task(task)
        for name, members in group_members.items():
            network.parallel(name).add(*members)
        for route, _ in routes:
            network.add_route(route)
        for key, value in memory_values.items():
            network.memory.set(str(key), value)
        return network


def load_network(
    path: str | Path,
    *,
    folder: str | Path | None = None,
    config: Config | None = None,
    provider: Provider | None = None,
    model: str | None = None,
) -> Network:
    """Build a :class:`Network` from a YAML file; every problem is reported before anything runs.

    ``provider`` (tests) and ``model`` (``--model``) override every robot's. Schema::

        name: support-triage            # default: the file name
        description: ...
        concurrency: auto               # or the most tasks running at once
        tools: inherit                  # network level: inherit | none | all | [names]
        mcp: none
        context: {company: Acme}        # template variables for every robot
        memory: {policy: "30 days"}     # initial shared-memory values
        robots:
          classifier:                   # inline: system_prompt (Jinja2 when it uses {{ }}) or template
            system_prompt: ...
            model: openai/gpt-4o-mini   # optional; also tools, mcp, context, description, max_turns,
                                        # temperature, top_p, max_tokens, ...
          helper: assistant             # a robot file or template by name (file: path/to.md works too)
        groups:
          analysers: [sentiment, entities]   # a name usable in depends_on
        tasks:
          classifier:
            robot: classifier           # default: the robot named like the task
            route:                      # activate optional tasks from the answer
              match: {billing: billing, "re:bug|crash": technical}
              default: general
              field: category           # optional: match this field of a JSON answer
          billing:
            depends_on: optional        # none (default) | optional | [tasks or groups]
            context: {department: billing}
            tools: none                 # run level for this task: inherit | none | all | [names]
            input: run                  # auto (default) | run | upstream | a Jinja2 template
            wait_for: [key]             # memory keys to wait for (timeout: seconds)
        routes:                         # routes may also be listed here, with from:
          - {from: classifier, match: {...}, default: general}
    """
    import yaml

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"{file}: network file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{file}: cannot read the network file ({exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise NetworkFileError(file, [Problem(f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                                              path=file, line=line)]) from exc
    loader = _Loader(file, text, folder=Path(folder).resolve() if folder is not None else None, config=config,
                     provider=provider, model=model)
    network = loader.load(data)
    if network is None or loader.problems:
        raise NetworkFileError(file, loader.problems)
    return network

