"""The Narrator (RobotLab's ``RobotLab::Narrator``): a hook that writes a live line for what a robot does.

Enable it for every robot and network, or register it like any hook::

    Narrator.enable()                 # every run, lines on stderr
    Narrator.enable(output=lines.append)
    robot.on(Narrator)                # one robot; network.on(Narrator): a network's runs

The lines are RobotLab's, each written as one line to :attr:`Narrator.output` (a text stream such as
``sys.stderr``, or any callable given the line without its newline)::

      · writer: thinking…             before each model call (the robot's name left out when unknown)
      · → read_file path="notes.md"   before each tool call: its first argument, first line, 80 characters
      ·   ✗ no such file              after a tool call that failed: the first line of the error

Secrets are masked in the lines (``workspace.secrets.redact``), as in logs. A line that cannot be written, or
a hook that fails, is dropped: narration never breaks a run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import IO, Any, ClassVar

from workspace.hooks import GLOBAL, Hook, LlmGenerationHookContext, ToolCallHookContext, on
from workspace.secrets import redact

#: A tool's argument and an error are clipped to this many characters (then "…").
MAX = 80

Output = IO[str] | Callable[[str], Any]


class Narrator(Hook):
    """A console feed of a robot's model calls, tool calls and tool errors (see the module)."""

    namespace = "narrator"
    #: Where the lines go: a text stream (written with a newline) or a callable given each line; None: stderr
    #: as it is when the line is written (so a test's or a program's replaced stderr is followed).
    output: ClassVar[Output | None] = None

    @classmethod
    def enable(cls, output: Output | None = None) -> type[Narrator]:
        """Set :attr:`output` (None: stderr), register the narrator for every robot and network (once: enabling
        it again only changes the output) and return the class (RobotLab's ``Narrator.enable!``)."""
        cls.output = output
        if not any(registration.handler is cls for registration in GLOBAL):
            on(cls)
        return cls

    @classmethod
    def before_llm_generation(cls, ctx: LlmGenerationHookContext) -> None:
        try:
            who = getattr(ctx.robot, "name", None)
            cls._say(f"{who}: thinking…" if who else "thinking…")
        except Exception:
            return

    @classmethod
    def before_tool_call(cls, ctx: ToolCallHookContext) -> None:
        try:
            cls._say(f"→ {ctx.tool_name}{_summary(ctx.tool_args)}")
        except Exception:
            return

    @classmethod
    def after_tool_call(cls, ctx: ToolCallHookContext) -> None:
        try:
            if ctx.tool_error is not None:
                cls._say(f"  ✗ {_clip(_error_text(ctx.tool_error))}")
        except Exception:
            return

    @classmethod
    def _say(cls, message: str) -> None:
        line = redact(f"  · {message}")
        target = cls.output if cls.output is not None else sys.stderr
        try:
            write = getattr(target, "write", None)
            if callable(write):
                write(line + "\n")
                flush = getattr(target, "flush", None)
                if callable(flush):
                    flush()
            elif callable(target):
                target(line)
        except Exception:
            return


def _summary(args: Any) -> str:
    """`` key="value"`` for the first argument of a tool call (nothing when it has none)."""
    if isinstance(args, str):  # the model's arguments as JSON text
        try:
            args = json.loads(args)
        except ValueError:
            return ""
    if not isinstance(args, dict) or not args:
        return ""
    key, value = next(iter(args.items()))
    return f" {key}={json.dumps(_clip(value), ensure_ascii=False)}"


def _error_text(error: Any) -> str:
    """A tool's error as text: the ``error`` of a ``{"error": ...}`` payload, else the error itself."""
    if isinstance(error, dict) and "error" in error:
        error = error["error"]
    return str(error)


def _clip(value: Any) -> str:
    """The first line of ``value`` as text, stripped, clipped to :data:`MAX` characters plus "…"."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str) \
        if isinstance(value, dict | list) else str(value)
    line = (text.splitlines() or [""])[0].strip()
    return f"{line[:MAX]}…" if len(line) > MAX else line


__all__ = ["MAX", "Narrator"]
