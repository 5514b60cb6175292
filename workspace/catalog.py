"""Finding robots (and networks) by name: the project's, the user's and the shipped ones.

A robot file is a prompt template (Markdown with YAML front matter) in a ``robots``
folder: ``.robotlab/robots/`` of the opened folder, the user's config folder
(``robotlab paths``), or the robots shipped in ``resources/robots/``. The user's
robots come before the shipped ones of the same name. A robot of the opened folder
never takes the name of a user's or shipped robot: one that has it is listed beside
it as ``NAME · this folder`` (:data:`FOLDER_MARK`), its name in the picker, ``robots
list``, a run's header and its threads, and the bare name stays the user's or the
shipped robot (a cloned repository cannot replace ``assistant`` in silence, nor get
the approval rules written for it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workspace.errors import ConfigurationError
from workspace.templates import Template, search_path


@dataclass(frozen=True, slots=True)
class RobotInfo:
    name: str
    description: str | None
    model: str | None
    path: Path
    #: "project", "user" or "shipped"
    source: str
    tools: Any = None
    #: Messages a new thread of this robot may start with (the front matter's ``examples``).
    examples: tuple[str, ...] = ()


def _source(path: Path, folder: Path | None) -> str:
    from workspace import paths

    try:
        path.relative_to(paths.resources_dir())
        return "shipped"
    except ValueError:
        pass
    if folder is not None:
        try:
            path.relative_to(paths.project_dir(folder))
            return "project"
        except ValueError:
            pass
    return "user"


#: Appended to the name of a folder's robot that has the name of a user's or shipped robot.
FOLDER_MARK = " · this folder"


def robot_dirs(folder: Path | None = None) -> list[Path]:
    return search_path(folder, kind="robots")


def list_robots(folder: Path | None = None, *, problems: list[str] | None = None) -> list[RobotInfo]:
    """Every robot file found, first definition of each name only, sorted by name.

    A file that does not load is left out; pass a list as ``problems`` to hear why
    (one message per file, naming it and what to fix).
    """
    seen: dict[str, RobotInfo] = {}
    folders: dict[str, RobotInfo] = {}  # the opened folder's, named apart from the user's and shipped ones
    for directory in robot_dirs(folder):
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.md")):
            try:
                template = Template.load(path)
            except ConfigurationError as exc:
                if problems is not None:
                    problems.append(str(exc))
                continue
            name, source = template.name, _source(path, folder)
            found = folders if source == "project" else seen
            if name not in found:
                found[name] = RobotInfo(name, template.description, template.model, path, source,
                                        template.tools, tuple(template.examples))
    for name, info in folders.items():
        if name in seen:
            info = replace(info, name=name + FOLDER_MARK)
        seen[info.name] = info
    return sorted(seen.values(), key=lambda r: r.name)


def find_robot_file(name: str, folder: Path | None = None) -> Path:
    candidate = Path(name)
    if candidate.suffix and candidate.is_file():
        return candidate
    listed = list_robots(folder)
    for info in listed:
        if info.name == name:
            return info.path
    renamed = {info.path for info in listed if info.name.endswith(FOLDER_MARK)}
    for directory in robot_dirs(folder):
        path = directory / f"{name}.md"
        if path.is_file() and path not in renamed:  # a folder's file named like a user's robot: by its mark only
            return path
    available = ", ".join(r.name for r in list_robots(folder)) or "(none)"
    raise ConfigurationError(
        f"Unknown robot '{name}'. Available robots: {available}. "
        f"Add your own as a Markdown file with YAML front matter in {robot_dirs(folder)[-2]}"
    )


def load_robot(name: str, *, folder: Path | None = None, **options: Any) -> Any:
    """A :class:`~workspace.robot.Robot` built from its robot file (options override)."""
    from workspace.robot import Robot

    path = find_robot_file(name, folder)
    template = Template.load(path)
    own = name if name.endswith(FOLDER_MARK) else template.name  # a folder's robot keeps its mark everywhere
    return Robot(own, template=template, folder=folder, **options)


def bus_peers(robot: Any, *, folder: Path | None = None, **options: Any) -> list[Any]:
    """The robots whose files name the bus ``robot``'s file names (``bus: name``), other than ``robot``, built on
    that bus and answering each message with a run of their own (``serve``), in place of the peers started
    before: what ``robotlab run`` starts so the robot it runs has someone to talk to. ``options`` go to each Robot (the run's configuration, model, server).
    A file that does not load is left out, as ``robots list`` leaves it out."""
    bus = getattr(robot, "bus", None)
    name = getattr(bus, "name", None)
    if name is None:
        return []
    peers = []
    for info in list_robots(folder):
        if info.name == robot.name:
            continue
        template = Template.load(info.path)
        if template.metadata.get("bus") != name:
            continue
        peer = load_robot(info.name, folder=folder, **options)
        peer._join_bus(replace=True)  # the peers started now (with these options) answer, not earlier ones
        peers.append(peer.serve())
    return peers
