"""Prompt templates: Markdown with YAML front matter and a Jinja2 body.

```
---
model: openai/gpt-4o-mini
temperature: 0.2
description: Answers billing questions
tools: [read_file, list_files]
---
You are the billing assistant of {{ company_name }}.
{% if customer %}The customer is {{ customer.name }}.{% endif %}
```

Front-matter keys applied to the model call: model, temperature, top_p, top_k,
max_tokens, presence_penalty, frequency_penalty, stop, tool_choice. Also understood: name,
description, api_base, tools, mcp, mcp_resources, max_turns, max_cost, max_total_tokens,
token_budget, cost_budget, fallback_models, mcp_prompt, examples (the schema is
:class:`workspace.schemas.robot.FrontMatter`; ``robotlab schema robot`` prints it).
Any other key is an error naming the file, its line and the closest known key
("unknown setting 'temprature' — did you mean 'temperature'?"), and so is a value out
of range; keys of your own start with ``x-`` and are kept in ``metadata``. The body
is rendered with the build-time context merged with the run-time context (run
wins); an undefined variable renders as empty text, so optional variables need no
guard. A robot file is a template: ``resources/robots/*.md``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.readlimits import ROBOT_FILE_BYTES, read_text_bounded

if TYPE_CHECKING:
    from workspace.schemas import Lines

#: The front-matter keys passed to the model call (the fields of
#: :class:`workspace.schemas.robot.ModelSettings`; a test keeps the two the same).
SETTING_KEYS = ("temperature", "top_p", "top_k", "max_tokens", "presence_penalty", "frequency_penalty", "stop",
                "tool_choice")

_env: Any = None
#: Compiled Jinja2 templates by their text (compiling takes ~10 ms; rendering a compiled one ~0.1 ms).
_compiled: dict[str, Any] = {}
#: Templates parsed from files, by (path, modification and change times, size, inode): see :meth:`Template.load`.
_loaded: dict[tuple[str, int, int, int, int], Template] = {}


def _jinja() -> Any:
    global _env
    if _env is None:
        from workspace.template_limits import LimitedEnvironment

        _env = LimitedEnvironment(autoescape=False, keep_trailing_newline=True, trim_blocks=True,
                                    lstrip_blocks=True)
    return _env


@dataclass
class Template:
    name: str
    body: str
    metadata: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    #: The line of every front-matter key in the file (for messages about it), when parsed from text.
    lines: Lines | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str, *, name: str = "template", path: Path | None = None) -> Template:
        import yaml

        from workspace.schemas import yaml_with_lines

        where = str(path) if path else f"template '{name}'"
        metadata: dict[str, Any] = {}
        key_lines: Lines | None = None
        body = text
        stripped = text.lstrip("\ufeff")
        if stripped.startswith("---"):
            lines = stripped.splitlines(keepends=True)
            end = None
            for i, line in enumerate(lines[1:], start=1):
                if line.strip() in ("---", "..."):
                    end = i
                    break
            if end is None:
                raise ConfigurationError(
                    f"{where}: the front matter starts with '---' but has no closing '---' line"
                )
            front = "".join(lines[1:end])
            body = "".join(lines[end + 1 :])
            try:
                # Lines counted from the file's first line: the front matter starts on line 2.
                loaded, key_lines = yaml_with_lines(front, source=where, offset=1)
                loaded = loaded if front.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = f" at line {mark.line + 2}" if mark is not None else ""
                raise ConfigurationError(
                    f"{where}: the front matter is not valid YAML{line}: {getattr(exc, 'problem', exc)}"
                ) from exc
            if not isinstance(loaded, dict):
                raise ConfigurationError(f"{where}: the front matter must be a mapping of keys, like 'model: ...'")
            metadata = loaded
        if metadata:
            from workspace.schemas.robot import check_front_matter

            check_front_matter(metadata, lines=key_lines, source=where)
        return cls(name=str(metadata.get("name") or name), body=body.lstrip("\n"), metadata=metadata, path=path,
                   lines=key_lines)

    @classmethod
    def load(cls, path: Path) -> Template:
        """The template in ``path``; a file read before and unchanged since (same size and modification
        time) is not parsed and checked again (robot lists read every robot file, and often)."""
        path = Path(path)
        try:
            stat = path.stat()
            key = (str(path), stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
        except OSError:
            key = None
        cached = _loaded.get(key) if key is not None else None
        if cached is not None:
            return cls(name=cached.name, body=cached.body, metadata=copy.deepcopy(cached.metadata), path=path,
                       lines=cached.lines)
        try:
            text = read_text_bounded(path, ROBOT_FILE_BYTES, "robot file")
        except FileNotFoundError:
            raise ConfigurationError(f"{path}: template file not found") from None
        except OSError as exc:
            raise ConfigurationError(f"{path}: the template cannot be read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigurationError(f"{path}: the template is not UTF-8 text ({exc})") from exc
        template = cls.parse(text, name=path.stem, path=path)
        if key is not None:
            if len(_loaded) >= 256:
                _loaded.clear()
            _loaded[key] = cls(name=template.name, body=template.body, metadata=copy.deepcopy(template.metadata),
                               path=path, lines=template.lines)
        return template

    # -- front matter ---------------------------------------------------------------------
    @property
    def model(self) -> str | None:
        value = self.metadata.get("model")
        return str(value) if value else None

    @property
    def description(self) -> str | None:
        value = self.metadata.get("description")
        return str(value) if value else None

    @property
    def examples(self) -> list[str]:
        """The front matter's ``examples``: messages a new thread of this robot may start with."""
        value = self.metadata.get("examples")
        return [str(v) for v in value if str(v).strip()] if isinstance(value, list) else []

    @property
    def settings(self) -> dict[str, Any]:
        return {k: self.metadata[k] for k in SETTING_KEYS if self.metadata.get(k) is not None}

    @property
    def api_base(self) -> str | None:
        value = self.metadata.get("api_base")
        return str(value) if value else None

    @property
    def tools(self) -> Any:
        return self.metadata.get("tools")

    @property
    def mcp(self) -> Any:
        return self.metadata.get("mcp")

    @property
    def max_turns(self) -> int | None:
        value = self.metadata.get("max_turns")
        return int(value) if value is not None else None

    @property
    def max_cost(self) -> float | None:
        value = self.metadata.get("max_cost")
        return float(value) if value is not None else None

    @property
    def max_total_tokens(self) -> int | None:
        value = self.metadata.get("max_total_tokens")
        return int(value) if value is not None else None

    @property
    def fallback_models(self) -> list[Any] | None:
        value = self.metadata.get("fallback_models")
        return list(value) if value else None

    # -- rendering ------------------------------------------------------------------------
    def render(self, context: Mapping[str, Any] | None = None, /, **more: Any) -> str:
        if not any(mark in self.body for mark in ("{{", "{%", "{#")):
            return self.body.strip()  # no template syntax: Jinja2 would give the same text (and takes 0.1 s to import)
        from jinja2 import TemplateError, UndefinedError

        from workspace.template_limits import render_limited

        values = {**(context or {}), **more}
        where = str(self.path) if self.path else f"template '{self.name}'"
        try:
            compiled = _compiled.get(self.body)
            if compiled is None:
                if len(_compiled) >= 256:
                    _compiled.clear()
                compiled = _compiled[self.body] = _jinja().from_string(self.body)
            return render_limited(compiled, values).strip()
        except (OverflowError, RecursionError, MemoryError) as exc:  # range() too big, macros calling themselves
            problem = "macros call each other too deep" if isinstance(exc, RecursionError) else str(exc) or "too big"
            raise ConfigurationError(f"{where}: cannot render the template: {problem}; make it smaller") from None
        except TemplateError as exc:
            line = getattr(exc, "lineno", None)
            at = f" (line {line} of the body)" if line else ""
            fix = ""
            if isinstance(exc, UndefinedError):
                fix = (". Give the value when running (robotlab run … --param NAME=VALUE, VALUE may be JSON; "
                       "in Python robot.run(message, NAME=value)), set it in the robot's context, or guard it in "
                       "the template with {% if NAME %}…{% endif %} or {{ NAME | default('…') }}")
            raise ConfigurationError(f"{where}: cannot render the template{at}: {exc}{fix}") from exc


