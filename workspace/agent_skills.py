"""Agent skills: ``SKILL.md`` folders a robot picks per run by what the message asks (RobotLab's AgentSkills).

A skill is a folder holding ``SKILL.md``: YAML front matter with ``name`` and ``description`` (both
required; capability keys such as ``fs_read`` or ``network`` are kept in :attr:`AgentSkill.capabilities`),
then the instructions, and optionally ``scripts/`` (also ``references/`` and ``assets/``).

:class:`AgentSkillCatalog` finds skills where robot templates are found: the ``template_dirs=`` given,
the opened folder's ``.robotlab/templates``, the user's templates and the shipped ones; in each, the
folders under ``skills/`` and the skill folders directly inside. :meth:`AgentSkillCatalog.select`
picks the skills whose description is similar to a message. The similarity comes from an embedder
(any ``embed(texts) -> vectors`` callable, plain or ``async``: a local model, a hosted embeddings API)
or, with none, from an offline lexical measure: the cosine of stemmed, stop-word-filtered word counts,
which needs no key and no download.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace.errors import ConfigurationError
from workspace.readlimits import SKILL_FILE_BYTES, read_text_bounded
from workspace.similarity import cosine as _cosine
from workspace.similarity import lexical_similarity
from workspace.templates import search_path

if TYPE_CHECKING:
    from workspace.templates import Template
    from workspace.tools.capabilities import Ceiling
    from workspace.tools.script import ScriptTool

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
#: RobotLab's threshold for embeddings (cosine of two sentence vectors).
EMBEDDING_THRESHOLD = 0.70
#: The lexical measure's threshold: word counts of a short message and a one-line description overlap
#: far less than sentence vectors do, so the same 0.70 would select almost nothing.
LEXICAL_THRESHOLD = 0.25
CAPABILITY_KEYS = ("fs_read", "fs_write", "network", "timeout", "trust")

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]] | Awaitable[Sequence[Sequence[float]]]]


@dataclass(frozen=True)
class AgentSkill:
    """One ``SKILL.md`` folder: its ``name``, ``description``, ``instructions`` (the body) and files."""

    name: str
    description: str
    path: Path
    instructions: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_path(cls, path: str | Path) -> AgentSkill:
        """Read a skill from its folder or its ``SKILL.md``; a missing ``name`` or ``description`` raises
        :class:`~workspace.errors.ConfigurationError` naming the file."""
        file = Path(path)
        if file.is_dir():
            file = file / SKILL_FILE
        try:
            text = read_text_bounded(file, SKILL_FILE_BYTES, "skill file")
        except OSError as exc:
            raise ConfigurationError(f"Cannot read the skill {file}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigurationError(f"{file}: the skill file is not UTF-8 text ({exc})") from None
        meta, body = _front_matter(text, where=str(file))
        for key in ("name", "description"):
            if not str(meta.get(key) or "").strip():
                raise ConfigurationError(f"SKILL.md at {file} missing '{key}': add a line '{key}: ...' to its front "
                                         "matter (between the two '---' lines at the top)")
        return cls(name=str(meta["name"]).strip(), description=str(meta["description"]).strip(),
                   path=file.parent, instructions=body.strip(), metadata=meta)

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the skill's scripts ask to be allowed (``fs_read``, ``fs_write``, ``network``, ``timeout``,
        ``trust``), as written."""
        return {key: self.metadata[key] for key in CAPABILITY_KEYS if key in self.metadata}

    @property
    def scripts(self) -> list[Path]:
        """The files in ``scripts/``, sorted."""
        folder = self.path / "scripts"
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.is_file())

    @property
    def script_tools(self) -> list[ScriptTool]:
        """A :class:`~workspace.tools.script.ScriptTool` per executable script (non-executables skipped,
        with RobotLab's warning)."""
        from workspace.tools.script import ScriptTool

        return [tool for path in self.scripts
                if (tool := ScriptTool.from_path(path, capabilities=self.capabilities, skill_dir=self.path))]


