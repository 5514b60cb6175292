"""What can be wrong with a network: a :class:`Problem` in its definition (raised together as a
:class:`NetworkError`, or a :class:`NetworkFileError` for a YAML file), or a task that failed while
it ran (:class:`NetworkRunError`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workspace.errors import ConfigurationError, RunFailedError

if TYPE_CHECKING:
    from workspace.result import NetworkResult

__all__ = ["NetworkError", "NetworkFileError", "NetworkRunError", "Problem"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a network definition."""

    message: str
    task: str | None = None
    robot: str | None = None
    field: str | None = None
    path: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.text()}"

    def text(self) -> str:
        """The problem without the file: ``task 'a', field 'robot': unknown robot 'x'``."""
        subject = []
        if self.task is not None:
            subject.append(f"task '{self.task}'")
        if self.robot is not None:
            subject.append(f"robot '{self.robot}'")
        if self.field is not None:
            subject.append(f"field '{self.field}'")
        lead = ", ".join(subject)
        return f"{lead}: {self.message}" if lead else self.message


class NetworkError(ConfigurationError):
    """A network that cannot run: unknown tasks, a cycle, bad routes. ``problems`` lists them all."""

    def __init__(self, problems: Sequence[Problem], *, name: str | None = None) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            text = str(self.problems[0])
        else:
            head = f"network '{name}' has {len(self.problems)} problems" if name else \
                f"{len(self.problems)} problems"
            text = head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(text)


class NetworkFileError(NetworkError):
    """A YAML network file with problems; each names the file and line, and the task, robot or key."""

    def __init__(self, path: Path, problems: Sequence[Problem]) -> None:
        self.path = path
        probs = list(problems)
        if len(probs) == 1:
            super().__init__(probs)
        else:
            ConfigurationError.__init__(
                self, f"{path}: {len(probs)} problems:\n" + "\n".join(f"  - {_without_path(p)}" for p in probs)
            )
            self.problems = probs


def _without_path(problem: Problem) -> str:
    return f"line {problem.line}: {problem.text()}" if problem.line else problem.text()


class NetworkRunError(RunFailedError):
    """:meth:`Network.arun` when a task failed: ``task`` names it, ``result`` keeps what finished."""

    def __init__(self, message: str, *, task: str | None, result: NetworkResult) -> None:
        super().__init__(message)
        self.task = task
        self.result = result
