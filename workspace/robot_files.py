"""Robot files as the window's robot editor reads, checks, previews and writes them (Qt-free).

A robot file is a template (see :mod:`workspace.templates`): YAML front matter between ``---`` lines
and a Jinja2 body, the system prompt. This module holds one file's parts in a :class:`RobotDraft`,
and:

- :func:`load_draft` / :func:`new_draft` / :func:`duplicate` make one;
- :func:`render_text` writes it back as text, keeping a hand-written file's comments, quoting and
  key order (ruamel.yaml round trip) and changing only the keys whose values changed;
- :func:`check` validates it with the same schema and parser as the files
  (:class:`workspace.schemas.robot.FrontMatter` through :meth:`Template.parse`): problems per field,
  each message naming the key, the line and the closest known key, plus the folder-trust rule for
  files inside the opened folder and a refusal of credentials;
- :func:`preview` renders the system prompt the way a run does (errors as text, never raised);
- :func:`save` writes atomically (a temporary file, then ``os.replace``), refusing a file changed on
  disk since it was opened and an invalid draft; :func:`delete` removes a user's robot file;
- :func:`setting_fields` lists the front matter's other settings from the schema itself (names,
  types, ranges, descriptions), so a field added to the schema shows up in the editor unchanged;
- :func:`robot_approval` / :func:`set_robot_approval`: the robot's rule in the approval policy.

Shipped robots (``resources/robots``) are read-only: duplicate them to edit.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.readlimits import ROBOT_FILE_BYTES, read_text_bounded

if TYPE_CHECKING:
    from workspace.approval import ApprovalPolicy

__all__ = [
    "EDITED_KEYS",
    "FieldSpec",
    "Problem",
    "RobotDraft",
    "builtin_tools",
    "check",
    "delete",
    "duplicate",
    "load_draft",
    "new_draft",
    "preview",
    "render_text",
    "robot_approval",
    "save",
    "save_dirs",
    "set_robot_approval",
    "setting_fields",
    "skills_of",
    "valid_name",
]

#: Front-matter keys the editor has its own controls for (the rest come from :func:`setting_fields`).
EDITED_KEYS = ("name", "description", "model", "tools", "mcp")
#: Keys never offered as settings: not for robot files (mcpServers), or nested objects edited as text.
HIDDEN_KEYS = ("mcpServers",)
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DEFAULT_BODY = ("You are **{{ robot_name | default(\"my-robot\") }}**, a helpful assistant working inside RobotLab "
                "Workspace.\n\nAnswer clearly and concisely.\n")
#: The approval choices of a robot: its rule for every tool (None: no rule, the defaults apply).
APPROVAL_CHOICES: dict[str | None, str] = {
    None: "Defaults: read-only and local tools run, MCP tools ask",
    "ask": "Ask before every tool call",
    "allow": "Allow every tool call without asking",
    "deny": "Deny every tool call",
}


@dataclass
class Problem:
    """Something wrong with a draft: ``key`` is the front-matter key (None: the file as a whole)."""

    key: str | None
    message: str


@dataclass
class RobotDraft:
    """A robot file being edited: its front-matter values (in order), its body, and where it lives."""

    front: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    #: The file (None: not saved yet).
    path: Path | None = None
    #: "shipped", "user", "project" or "new".
    source: str = "new"
    #: The file's text when it was read (to keep its comments, and to notice a change on disk).
    original: str | None = None

    @property
    def name(self) -> str:
        value = self.front.get("name")
        if value:
            return str(value)
        return self.path.stem if self.path is not None else ""

    @property
    def read_only(self) -> bool:
        return self.source == "shipped"


@dataclass(frozen=True)
class FieldSpec:
    """One front-matter setting, described by the schema: how to edit it and what it means."""

    key: str
    #: "number", "integer", "text", "choice", "list" (of texts), "bool" or "yaml" (anything else).
    kind: str
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    #: Shown under "Advanced" (settings of the model call and rarely used keys).
    advanced: bool = False


# -- reading ------------------------------------------------------------------------------------------------
def split_front_matter(text: str) -> tuple[str | None, str]:
    """(the front matter's YAML or None, the body) of a template file's text, as Template.parse splits it."""
    stripped = text.lstrip("\ufeff")
    if not stripped.startswith("---"):
        return None, text
    lines = stripped.splitlines(keepends=True)
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1:]).lstrip("\n")
    raise ConfigurationError("the front matter starts with '---' but has no closing '---' line: add one after it")


def _plain(value: Any) -> Any:
    """ruamel's commented containers and scalars as plain Python values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def _yaml() -> Any:
    from workspace.yaml_limits import round_trip_yaml

    yaml = round_trip_yaml()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def load_draft(path: Path, *, folder: Path | None = None) -> RobotDraft:
    """The robot file at ``path`` as a draft (its front matter read as plain values)."""
    from workspace.catalog import _source

    path = Path(path).resolve()
    try:
        text = read_text_bounded(path, ROBOT_FILE_BYTES, "robot file")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: cannot read the robot file ({exc}); check it exists and is UTF-8 "
                                 "text") from exc
    front_text, body = split_front_matter(text)
    front: dict[str, Any] = {}
    if front_text and front_text.strip():
        try:
            loaded = _yaml().load(front_text)
        except Exception as exc:
            raise ConfigurationError(f"{path}: the front matter is not valid YAML ({exc}); fix it in a text "
                                     "editor first") from exc
        if isinstance(loaded, Mapping):
            front = _plain(loaded)
    return RobotDraft(front=front, body=body, path=path, source=_source(path, folder), original=text)


