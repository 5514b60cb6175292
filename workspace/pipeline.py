"""RobotLab's pipeline API: a robot is a step that takes a result and returns the next one.

RobotLab runs robots as SimpleFlow steps: each step gets a ``SimpleFlow::Result`` (a ``value``,
a ``context`` dict) and returns a new one, either *continued* (the next step runs) or *halted*
(the pipeline stops there). :class:`StepResult` is that result; :meth:`workspace.robot.Robot.call`
is RobotLab's ``Robot#call``; :class:`Pipeline` runs steps in order until one halts::

    result = StepResult.start("I was charged twice", customer={"name": "Ada"})
    result = classifier.call(result)          # continued, value: the classifier's RobotResult
    if "billing" in result.value.last_text_content:
        result = billing.call(result)         # gets the classifier's answer as its message
    result.context["billing"]                 # each robot's RobotResult, under its name

``Robot#call(result)`` (spec 1.5): the run parameters are ``result.context["run_params"]``
(RobotLab's ``:run_params``, e.g. ``customer``) with the current ``value`` merged in: a dict
value is merged, a RobotResult gives ``message`` = its last text, a string is the message,
anything else its ``str``; ``mcp``, ``tools``, ``memory`` and ``network_memory`` of the run
parameters are run options, never template variables. The robot runs on that message, then
``result.with_context(robot.name, robot_result).continue_(robot_result)``.

A robot that decides whether the pipeline goes on overrides ``call``::

    class Guard(Robot):
        def call(self, result):
            out = super().call(result)
            return out.halt() if "REFUSE" in (out.value.last_text_content or "") else out

Python reserves ``continue``: the method is ``continue_``. Results are immutable: every method
returns a new one.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from workspace.result import RobotResult

if TYPE_CHECKING:
    from workspace.robot import Robot

__all__ = ["Pipeline", "Step", "StepResult", "extract_run_context", "robot_acall", "robot_call"]

#: The context key of the run parameters (RobotLab's ``:run_params``).
RUN_PARAMS = "run_params"
#: Run parameters that are options of the run, not template variables (RobotLab's extract_run_context).
_RUN_OPTION_KEYS = ("mcp", "tools", "memory", "network_memory")


@dataclass(frozen=True, slots=True)
class StepResult:
    """SimpleFlow's ``Result``: the value passed along, a context, errors, and whether to go on."""

    value: Any = None
    context: Mapping[str, Any] = field(default_factory=dict)
    errors: Mapping[str, list[str]] = field(default_factory=dict)
    #: False once a step halted the pipeline.
    continued: bool = True
    #: Optional steps a step asked to run (RobotLab's ``activate``), in order.
    activated: tuple[str, ...] = ()

    @classmethod
    def start(cls, message: Any = None, **run_params: Any) -> StepResult:
        """The first result of a pipeline: RobotLab's ``Result.new(run_context, context: {run_params:})``.
        ``message`` becomes ``run_params["message"]`` (and the value)."""
        params = dict(run_params)
        if message is not None:
            params["message"] = message
        return cls(value=dict(params), context={RUN_PARAMS: params})

    @property
    def halted(self) -> bool:
        return not self.continued

    @property
    def run_params(self) -> dict[str, Any]:
        value = self.context.get(RUN_PARAMS)
        return dict(value) if isinstance(value, Mapping) else {}

    def with_context(self, key: str, value: Any) -> StepResult:
        """A copy with ``context[key] = value``."""
        return replace(self, context={**self.context, str(key): value})

    def with_error(self, key: str, message: str) -> StepResult:
        """A copy with ``message`` added to ``errors[key]``."""
        errors = {k: list(v) for k, v in self.errors.items()}
        errors.setdefault(str(key), []).append(message)
        return replace(self, errors=errors)

    def continue_(self, value: Any) -> StepResult:
        """SimpleFlow's ``continue(value)``: the next step runs with ``value``."""
        return replace(self, value=value, continued=True)

    def halt(self, value: Any = None) -> StepResult:
        """SimpleFlow's ``halt(value = nil)``: no further step runs (the value stays unless given)."""
        return replace(self, value=self.value if value is None else value, continued=False)

    def activate(self, *steps: str) -> StepResult:
        """Ask for optional steps to run (RobotLab's routing): recorded in ``activated``."""
        names = tuple(dict.fromkeys([*self.activated, *(str(s) for s in steps)]))
        return replace(self, activated=names)