def _front_matter(text: str, *, where: str) -> tuple[dict[str, Any], str]:
    from workspace import yaml_limits

    stripped = text.lstrip("\ufeff")
    if not stripped.startswith("---"):
        return {}, stripped
    lines = stripped.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() in ("---", "...")), None)
    if end is None:
        raise ConfigurationError(f"{where}: the front matter starts with '---' but has no closing '---' line")
    try:
        loaded = yaml_limits.safe_load("".join(lines[1:end]))
    except Exception as exc:  # yaml's errors and the size limits' alike
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 2}" if mark is not None else ""
        raise ConfigurationError(f"{where}: the front matter is not valid YAML{at}: "
                                 f"{getattr(exc, 'problem', None) or exc}") from None
    return (dict(loaded) if isinstance(loaded, Mapping) else {}), "".join(lines[end + 1:])


class AgentSkillCatalog:
    """The skills found in ``dirs`` (first found wins for a name), read once, on first use."""

    def __init__(self, dirs: str | Path | Iterable[str | Path] | None = None, *, folder: str | Path | None = None,
                 template_dirs: Iterable[str | Path] = (), embedder: Embedder | None = None,
                 threshold: float | None = None) -> None:
        if isinstance(dirs, str | Path):
            dirs = [dirs]
        if dirs is None:
            dirs = search_path(Path(folder) if folder is not None else None, kind="templates",
                               extra=[Path(d) for d in template_dirs])
        self.dirs = [Path(d) for d in dirs]
        self.embedder = embedder
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1 (got {threshold!r})")
        #: The lowest similarity selected (None: 0.70 with an embedder, 0.25 for the lexical measure).
        self.threshold = threshold
        self._skills: dict[str, AgentSkill] | None = None
        #: Skill folders that could not be read, with why (they are skipped).
        self.problems: list[str] = []

    def _load(self) -> dict[str, AgentSkill]:
        if self._skills is not None:
            return self._skills
        skills: dict[str, AgentSkill] = {}
        for root in self.dirs:
            for base in (root / "skills", root):
                try:
                    folders = sorted(p for p in base.iterdir() if (p / SKILL_FILE).is_file())
                except OSError:
                    continue
                for folder in folders:
                    try:
                        skill = AgentSkill.from_path(folder)
                    except ConfigurationError as exc:
                        self.problems.append(str(exc))
                        log.warning("AgentSkillCatalog: %s, skipping %s", exc, folder)
                        continue
                    skills.setdefault(skill.name, skill)
        self._skills = skills
        return skills

    def reload(self) -> None:
        """Read the folders again on next use."""
        self._skills = None
        self.problems = []

    def all(self) -> list[AgentSkill]:
        """Every skill, by name."""
        return sorted(self._load().values(), key=lambda s: s.name)

    def find(self, name: str) -> AgentSkill | None:
        return self._load().get(name)

    async def scores(self, message: str, *, among: Iterable[str | AgentSkill] | None = None) -> dict[str, float]:
        """The similarity of ``message`` to each skill's description, by skill name. An embedder that fails
        is logged and the lexical measure used instead."""
        skills = self._among(among)
        if not skills or not message.strip():
            return {skill.name: 0.0 for skill in skills}
        if self.embedder is not None:
            try:
                vectors = self.embedder([message, *(s.description for s in skills)])
                if inspect.isawaitable(vectors):
                    vectors = await vectors
                query, *rest = list(vectors)
                if len(rest) != len(skills):
                    raise ValueError(f"the embedder returned {len(rest) + 1} vectors for {len(skills) + 1} texts")
                return {s.name: _cosine(query, v) for s, v in zip(skills, rest, strict=True)}
            except Exception as exc:
                log.warning("AgentSkillCatalog: embedding failed (%s); using the lexical measure", exc)
        return {s.name: lexical_similarity(message, s.description) for s in skills}

    async def select(self, message: str, *, among: Iterable[str | AgentSkill] | None = None,
                     limit: int | None = None) -> list[AgentSkill]:
        """The skills (of ``among``, else all) whose description is at least :attr:`threshold` similar to
        ``message``, most similar first."""
        skills = {s.name: s for s in self._among(among)}
        scored = await self.scores(message, among=list(skills.values()))
        threshold = self.threshold
        if threshold is None:
            threshold = EMBEDDING_THRESHOLD if self.embedder is not None else LEXICAL_THRESHOLD
        chosen = sorted((name for name, score in scored.items() if score >= threshold),
                        key=lambda name: (-scored[name], name))
        return [skills[name] for name in chosen[:limit]]

    def _among(self, among: Iterable[str | AgentSkill] | None) -> list[AgentSkill]:
        if among is None:
            return self.all()
        out: list[AgentSkill] = []
        for item in among:
            if isinstance(item, AgentSkill):
                out.append(item)
                continue
            skill = self.find(str(item))
            if skill is None:
                known = ", ".join(s.name for s in self.all()) or "none"
                raise ConfigurationError(f"No agent skill named '{item}' (found: {known}); skills are folders with "
                                         f"a SKILL.md under: {', '.join(str(d) for d in self.dirs)}")
            out.append(skill)
        return out


