"""Tools: a name, a description, a JSON schema and a handler (sync or async).

Arguments are validated against the schema before the handler runs; invalid
arguments, a raising handler or a timeout become an error result the model can
read (``{"error": ...}``), never a crash of the agent loop. Sync handlers run in a
worker thread so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workspace.errors import Error, retryable, serialize
from workspace.nesting import MAX_NESTING, cut_deep, too_deep
from workspace.tools.plain_schema import plainly_valid

if TYPE_CHECKING:
    from workspace.events import Emit
    from workspace.memory import Memory
    from workspace.providers.base import ToolSpec

DEFAULT_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}, "required": []}


class RunHandle(Protocol):
    """What a tool reaches of the run it works for (:class:`workspace.agent.AgentRun`): a robot used as a
    tool (:mod:`workspace.robots_as_tools`) runs its own run inside it."""

    run_id: str

    @property
    def stop_reason(self) -> str | None:
        """Why the run is being stopped (None while it is not)."""
        ...

    def forward(self, event: Any) -> None:
        """Put an event of a run inside this run into its stream."""
        ...

    def add_usage(self, usage: Any) -> None:
        """Count a run inside this run's usage in its totals."""
        ...

    def child_options(self, call_id: str) -> dict[str, Any]:
        """The run options of a run started by the tool call ``call_id``."""
        ...


@dataclass(slots=True, kw_only=True)
class ToolContext:
    """What a handler may ask for by declaring a parameter of this type (or named ``context``)."""

    robot: str = ""
    run_id: str = ""
    call_id: str = ""
    task: str | None = None
    memory: Memory | None = None
    network: Any = None
    #: The folder the user opened; file tools refuse paths outside it.
    folder: Path | None = None
    #: The run's proposed change set collector (see :mod:`workspace.changes`), if any.
    changes: Any = None
    #: Emit an extra event into the run's stream (``emit(ev.ToolProgress(...))``: the run stamps it).
    emit: Emit | None = None
    #: The run itself (None outside a run, e.g. ``Tool.call``).
    run: RunHandle | None = None
    #: Where the call comes among the tool calls made (:func:`next_call_order`, taken in the order of the calls
    #: in the model's message, before any runs): calls made at once finish in any order, this stays. None:
    #: not a run's call.
    order: int | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ToolOutput:
    """A handler's result when what the model sees and what people see differ.

    ``data`` goes to the model (as ``{"data": data}``, or ``{"error": data}`` when
    ``is_error``); ``raw`` is the full payload the inspector shows (MCP content
    blocks, images, structured content).
    """

    data: Any
    raw: Any = None
    is_error: bool = False