def new_draft(name: str = "my-robot") -> RobotDraft:
    """A new robot: a name, a one-line description and a starting system prompt."""
    return RobotDraft(front={"name": name, "description": "What this robot does, in one line",
                             "tools": ["list_files", "read_file", "search_files"]},
                      body=DEFAULT_BODY.replace("my-robot", name))


def duplicate(draft: RobotDraft, name: str) -> RobotDraft:
    """A copy of ``draft`` named ``name``, not saved yet (keeps the comments of its file)."""
    front = {"name": name, **{k: v for k, v in draft.front.items() if k != "name"}}
    return replace(draft, front=front, path=None, source="new")


# -- writing --------------------------------------------------------------------------------------------
def _yaml_value(value: Any) -> Any:
    """A value as ruamel should write it: short lists of texts in flow style ``[a, b]``."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, list | tuple):
        seq = CommentedSeq([_yaml_value(v) for v in value])
        if all(isinstance(v, str | int | float | bool) for v in value):
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, Mapping):
        mapping = CommentedMap()
        for k, v in value.items():
            mapping[k] = _yaml_value(v)
        return mapping
    if isinstance(value, str) and "\n" in value:
        from ruamel.yaml.scalarstring import LiteralScalarString

        return LiteralScalarString(value)
    return value


def render_text(draft: RobotDraft) -> str:
    """The file's text for ``draft``: the original front matter with only the changed keys rewritten
    (comments, quoting and order kept), keys set to None or removed left out, new keys at the end."""
    from ruamel.yaml.comments import CommentedMap

    yaml = _yaml()
    data: Any = None
    if draft.original is not None:
        try:
            front_text, _ = split_front_matter(draft.original)
            data = yaml.load(front_text) if front_text and front_text.strip() else None
        except Exception:
            data = None
    if not isinstance(data, CommentedMap):
        data = CommentedMap()
    values = {k: v for k, v in draft.front.items() if v is not None and v != ""}
    for key in list(data):
        if key not in values:
            del data[key]
    for key, value in values.items():
        if key in data and _plain(data[key]) == value:
            continue
        data[key] = _yaml_value(value)
    out = io.StringIO()
    if len(data):
        yaml.dump(data, out)
    body = draft.body if draft.body.endswith("\n") or not draft.body else draft.body + "\n"
    return f"---\n{out.getvalue()}---\n{body}"


# -- checking -------------------------------------------------------------------------------------------
def valid_name(name: str) -> str | None:
    """Why ``name`` cannot be a robot's name (None: it can): it is also the file's name."""
    if not name.strip():
        return "name: give the robot a name (letters, digits, '-', '_' or '.'; it is also the file name)"
    if not NAME_PATTERN.match(name):
        return (f"name: {name!r} cannot be a file name: use letters, digits, '-', '_' or '.', starting with a "
                "letter or digit (at most 64)")
    return None


def _key_of(message: str, keys: list[str]) -> str | None:
    found = re.search(r"unknown setting '([^']+)'", message)
    if found:
        return found.group(1)
    for key in sorted(keys, key=len, reverse=True):
        if re.search(rf"(^|[:\s'])({re.escape(key)})([.\[:'\s]|$)", message):
            return key
    return None


def check(draft: RobotDraft, *, folder: Path | None = None, target: Path | None = None) -> list[Problem]:
    """Every problem of ``draft`` (empty: it may be saved): the schema's messages (file, line, key,
    did-you-mean), a bad name, a file inside the opened folder doing what only trusted settings may
    (see :mod:`workspace.trust`), a credential written into the file, a body that does not render."""
    from workspace.schemas import SchemaError
    from workspace.templates import Template

    problems: list[Problem] = []
    bad_name = valid_name(draft.name)
    if bad_name:
        problems.append(Problem("name", bad_name))
    path = target or draft.path
    source = str(path) if path is not None else f"{draft.name or 'robot'}.md"
    text = render_text(draft)
    template: Template | None = None
    try:
        template = Template.parse(text, name=draft.name or "robot", path=Path(source))
    except SchemaError as exc:
        keys = list(draft.front)
        problems.extend(Problem(_key_of(p, keys), p) for p in exc.problems)
    except ConfigurationError as exc:
        problems.append(Problem(None, str(exc)))
    if template is not None:
        from workspace.trust import folder_file_problem

        trust = folder_file_problem(path, folder, mcp=template.mcp, api_base=template.api_base)
        if trust:
            problems.append(Problem("mcp" if "MCP" in trust else "api_base", trust))
    from workspace.secrets import redact_credentials

    front_text, _ = split_front_matter(text)
    if front_text and redact_credentials(front_text) != front_text:
        problems.append(Problem(None, "The settings hold what looks like a key or password: robot files are "
                                      "shared and kept in plain text. Put keys in Settings (kept in the system "
                                      "keyring) and leave them out of the robot"))
    rendered = preview(draft)
    if rendered.error:
        problems.append(Problem("body", rendered.error))
    return problems


@dataclass(frozen=True)
class Preview:
    text: str
    error: str | None = None


def preview(draft: RobotDraft, values: Mapping[str, Any] | None = None) -> Preview:
    """The system prompt a run would start with: the body rendered as :meth:`Template.render` does it
    (the message is empty; ``values`` stand for a run's parameters). Errors come back as text."""
    from workspace.templates import Template

    template = Template(name=draft.name or "robot", body=draft.body, metadata=dict(draft.front), path=draft.path)
    try:
        return Preview(template.render({"message": "", **(values or {})}))
    except ConfigurationError as exc:
        return Preview("", str(exc))
    except Exception as exc:  # a template may fail in ways Jinja does not wrap: shown, never raised
        return Preview("", f"cannot render the template: {type(exc).__name__}: {exc}")


# -- saving ---------------------------------------------------------------------------------------------
def save_dirs(folder: Path | None = None) -> dict[str, Path]:
    """Where a robot can be saved: ``{"user": ...}`` and, with a folder open, ``{"project": ...}``."""
    from workspace import paths

    out = {"user": paths.user_robots_dir()}
    if folder is not None:
        out["project"] = paths.project_dir(folder) / "robots"
    return out


def save(draft: RobotDraft, *, folder: Path | None = None, where: str = "user") -> Path:
    """Write ``draft`` (a new one into the ``where`` folder of :func:`save_dirs`) atomically and return its
    path. Refused with a :class:`ConfigurationError` naming the fix: a shipped robot, an invalid draft, a
    name taken by another file there, or a file changed on disk since it was opened."""
    if draft.read_only:
        raise ConfigurationError(f"'{draft.name}' is shipped with RobotLab and read-only: duplicate it to edit "
                                 "a copy")
    target = draft.path
    if target is None:
        dirs = save_dirs(folder)
        if where not in dirs:
            raise ConfigurationError(f"Cannot save into the {where} robots: open a folder first, or save it as "
                                     "your own robot")
        target = dirs[where] / f"{draft.name}.md"
        if target.exists():
            raise ConfigurationError(f"{target} already exists: choose another name, or open that robot to "
                                     "edit it")
    problems = check(draft, folder=folder, target=target)
    if problems:
        from workspace.schemas import SchemaError

        raise SchemaError([p.message for p in problems], source=str(target))
    if draft.original is not None and target.exists():
        current = read_text_bounded(target, ROBOT_FILE_BYTES, "robot file", errors="replace")
        if current != draft.original:
            raise ConfigurationError(f"{target} was changed on disk since you opened it: close the editor and "
                                     "open the robot again to see the new version")
    text = render_text(draft)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    draft.path, draft.original = target, text
    if draft.source == "new":
        draft.source = where
    return target


def delete(draft: RobotDraft) -> None:
    """Remove the robot's file (shipped robots cannot be deleted)."""
    if draft.read_only:
        raise ConfigurationError(f"'{draft.name}' is shipped with RobotLab and cannot be deleted")
    if draft.path is None:
        return
    draft.path.unlink(missing_ok=True)


# -- what the editor offers -----------------------------------------------------------------------------
def builtin_tools() -> list[tuple[str, str]]:
    """(name, first line of the description) of every built-in tool a robot may list."""
    from workspace.tools import registry

    out = []
    for tool in sorted(registry.builtin_tools(), key=lambda t: t.name):
        out.append((tool.name, (tool.description or "").strip().splitlines()[0] if tool.description else ""))
    return out


def skills_of(front: Mapping[str, Any], *, folder: Path | None) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What the editor shows of a robot's skills: the template skills its ``skills:`` names, expanded as a run
    expands them (each (name, the file) in the order their text goes before the robot's; a name that is an agent
    skill gives (name, its SKILL.md); one that cannot be found gives (name, "not found: …")), and the agent skills (``SKILL.md``) found
    beside the templates, (name, description), which a run is given when its message asks for them."""
    from workspace.agent_skills import AgentSkillCatalog
    from workspace.templates import expand_skills, search_path, skill_ids

    catalog = AgentSkillCatalog(folder=folder)
    template: list[tuple[str, str]] = []
    ids = skill_ids(front.get("skills"))
    if ids:
        dirs = [*search_path(folder, kind="templates"), *search_path(folder, kind="robots")]
        name = str(front.get("name") or "robot")
        visited = {name}
        for skill_id in ids:  # one at a time: the skills found stay listed beside one that is not
            try:
                for skill in expand_skills([skill_id], dirs, robot=name, visited=visited):
                    template.append((skill.name, str(skill.path) if skill.path is not None else ""))
            except ConfigurationError as exc:
                agent_skill = catalog.find(skill_id)  # one ``skills:`` for both kinds: an agent skill's SKILL.md
                template.append((skill_id, str(agent_skill.path / "SKILL.md") if agent_skill is not None
                                 else f"not found: {exc}"))
    agent = [(skill.name, skill.description) for skill in catalog.all()]
    return template, agent


_MODEL_CALL_KEYS = ("top_p", "top_k", "presence_penalty", "frequency_penalty", "stop")


def setting_fields() -> list[FieldSpec]:
    """The front matter's settings besides name, description, model, tools and mcp, from the schema."""
    from workspace.schemas.robot import FrontMatter

    schema = FrontMatter.model_json_schema()
    properties: dict[str, Any] = schema.get("properties", {})
    defs: dict[str, Any] = schema.get("$defs", {})
    out = []
    for key in FrontMatter.model_fields:
        if key in EDITED_KEYS or key in HIDDEN_KEYS or key not in properties:
            continue
        spec = properties[key]
        kind, minimum, maximum, choices = _kind(spec, defs)
        advanced = key in _MODEL_CALL_KEYS or kind == "yaml"
        out.append(FieldSpec(key, kind, str(spec.get("description", "")), minimum, maximum, choices, advanced))
    return out


def _kind(spec: Mapping[str, Any], defs: Mapping[str, Any]) -> tuple[str, float | None, float | None, tuple[str, ...]]:
    options = [o for o in spec.get("anyOf", [spec]) if o.get("type") != "null"]
    options = [defs.get(str(o["$ref"]).rsplit("/", 1)[-1], o) if "$ref" in o else o for o in options]
    if len(options) == 1:
        one = options[0]
        kind = one.get("type")
        low = one.get("minimum", one.get("exclusiveMinimum"))
        high = one.get("maximum", one.get("exclusiveMaximum"))
        if "enum" in one and kind == "string":
            return "choice", None, None, tuple(str(v) for v in one["enum"])
        if kind in ("number", "integer"):
            return kind, low, high, ()
        if kind == "boolean":
            return "bool", None, None, ()
        if kind == "string":
            return "text", None, None, ()
        if kind == "array" and one.get("items", {}).get("type") == "string":
            return "list", None, None, ()
    return "yaml", None, None, ()


def robot_approval(policy: ApprovalPolicy, robot: str) -> str | None:
    """The robot's own rule for every tool ("allow", "ask", "deny"; None: none, the defaults apply)."""
    for rule in reversed(policy.rules):
        if (rule.robot, rule.server, rule.tool) == (robot, "*", "*"):
            return rule.action
    return None


def set_robot_approval(policy: ApprovalPolicy, robot: str, action: str | None) -> None:
    """Set (or, with None, remove) the robot's rule for every tool, and save the policy file.
    More specific rules (a tool, a server) still win over it."""
    if robot_approval(policy, robot) == action:
        return
    policy.rules = [r for r in policy.rules if (r.robot, r.server, r.tool) != (robot, "*", "*")]
    if action is not None:
        policy.set_rule(action, robot=robot)
    policy.save()