def expand_robot_skills(ids: Iterable[str], dirs: Iterable[Path], *, robot: str, visited: set[str],
                        catalog: AgentSkillCatalog) -> tuple[list[Template], list[AgentSkill]]:
    """RobotLab's one ``skills:`` for both kinds: the template skills ``ids`` expand to
    (:func:`~workspace.templates.expand_skills`: depth-first, each once), and the agent skills of ``catalog`` the
    ids that are no template name (at any depth), in order, each once: the robot's pending agent skills, one of
    which a run is given when its message asks for it. An id that is neither is refused naming where both kinds
    are looked for."""
    from workspace.templates import expand_skills

    pending: dict[str, AgentSkill] = {}

    def agent(skill_id: str) -> bool:
        skill = catalog.find(skill_id)
        if skill is None:
            return False
        pending.setdefault(skill.name, skill)
        return True

    where = ", ".join(str(d) for d in catalog.dirs) or "no folder"
    templates = expand_skills(ids, dirs, robot=robot, visited=visited, agent=agent, agent_where=where)
    return templates, list(pending.values())


async def skill_script_tools(skills: Iterable[AgentSkill], *, ceiling: Ceiling | None = None) -> list[ScriptTool]:
    """The executable ``scripts/`` of ``skills`` as script tools, the first of a name kept (RobotLab adds them to
    the run the skills are selected for). They are read in a worker thread (a script described by neither a front
    matter nor a sidecar is asked for its ``--help``) and run as every script tool does: in the sandbox on the
    run's folder, asked about as the command they run, confined to the skill's ``capabilities`` cut to ``ceiling``
    (the configuration's ``sandbox`` settings; :mod:`workspace.tools.capabilities`). A script whose description,
    or whose skill's capabilities, are broken is left out with a warning naming it, so one bad script does not
    stop the run."""
    import asyncio

    def read(skill: AgentSkill) -> list[ScriptTool]:
        from workspace.tools.script import ScriptTool, ScriptToolError

        out: list[ScriptTool] = []
        for path in skill.scripts:
            try:
                tool = ScriptTool.from_path(path, capabilities=skill.capabilities, skill_dir=skill.path,
                                            ceiling=ceiling)
            except ScriptToolError as exc:
                log.warning("AgentSkill '%s': %s, skipping the script", skill.name, exc)
                continue
            if tool is not None:
                out.append(tool)
        return out

    tools: dict[str, ScriptTool] = {}
    for skill in skills:
        if skill.scripts:
            for tool in await asyncio.to_thread(read, skill):
                tools.setdefault(tool.name, tool)
    return list(tools.values())


def instructions(skills: Iterable[AgentSkill]) -> str:
    """The selected skills' instructions joined as RobotLab prepends them to the system prompt."""
    return "\n\n".join(s.instructions for s in skills if s.instructions)