class Tool:
    """A tool a robot can call.

    ``handler(input)`` receives the validated argument dict; it may also accept the
    keywords ``context`` (a :class:`ToolContext`) and RobotLab's ``robot``, ``network``
    and ``step``. It may be a coroutine function. When it raises, the model is sent
    ``Error (<name>): <message>`` (RobotLab's text) unless ``raise_on_error`` (the run fails).
    """

    __slots__ = (
        "_accepts",
        "_spec",
        "_validator",
        "annotations",
        "description",
        "extra_arguments",
        "handler",
        "mcp",
        "name",
        "parameters",
        "raise_on_error",
        "strict",
        "timeout",
        "title",
    )

    def __init__(
        self,
        name: str,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        handler: Callable[..., Any] | None = None,
        *,
        mcp: str | None = None,
        strict: bool | None = None,
        annotations: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        title: str | None = None,
        raise_on_error: bool = False,
    ) -> None:
        self.name = str(name)
        self.description = description
        self.parameters: dict[str, Any] | None = dict(parameters) if parameters is not None else None
        self.handler = handler
        #: MCP server name for tools discovered from a server (RobotLab's ``mcp``).
        self.mcp = mcp
        self.strict = strict
        #: MCP tool annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).
        self.annotations: dict[str, Any] = dict(annotations or {})
        self.timeout = timeout
        self.title = title
        #: A critical tool: its exception fails the run instead of going back to the model (RobotLab's
        #: ``raise_on_error``).
        self.raise_on_error = raise_on_error
        self._validator: Any = None
        self._accepts: frozenset[str] | None = None
        #: What :meth:`spec` made, with the name, description and parameters it was made of.
        self._spec: tuple[str, str | None, dict[str, Any] | None, ToolSpec] | None = None
        #: False for a tool whose handler takes only the arguments its schema names (a Python function
        #: without ``**kwargs``): another argument is then an invalid call, named, not a TypeError.
        self.extra_arguments = True

    # -- RobotLab's surface ---------------------------------------------------------------
    @property
    def is_mcp(self) -> bool:
        return self.mcp is not None

    @property
    def server(self) -> str | None:
        return self.mcp

    @property
    def params_schema(self) -> dict[str, Any] | None:
        return self.parameters

    @property
    def provider_params(self) -> dict[str, Any]:
        return {}

    @property
    def read_only(self) -> bool:
        return bool(self.annotations.get("readOnlyHint"))

    @property
    def destructive(self) -> bool:
        # MCP's default for destructiveHint is true when readOnlyHint is false.
        if self.read_only:
            return False
        return bool(self.annotations.get("destructiveHint", False))

    def to_json_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["parameters"] = self.parameters if self.parameters is not None else dict(DEFAULT_PARAMETERS)
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.parameters is not None:
            out["parameters"] = self.parameters
        if self.mcp is not None:
            out["mcp"] = self.mcp
        if self.strict is not None:
            out["strict"] = self.strict
        if self.annotations:
            out["annotations"] = self.annotations
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def spec(self) -> ToolSpec:
        """What a provider is sent of the tool: the same object while the tool's name, description and
        parameters are the same objects (a run's model calls, and the robot's next runs, offer the same specs:
        what is worked out of them is kept by them, see :mod:`workspace.context`). So to change a tool's
        description or parameters, give it new ones (``tool.parameters = {...}``): a parameters dict edited in place
        is the same object, and the spec, the provider's tools list and its JSON made from it are kept as they were."""
        kept = self._spec
        name, description, parameters = self.name, self.description, self.parameters
        if kept is not None and kept[0] is name and kept[1] is description and kept[2] is parameters:
            return kept[3]
        from workspace.providers.base import ToolSpec

        made = ToolSpec(name=name, description=description or "",
                        parameters=parameters if parameters is not None else dict(DEFAULT_PARAMETERS))
        self._spec = (name, description, parameters, made)
        return made

    def __repr__(self) -> str:
        where = f" mcp={self.mcp!r}" if self.mcp else ""
        return f"<Tool {self.name!r}{where}>"

    # -- validation -----------------------------------------------------------------------
    def validate(self, arguments: Any) -> list[str]:
        """Problems with ``arguments`` against the schema, as sentences; empty when valid."""
        if not isinstance(arguments, dict):
            return [f"arguments must be a JSON object, got {type(arguments).__name__}"]
        if not self.parameters:
            return []
        problems = []
        known = self.parameters.get("properties")
        if not self.extra_arguments and isinstance(known, dict):
            for key in sorted(set(arguments) - set(known)):
                import difflib  # (for an unknown argument alone)

                near = difflib.get_close_matches(str(key), list(known), n=1)
                hint = f" — did you mean '{near[0]}'?" if near else f" (it takes: {', '.join(known) or 'nothing'})"
                problems.append(f"unknown argument '{key}'{hint}")
        if self._validator is None:
            import jsonschema

            cls = jsonschema.validators.validator_for(self.parameters, default=jsonschema.Draft202012Validator)
            try:
                cls.check_schema(self.parameters)
                self._validator = cls(self.parameters)
            except jsonschema.SchemaError:
                # A server's schema we cannot use is not the model's fault: accept the call.
                self._validator = False
        if self._validator is False or plainly_valid(self.parameters, arguments):
            return problems
        for err in sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in err.absolute_path)
            problems.append(f"{where}: {err.message}" if where else err.message)
        return problems

    # -- calling --------------------------------------------------------------------------
    def _accepted_keywords(self) -> frozenset[str]:
        if self._accepts is None:
            handler = self.handler
            try:
                params = inspect.signature(handler).parameters if handler is not None else {}
            except (TypeError, ValueError):
                params = {}
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
                self._accepts = frozenset({"context", "robot", "network", "step", "*"})
            else:
                self._accepts = frozenset(n for n in params if n in {"context", "robot", "network", "step"})
        return self._accepts

    def _handler_kwargs(self, context: ToolContext | None) -> dict[str, Any]:
        accepts = self._accepted_keywords()
        kwargs: dict[str, Any] = {}
        if "context" in accepts:
            kwargs["context"] = context
        if "robot" in accepts:
            kwargs["robot"] = context.robot if context else None
        if "network" in accepts:
            kwargs["network"] = context.network if context else None
        if "step" in accepts:
            kwargs["step"] = context.task if context else None
        return kwargs

    def call(self, input: Any = None, **context: Any) -> Any:
        """RobotLab's synchronous ``call``: the handler's value, or ``{"error": {...}}``.

        An async handler is run to its end (on a loop of its own; called from inside a running event
        loop, in a worker thread): ``call`` always returns the value, never a coroutine.

        Library errors (:class:`workspace.errors.Error`) propagate; other exceptions are
        returned as data. No schema validation happens here (as in RobotLab).
        """
        if self.handler is None:
            raise Error(f"Tool '{self.name}' has no handler defined")
        ctx = ToolContext(
            robot=str(context.get("robot") or ""), network=context.get("network"), task=context.get("step")
        )
        try:
            value = self.handler(input if input is not None else {}, **self._handler_kwargs(ctx))
            if inspect.isawaitable(value):
                value = _run_to_end(value)
            return value
        except Error:
            raise
        except Exception as exc:
            return {"error": serialize(exc)}

    async def invoke(self, arguments: Any, context: ToolContext | None = None) -> ToolOutput:
        """Validate, run the handler off the event loop if it is sync, and capture errors."""
        if self.handler is None:
            return ToolOutput(f"Tool '{self.name}' has no handler defined", is_error=True)
        if too_deep(arguments):
            return ToolOutput(f"Invalid arguments for tool '{self.name}': they are nested deeper than {MAX_NESTING} "
                              "levels. Call it again with arguments nested less deep.", is_error=True)
        problems = self.validate(arguments)
        if problems:
            schema = json.dumps(self.parameters, ensure_ascii=False)
            return ToolOutput(
                f"Invalid arguments for tool '{self.name}': " + "; ".join(problems)
                + f". Call it again with arguments matching this JSON schema: {schema}",
                is_error=True,
            )
        kwargs = self._handler_kwargs(context)
        token = _CALL.set(context)
        try:
            if self.timeout is None:  # no time limit: no timer to make and cancel
                value = await self._run_handler(arguments, kwargs)
            else:
                limit = asyncio.timeout(self.timeout)
                try:
                    async with limit:
                        value = await self._run_handler(arguments, kwargs)
                except TimeoutError:
                    if not limit.expired():  # the handler's own TimeoutError: an error like any other
                        raise
                    return ToolOutput(f"Tool '{self.name}' timed out after {self.timeout:g} s", is_error=True)
        except Exception as exc:
            if self.raise_on_error:
                raise
            # RobotLab's text for the model; the inspector keeps the exception's type and cause.
            text = f"Error ({self.name}): {exc or type(exc).__name__}" + (" (retryable)" if retryable(exc) else "")
            return ToolOutput(text, raw=serialize(exc), is_error=True)
        finally:
            _CALL.reset(token)
        if not isinstance(value, ToolOutput):
            if isinstance(value, dict) and set(value) == {"error"}:
                value = ToolOutput(value["error"], raw=None, is_error=True)
            else:
                value = ToolOutput(value)
        return _within_nesting(value)

    async def _run_handler(self, arguments: Any, kwargs: dict[str, Any]) -> Any:
        """The handler's value: awaited when it is a coroutine function, else run in a worker thread."""
        handler = self.handler
        assert handler is not None
        if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004
        ):
            return await handler(arguments, **kwargs)
        value = await asyncio.to_thread(handler, arguments, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        return value


#: The tool call whose handler is running in this context (asyncio tasks and worker threads it starts inherit it).
_CALL: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar("robotlab_tool_call", default=None)


#: One count for every tool call made in this process (and for what orders itself among them).
_ORDER = itertools.count()


def next_call_order() -> int:
    """The next number of the process's one count: the agent loop takes one for each tool call of a model's message,
    in the message's order, before any of them runs (:attr:`ToolContext.order`); what sorts itself among the calls
    (a memory write outside a call) takes one when it happens."""
    return next(_ORDER)


def current_call() -> ToolContext | None:
    """The context of the tool call whose handler runs the caller (None outside one): a robot's delegation
    started by a tool shows as a run inside that call (:mod:`workspace.delegation`)."""
    return _CALL.get()


def _within_nesting(output: ToolOutput) -> ToolOutput:
    """``output`` with what nests deeper than :data:`workspace.nesting.MAX_NESTING` cut (the model is told)."""
    deep_data, deep_raw = too_deep(output.data), too_deep(output.raw)
    if not deep_data and not deep_raw:
        return output
    data = cut_deep(output.data) if deep_data else output.data
    if deep_data:
        note = f"The result nested deeper than {MAX_NESTING} levels; the deeper levels were cut."
        data = {"result": data, "note": note}
    return ToolOutput(data, raw=cut_deep(output.raw) if deep_raw else output.raw, is_error=output.is_error)


def _run_to_end(awaitable: Any) -> Any:
    """The value of ``awaitable``, from synchronous code (``Tool.call`` of an async handler)."""

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        return asyncio.run(wait())
    import concurrent.futures

    # Called from inside a running loop (which this call blocks): the handler runs on a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()