def search_path(folder: Path | None = None, *, kind: str = "templates", extra: Iterable[Path] = ()) -> list[Path]:
    """Directories searched for templates (``kind="templates"``) or robots, most specific first."""
    from workspace import paths

    dirs: list[Path] = [Path(p) for p in extra]
    if folder is not None:
        dirs.append(paths.project_dir(folder) / kind)
    dirs.append(paths.config_dir() / kind)
    dirs.append(paths.resources_dir() / kind)
    return dirs


def find_template(name: str, dirs: Iterable[Path]) -> Template:
    """Load template ``name`` (a path, or a name looked up as ``<dir>/<name>.md``)."""
    candidate = Path(name)
    if candidate.suffix in (".md", ".markdown", ".txt", ".j2", ".jinja") and candidate.is_file():
        return Template.load(candidate)
    searched = []
    for directory in dirs:
        for ext in (".md", ".markdown", ".j2", ".txt"):
            path = Path(directory) / f"{name}{ext}"
            if path.is_file():
                return Template.load(path)
        searched.append(str(directory))
    raise ConfigurationError(
        f"Template '{name}' not found. Looked for {name}.md in: {', '.join(searched) or '(no folders)'}"
    )


def skill_ids(value: Any) -> list[str]:
    """The template skills named by ``value`` (a name, a list of names or None)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [str(item) for item in value if str(item).strip()]


def expand_skills(ids: Iterable[str], dirs: Iterable[Path], *, robot: str, visited: set[str] | None = None,
                  agent: Callable[[str], bool] | None = None, agent_where: str = "") -> list[Template]:
    """RobotLab's composable template skills: the templates ``ids`` name, each after the skills its own
    front matter names (depth-first), each once. A name met again (a cycle, or a second path to a shared
    skill) is skipped with RobotLab's warning ``Robot '<robot>': skill cycle detected at '<id>', skipping``.
    Put the main template's name in ``visited`` so a skill cannot pull it in. A skill is looked up as
    ``<dir>/skills/<id>.md``, then ``<dir>/<id>.md``, for each of ``dirs`` in order. RobotLab's one ``skills:`` for
    both kinds: an id that is no template is offered to ``agent`` (True: it is an agent skill, which ``agent``
    keeps as pending; it is not a template skill), and an id neither knows is refused naming the template folders
    and ``agent_where`` (where agent skills are looked for)."""
    import logging

    folders = list(dirs)
    search = [d for directory in folders for d in (Path(directory) / "skills", Path(directory))]
    seen = visited if visited is not None else set()
    found: list[Template] = []
    for skill in ids:
        if skill in seen:
            logging.getLogger(__name__).warning("Robot '%s': skill cycle detected at '%s', skipping", robot, skill)
            continue
        seen.add(skill)
        try:
            template = find_template(skill, search)
        except ConfigurationError as exc:
            if agent is not None and agent(skill):
                continue
            also = (f", or make it an agent skill: a folder {skill}/ with a SKILL.md under one of {agent_where}"
                    if agent is not None else "")
            raise ConfigurationError(f"Robot '{robot}': skill '{skill}' not found: {exc}; put {skill}.md in one "
                                     "of those folders (or a skills/ folder inside one), or pass template_dirs="
                                     f"{also}") from None
        found.extend(expand_skills(skill_ids(template.metadata.get("skills")), folders, robot=robot, visited=seen,
                                   agent=agent, agent_where=agent_where))
        found.append(template)
    return found