def extract_run_context(result: StepResult) -> dict[str, Any]:
    """RobotLab's ``Robot#extract_run_context``: the run parameters with the current value merged in
    (see the module docstring). Returns a new dict; ``message`` is the message to run on."""
    params = result.run_params
    held = {key: params.pop(key) for key in _RUN_OPTION_KEYS if key in params}
    value = result.value
    if isinstance(value, Mapping):
        params.update({str(k): v for k, v in value.items()})
    elif isinstance(value, RobotResult):
        params["message"] = value.last_text_content
    elif isinstance(value, str):
        params["message"] = value
    else:
        params["message"] = str(value)
    params.update(held)
    return params


def _run_arguments(result: StepResult) -> tuple[Any, dict[str, Any]]:
    params = extract_run_context(result)
    message = params.pop("message", None)
    options = {k: v for k, v in params.items() if k not in _RUN_OPTION_KEYS or v is not None}
    return ("" if message is None else message), options


def robot_call(robot: Robot, result: StepResult) -> StepResult:
    """``Robot#call``: run, then ``result.with_context(name, robot_result).continue_(robot_result)``. An error
    of the run does not stop the pipeline (RobotLab's error-tolerant step): the step's result says
    ``"Error: <type>: <message>"`` and the next step runs on it."""
    message, options = _run_arguments(result)
    started = time.monotonic()
    try:
        robot_result = robot.run(message, **options)
    except Exception as exc:
        robot_result = _error_result(robot.name, exc, time.monotonic() - started)
    return result.with_context(robot.name, robot_result).continue_(robot_result)


async def robot_acall(robot: Robot, result: StepResult) -> StepResult:
    """:func:`robot_call` in a running event loop."""
    message, options = _run_arguments(result)
    started = time.monotonic()
    try:
        robot_result = await robot.arun(message, **options)
    except Exception as exc:
        robot_result = _error_result(robot.name, exc, time.monotonic() - started)
    return result.with_context(robot.name, robot_result).continue_(robot_result)


def _error_result(robot: str, exc: BaseException, duration: float) -> RobotResult:
    """RobotLab's result of a failed step: ``"Error: <Class>: <message>"``, with the time it took."""
    from workspace.messages import TextMessage

    text = f"Error: {type(exc).__name__}: {exc}"
    return RobotResult(robot_name=robot, output=[TextMessage(role="assistant", content=text)], stop_reason="stop",
                       duration=duration)


#: A step: a robot (its ``call``), or a function of a StepResult returning one (sync or async).
Step = Any


class Pipeline:
    """Steps run in order, each on the result of the one before, until one halts (SimpleFlow's
    sequential pipeline). A step is a :class:`~workspace.robot.Robot` or a callable."""

    def __init__(self, steps: Iterable[Step] = ()) -> None:
        self.steps: list[tuple[str, Step]] = []
        for step in steps:
            self.step(step)

    def step(self, step: Step, name: str | None = None) -> Pipeline:
        """Add a step (named after the robot or function unless ``name``); returns self."""
        label = name or str(getattr(step, "name", None) or getattr(step, "__name__", None) or f"step{len(self.steps)}")
        self.steps.append((label, step))
        return self

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.steps]

    def call(self, result: StepResult | Any = None) -> StepResult:
        """Run the steps (blocking; not inside a running event loop: use :meth:`acall`)."""
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.acall(result))
        raise RuntimeError("Pipeline.call() cannot be called from a running event loop; use 'await pipeline.acall()'")

    async def acall(self, result: StepResult | Any = None) -> StepResult:
        current = result if isinstance(result, StepResult) else StepResult.start(result)
        for _name, step in self.steps:
            if current.halted:
                break
            current = await _call_step(step, current)
        return current


async def _call_step(step: Step, result: StepResult) -> StepResult:
    acall: Callable[[StepResult], Awaitable[StepResult]] | None = getattr(step, "acall", None)
    call = getattr(step, "call", None)
    overridden = call is not None and _overrides_call(step)
    if acall is not None and not overridden:
        return await acall(result)
    if overridden and call is not None:  # a robot subclass's own ``call`` (blocking): run it off the loop
        import asyncio

        out = await asyncio.to_thread(call, result)
    else:
        out = step(result)
    if inspect.isawaitable(out):
        out = await out
    if not isinstance(out, StepResult):
        raise TypeError(f"pipeline step {step!r} returned {out!r}; a step returns a StepResult "
                        "(result.continue_(value) or result.halt(value))")
    return out


def _overrides_call(step: Any) -> bool:
    """A step whose class defines ``call`` below the class that defines its ``acall`` (a Robot subclass
    with its own ``call``): that ``call`` decides, so it runs rather than the inherited ``acall``."""
    mro = type(step).__mro__
    has_call = next((c for c in mro if "call" in c.__dict__), None)
    has_acall = next((c for c in mro if "acall" in c.__dict__), None)
    if has_call is None or has_acall is None or has_call is has_acall:
        return False
    return issubclass(has_call, has_acall)
