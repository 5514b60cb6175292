"""Network YAML files: where they are (:func:`list_networks`, :func:`find_network_file`) and how one
becomes a :class:`~workspace.network.model.Network` (:func:`load_network`).

Loading reads the file with :func:`workspace.schemas.load_yaml` (the line of every key), checks its
shape with the pydantic models of :mod:`workspace.network.schema` through
:func:`workspace.schemas.validate` (unknown keys with a did-you-mean, types, ranges), then checks
what the names mean: the robots (inline, robot files, templates), the tasks and groups named in
``depends_on`` and routes, cycles, and the folder's trust rules
(:func:`workspace.trust.folder_file_problem`). Every problem is reported at once, each with the
file and line, before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.network.errors import NetworkFileError, Problem
from workspace.network.graph import find_cycle
from workspace.network.model import Network, Task
from workspace.network.routing import Route
from workspace.readlimits import NETWORK_FILE_BYTES, FileLimitError, read_text_bounded
from workspace.schemas import did_you_mean

if TYPE_CHECKING:
    from workspace.ask_user import AskFn
    from workspace.config import Config
    from workspace.ledger import Ledger
    from workspace.network.schema import NetworkFile, RobotSpec, RouteSpec, TaskSpec
    from workspace.providers.base import Provider
    from workspace.robot import Robot
    from workspace.schemas import Lines

__all__ = ["NetworkInfo", "find_network_file", "list_networks", "load_network", "network_dirs"]

Loc = tuple[str | int, ...]


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

    from workspace import yaml_limits
    from workspace.catalog import _source

    seen: dict[str, NetworkInfo] = {}
    for directory in network_dirs(folder):
        if not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            try:
                data = yaml_limits.safe_load(read_text_bounded(path, NETWORK_FILE_BYTES, "network file"))
            except FileLimitError as exc:
                data = {"description": f"(cannot be read: {exc})"}
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


def load_network(
    path: str | Path,
    *,
    folder: str | Path | None = None,
    config: Config | None = None,
    provider: Provider | None = None,
    model: str | None = None,
    ask: AskFn | None = None,
) -> Network:
    """Build a :class:`Network` from a YAML file; every problem is reported before anything runs
    (one :class:`NetworkFileError`). The JSON Schema: :func:`workspace.network.schema.network_json_schema`.

    ``provider`` (tests) and ``model`` (``--model``) override every robot's. Schema::

        name: support-triage            # default: the file name
        description: ...
        concurrency: auto               # or the most tasks running at once
        max_concurrent_robots: 4        # RobotLab's cap (optional; with concurrency, the tighter holds)
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
          approver: {person: true, timeout: 600, default: approved}   # a person answers (ask=, or the terminal)
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
            on_error: continue          # fail (default) | continue: a failure becomes the answer "Error: ..."
        routes:                         # routes may also be listed here, with from:
          - {from: classifier, match: {...}, default: general}
        bus:                            # or bus: true: the robots talk on one bus (the send_message tool)
          serve: [helper]               # robots that answer each message with a run of their own
          reply_timeout: 60             # seconds send_message waits for the reply (default 120)
        config: {temperature: 0.2}      # RobotLab's RunConfig for every robot (a task's config: goes over it)
        budget:                         # one budget all the tasks share (RobotLab's Budget::Ledger)
          tokens: 20000                 # input + output tokens of every model call together
          cost: 0.50                    # US dollars (known only where the model's price is)
    """
    from workspace.schemas import SchemaError, load_yaml

    file = Path(path)
    try:
        text = read_text_bounded(file, NETWORK_FILE_BYTES, "network file")
    except FileNotFoundError:
        raise ConfigurationError(f"{file}: network file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{file}: cannot read the network file ({exc})") from exc
    try:
        data, lines = load_yaml(text, source=str(file))
    except SchemaError as exc:
        raise NetworkFileError(file, [_schema_problem(p, file) for p in exc.problems]) from None
    loader = _Loader(file, lines, folder=Path(folder).resolve() if folder is not None else None, config=config,
                     provider=provider, model=model, ask=ask)
    network = loader.load(data)
    if network is None or loader.problems:
        raise NetworkFileError(file, sorted(loader.problems, key=lambda p: p.line or 0))
    return network


def _schema_problem(text: str, path: Path) -> Problem:
    """A :class:`~workspace.schemas.SchemaError` line (``<path>:<line>[:<column>]: message``) as a Problem."""
    source = str(path)
    rest = text[len(source):] if text.startswith(source) else text
    found = re.match(r":(\d+)(?::\d+)?: ", rest)
    if found:
        return Problem(rest[found.end():], path=path, line=int(found.group(1)))
    return Problem(rest[2:] if rest.startswith(": ") else text, path=path)


class _Loader:
    """One load of a file: the problems found so far and the robots built (by name)."""

    def __init__(self, path: Path, lines: Lines, *, folder: Path | None, config: Config | None,
                 provider: Provider | None, model: str | None, ask: AskFn | None = None) -> None:
        self.path = path
        self.ask = ask
        self.base = path.parent
        self.lines = lines
        self.folder = folder
        self.config = config
        self.provider = provider
        self.model = model
        self.problems: list[Problem] = []
        self.robots: dict[str, Robot] = {}
        self.failed_robots: set[str] = set()
        #: True once the schema found problems: the rest is checked, nothing is built.
        self.checking_only = False

    def problem(self, message: str, loc: Loc = (), *, task: str | None = None, robot: str | None = None,
                field: str | None = None) -> None:
        self.problems.append(Problem(message, task=task, robot=robot, field=field, path=self.path,
                                     line=self.lines.line(loc) if loc else None))

    def allowed_here(self, loc: Loc, *, mcp: Any = None, api_base: Any = None, robot: str | None = None,
                     task: str | None = None) -> bool:
        """A network file inside the opened folder may only name MCP servers and use local api_bases
        (see :func:`workspace.trust.folder_file_problem`); False (and a problem) when it does more."""
        from workspace.trust import folder_file_problem

        problem = folder_file_problem(self.path, self.folder, mcp=mcp, api_base=api_base)
        if problem is None:
            return True
        prefix = f"{self.path}: "
        self.problem(problem[len(prefix):] if problem.startswith(prefix) else problem, loc, robot=robot,
                     task=task, field=str(loc[-1]) if loc else None)
        return False

    # -- the file -------------------------------------------------------------------------
    def load(self, data: Any) -> Network | None:
        from workspace.network.schema import NetworkFile, salvage
        from workspace.schemas import SchemaError, validate

        if not isinstance(data, dict):
            self.problem("a network file is a mapping with at least 'tasks' (and usually 'robots')")
            return None
        spec: NetworkFile | None
        try:
            spec = validate(NetworkFile, data, lines=self.lines)
        except SchemaError as exc:
            self.problems.extend(_schema_problem(p, self.path) for p in exc.problems)
            self.checking_only = True
            spec = salvage(data)
        if spec is None:
            return None
        return self.build(spec)

    def build(self, spec: NetworkFile) -> Network | None:
        levels = {"tools": "inherit", "mcp": "inherit", **self.levels(spec, ())}
        if spec.config is not None and spec.config.mcp is not None:  # the folder's trust rules hold there too
            self.allowed_here(("config", "mcp"), mcp=spec.config.mcp)
        if not self.checking_only:
            for robot_name, robot_spec in (spec.robots or {}).items():
                robot = self.build_robot(robot_name, robot_spec, ("robots", robot_name))
                if robot is None:
                    self.failed_robots.add(robot_name)
                else:
                    self.robots[robot_name] = robot
        tasks = self.task_entries(spec)
        task_names = [name for name, _, _ in tasks]
        groups = self.check_groups(spec.groups or {}, task_names)

        deps_of: dict[str, list[str]] = {}
        routes: list[tuple[Route, Loc]] = []
        built: list[Task] = []
        for name, task_spec, loc in tasks:
            task = self.build_task(name, task_spec, loc, task_names, groups, deps_of, routes)
            if task is not None:
                built.append(task)
        for i, entry in enumerate(spec.routes or []):
            if entry.from_ not in task_names:
                self.problem(f"unknown task '{entry.from_}'{did_you_mean(entry.from_, task_names)}",
                             ("routes", i, "from"), field="routes.from")
                continue
            route = self.route(entry, ("routes", i), task=entry.from_)
            if route is not None:
                route.source = entry.from_
                routes.append((route, ("routes", i)))
        self.check_routes_and_cycles(tasks, routes, deps_of)
        servers = self.bus_servers(spec, built)
        if self.problems or self.checking_only:
            return None

        network = Network(spec.name or self.path.stem, concurrency=spec.concurrency,
                          max_concurrent_robots=spec.max_concurrent_robots, tools=levels["tools"],
                          mcp=levels["mcp"], context=spec.context or {}, description=spec.description,
                          ledger=_ledger(spec), config=_config(spec.config))
        # Only a file without problems gets here: the network and its tasks are built.
        network.source = self.path
        for task in built:
            network.add_task(task)
        for group, members in groups.items():
            network.parallel(group).add(*members)
        for route, _ in routes:
            network.add_route(route)
        for key, value in (spec.memory or {}).items():
            network.memory.set(str(key), value)
        if spec.bus:
            timeout = spec.bus.reply_timeout if not isinstance(spec.bus, bool) else None
            network.with_bus(serve=servers, reply_timeout=timeout)
        return network

    def bus_servers(self, spec: NetworkFile, built: Sequence[Task]) -> list[Robot]:
        """The robots ``bus.serve`` names (under ``robots``, or a task's robot), each found or reported."""
        bus = spec.bus
        if bus is None or isinstance(bus, bool) or bus.serve is None or self.checking_only:
            return []
        known: dict[str, Robot] = {name: robot for name, robot in self.robots.items()}
        for task in built:
            known.setdefault(task.robot.name, task.robot)
        found: list[Robot] = []
        for i, name in enumerate([bus.serve] if isinstance(bus.serve, str) else bus.serve):
            robot = known.get(name)
            if robot is not None:
                found.append(robot)
            elif name not in self.failed_robots:
                loc: Loc = ("bus", "serve") if isinstance(bus.serve, str) else ("bus", "serve", i)
                self.problem(f"unknown robot '{name}' in serve{did_you_mean(name, list(known))} (serve names "
                             "robots under 'robots' or the robots of tasks)", loc, field="bus.serve")
        return found

    def levels(self, spec: NetworkFile | TaskSpec | RobotSpec, loc: Loc, *, task: str | None = None,
               robot: str | None = None) -> dict[str, Any]:
        """The ``tools`` / ``mcp`` levels ``spec`` gives (``null`` is ``none``), an ``mcp`` level only
        where the folder's trust rules allow it."""
        out: dict[str, Any] = {}
        for key in ("tools", "mcp"):
            if key in spec.model_fields_set:
                value = getattr(spec, key)
                value = "none" if value is None else value
                if key == "mcp" and not self.allowed_here((*loc, key), mcp=value, task=task, robot=robot):
                    continue
                out[key] = value
        return out

    def task_entries(self, spec: NetworkFile) -> list[tuple[str, TaskSpec, Loc]]:
        """(name, task, location) of every task, from the mapping or the list of tasks."""
        tasks: list[tuple[str, TaskSpec, Loc]] = []
        if spec.tasks is None:
            self.problem("a network needs 'tasks': a mapping of task name -> task", ("tasks",), field="tasks")
        elif isinstance(spec.tasks, dict):
            tasks = [(name, task or _empty_task(), ("tasks", name)) for name, task in spec.tasks.items()]
        else:
            tasks = [(task.name, task, ("tasks", i)) for i, task in enumerate(spec.tasks)]
        names = [name for name, _, _ in tasks]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            self.problem(f"task names must be unique: {', '.join(dupes)}", ("tasks",), field="tasks")
        return tasks

    def check_groups(self, groups: dict[str, list[str]], task_names: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for group, members in groups.items():
            loc: Loc = ("groups", group)
            if group in task_names:
                self.problem(f"'{group}' is already a task name", loc, field=f"groups.{group}")
                continue
            for member in members:
                if member not in task_names:
                    self.problem(f"unknown task '{member}'{did_you_mean(member, task_names)}", loc,
                                 field=f"groups.{group}")
            out[group] = list(members)
        return out

    def check_routes_and_cycles(self, tasks: Sequence[tuple[str, TaskSpec, Loc]],
                                routes: Sequence[tuple[Route, Loc]], deps_of: dict[str, list[str]]) -> None:
        task_names = [name for name, _, _ in tasks]
        optional = {name for name, spec, _ in tasks if spec.depends_on == "optional"}
        for route, loc in routes:
            for target in route.targets():
                if target not in task_names:
                    self.problem(f"unknown task '{target}'{did_you_mean(target, task_names)}", loc,
                                 task=route.source, field="route")
                elif target not in optional:
                    self.problem(f"routes to '{target}', which is not optional: give '{target}' depends_on: optional",
                                 loc, task=route.source, field="route")
        edges = {name: list(deps_of.get(name, [])) for name in task_names}
        for route, _ in routes:
            for target in route.targets():
                if target in edges and route.source is not None:
                    edges[target].append(route.source)
        cycle = find_cycle(edges)
        if cycle:
            self.problem("the tasks form a cycle: " + " -> ".join(cycle), ("tasks", cycle[0]), task=cycle[0],
                         field="depends_on")

    # -- tasks ----------------------------------------------------------------------------
    def build_task(self, name: str, spec: TaskSpec, loc: Loc, task_names: Sequence[str],
                   groups: dict[str, list[str]], deps_of: dict[str, list[str]],
                   routes: list[tuple[Route, Loc]]) -> Task | None:
        """Check one task (its dependencies into ``deps_of``, its route into ``routes``) and build it."""
        depends, deps_of[name] = self.depends_on(name, spec, loc, task_names, groups)
        options: dict[str, Any] = {"depends_on": depends, **self.levels(spec, loc, task=name)}
        if spec.context is not None:
            options["context"] = dict(spec.context)
        if spec.memory is not None:
            options["memory"] = dict(spec.memory)
        if spec.input is not None:
            options["input"] = spec.input
        if spec.timeout is not None:
            if spec.wait_for is None:
                self.problem("timeout limits wait_for; add wait_for: [keys]", (*loc, "timeout"), task=name,
                             field="timeout")
            else:
                options["wait_timeout"] = float(spec.timeout)
        if spec.wait_for is not None:
            options["wait_for"] = spec.wait_for
        if spec.description is not None:
            options["description"] = spec.description
        if spec.on_error is not None:
            options["on_error"] = spec.on_error
        if spec.config is not None:
            if spec.config.mcp is not None:
                self.allowed_here((*loc, "config", "mcp"), mcp=spec.config.mcp, task=name)
            options["config"] = _config(spec.config)
        if spec.route is not None:
            route = self.route(spec.route, (*loc, "route"), task=name)
            if route is not None:
                route.source = name
                routes.append((route, (*loc, "route")))
        if self.checking_only:
            return None
        robot = self.task_robot(name, spec, loc)
        if robot is None:
            return None
        try:
            return Task(name, robot, **options)
        except (ValueError, TypeError) as exc:
            self.problem(str(exc).replace(f"Task '{name}': ", ""), loc, task=name)
            return None

    def depends_on(self, name: str, spec: TaskSpec, loc: Loc, task_names: Sequence[str],
                   groups: dict[str, list[str]]) -> tuple[str | list[str], list[str]]:
        """A task's ``depends_on`` (``none``, ``optional`` or names) and the tasks it waits for."""
        depends: str | list[str] = spec.depends_on if spec.depends_on is not None else "none"
        if isinstance(depends, str) and depends not in ("none", "optional"):
            depends = [depends]
        if not isinstance(depends, list):
            return depends, []
        known = [*task_names, *groups]
        for dep in depends:
            if dep not in known:
                hint = did_you_mean(dep, [*known, "none", "optional"])
                self.problem(f"unknown task '{dep}'{hint}", (*loc, "depends_on"), task=name, field="depends_on")
            elif dep == name:
                self.problem("a task cannot depend on itself", (*loc, "depends_on"), task=name, field="depends_on")
        expanded = [member for dep in depends for member in groups.get(dep, [dep])]
        return depends, [d for d in expanded if d in task_names and d != name]

    def route(self, spec: RouteSpec, loc: Loc, *, task: str) -> Route | None:
        if not spec.match and spec.default is None:
            self.problem("a route needs match entries or a default", loc, task=task, field="route")
            return None
        return Route(match=dict(spec.match or {}), default=spec.default, field=spec.field)

    def task_robot(self, task: str, spec: TaskSpec, loc: Loc) -> Robot | None:
        ref = spec.robot if spec.robot is not None else task
        if not isinstance(ref, str):
            return self.build_robot(task, ref, (*loc, "robot"))
        if ref in self.robots:
            return self.robots[ref]
        if ref in self.failed_robots:
            return None
        from workspace.robot import Robot

        template = self.find_robot_template(ref, (*loc, "robot"), task=task)
        if template is None:
            return None
        try:
            robot = Robot(ref, template=template, **self.robot_options(None, ref, loc))
        except (ConfigurationError, ValueError, TypeError) as exc:
            self.problem(str(exc), (*loc, "robot"), task=task, field="robot")
            return None
        self.robots[ref] = robot
        return robot

    # -- robots ---------------------------------------------------------------------------
    def template_dirs(self) -> list[Path]:
        from workspace.templates import search_path

        return [self.base, self.base / "templates", *search_path(self.folder, kind="templates")]

    def robot_options(self, spec: RobotSpec | None, name: str, loc: Loc) -> dict[str, Any]:
        from workspace.templates import SETTING_KEYS

        options: dict[str, Any] = {"config": self.config, "folder": self.folder}
        if self.provider is not None:
            options["provider"] = self.provider
        model = self.model or (spec.model if spec is not None else None)
        if model is not None:
            options["model"] = model
        if spec is None:
            return options
        options.update(self.levels(spec, loc, robot=name))
        if spec.api_base is not None:
            self.allowed_here((*loc, "api_base"), api_base=spec.api_base, robot=name)
            options["api_base"] = spec.api_base
            options["api_base_file"] = self.path  # inside the opened folder: the folder's address, not the user's
        if spec.context is not None:
            options["context"] = dict(spec.context)
        if spec.description is not None:
            options["description"] = spec.description
        if spec.max_turns is not None:
            options["max_turns"] = spec.max_turns
        if spec.output_schema is not None:
            options["output_type"] = dict(spec.output_schema)
        if spec.robots is not None:
            options["robots"] = list(spec.robots)
        for key in SETTING_KEYS:
            value = getattr(spec, key)
            if value is not None:
                options[key] = value
        return options

    def build_robot(self, name: str, spec: str | RobotSpec, loc: Loc) -> Robot | None:
        from workspace.network.schema import RobotSpec
        from workspace.robot import Robot
        from workspace.templates import Template, find_template

        if isinstance(spec, str):
            spec = RobotSpec(robot=spec)
        sources = [k for k in ("system_prompt", "template", "file", "robot") if getattr(spec, k) is not None]
        if spec.person:
            return self.build_person(name, spec, sources, loc)
        for key in ("timeout", "default", "choices"):
            if getattr(spec, key) is not None:
                self.problem(f"'{key}' is for a person: add person: true, or remove it", (*loc, key), robot=name,
                             field=key)
        if not sources:
            self.problem("give its instructions: system_prompt, template, file (a robot .md file) or robot "
                         "(the name of a robot file)", loc, robot=name)
            return None
        if "robot" in sources and len(sources) > 1:
            self.problem(f"'robot' refers to a robot file; it cannot be combined with {', '.join(sources[:-1])}",
                         (*loc, "robot"), robot=name, field="robot")
            return None
        robot_name = spec.name or name
        options = self.robot_options(spec, name, loc)
        system_prompt = spec.system_prompt
        template: Any = None
        try:
            if spec.robot is not None:
                template = self.find_robot_template(spec.robot, (*loc, "robot"), robot=name)
                if template is None:
                    return None
            elif spec.file is not None:
                file = Path(spec.file)
                file = file if file.is_absolute() else self.base / file
                if not file.is_file():
                    self.problem(f"no such file: {file}", (*loc, "file"), robot=name, field="file")
                    return None
                template = Template.load(file)
            elif spec.template is not None:
                try:
                    template = find_template(spec.template, self.template_dirs())
                except ConfigurationError as exc:
                    self.problem(str(exc), (*loc, "template"), robot=name, field="template")
                    return None
            if template is None and system_prompt is not None and ("{{" in system_prompt or "{%" in system_prompt):
                # A system prompt with template syntax is rendered with the run's variables.
                template, system_prompt = Template(name=robot_name, body=system_prompt), None
            return Robot(robot_name, system_prompt=system_prompt, template=template, **options)
        except (ConfigurationError, ValueError, TypeError) as exc:
            self.problem(str(exc), loc, robot=name)
            return None

    def build_person(self, name: str, spec: RobotSpec, sources: list[str], loc: Loc) -> Robot | None:
        """A person as the robot ``name`` (``person: true``): asked through the load's ``ask`` (the terminal
        without one), within ``timeout`` seconds."""
        from workspace.network.person import Person

        extra = [k for k in (*sources, "model", "api_base", "tools", "mcp", "output_schema", "robots")
                 if getattr(spec, k) is not None]
        if extra:
            self.problem(f"a person has no {', '.join(extra)}: remove {'them' if len(extra) > 1 else 'it'}, or "
                         "remove person: true", (*loc, extra[0]), robot=name, field=extra[0])
            return None
        try:
            return Person(spec.name or name, ask=self.ask, timeout=float(spec.timeout) if spec.timeout else None,
                          default=spec.default, choices=spec.choices, description=spec.description,
                          config=self.config, folder=self.folder)
        except (ConfigurationError, ValueError) as exc:
            self.problem(str(exc), loc, robot=name)
            return None

    def find_robot_template(self, ref: str, loc: Loc, *, robot: str | None = None, task: str | None = None) -> Any:
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
                     f"has that name{did_you_mean(ref, known)}", loc, task=task, robot=robot, field="robot")
        return None


def _empty_task() -> TaskSpec:
    from workspace.network.schema import TaskSpec

    return TaskSpec()


def _ledger(spec: NetworkFile) -> Ledger | None:
    """The ledger of a file's ``budget:`` (None without one, or with neither ``tokens`` nor ``cost``)."""
    from workspace.ledger import Ledger

    budget = spec.budget
    if budget is None:
        return None
    limits = {key: value for key, value in (("tokens", budget.tokens), ("cost", budget.cost)) if value is not None}
    return Ledger(limits=limits) if limits else None


def _config(block: Any) -> dict[str, Any] | None:
    """A file's ``config:`` block as RunConfig fields (None without one)."""
    return block.model_dump(exclude_none=True) if block is not None else None
