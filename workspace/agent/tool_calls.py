"""The tool half of :class:`~workspace.agent.run.AgentRun` (a mixin: it emits through the run): a turn's
tool calls run concurrently, each asked of the approval gate first, inside the run's ``tool_call`` hooks,
within its time limit; the circuit breaker (``max_tool_rounds``) and the doom-loop warning; tools of MCP
servers that came up while the run went on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from workspace import events as ev
from workspace import hooks
from workspace.agent.effects import EFFECT_TOOLS, file_effects
from workspace.agent.guards import DoomLoopDetector, circuit_breaker_message, with_warning
from workspace.agent.spec import ToolCallback, servers_message
from workspace.agent.turn import INVALID_ARGUMENTS, INVALID_WHY
from workspace.approval import ApprovalDecision, ApprovalRequest, FileEffect
from workspace.errors import ToolLoopError, serialize
from workspace.messages import ToolMessage, ToolResultMessage
from workspace.tools.base import RunHandle, Tool, ToolContext, ToolOutput, next_call_order
from workspace.tools.script import ScriptTool

if TYPE_CHECKING:
    from workspace.agent.spec import RunSpec

__all__ = ["ToolCalls"]


class ToolCalls:
    """The tool-call half of :class:`~workspace.agent.run.AgentRun`."""

    spec: RunSpec
    run_id: str
    _turn_results: dict[str, ToolResultMessage]
    _tool_count: int
    _doom: DoomLoopDetector | None

    def emit(self, built: ev.Event) -> ev.Event:  # pragma: no cover - AgentRun's
        raise NotImplementedError

    def unheard(self) -> bool:  # pragma: no cover - AgentRun's
        raise NotImplementedError

    async def _join_pending_tools(self) -> None:
        """Offer the tools of MCP servers that came up since the run began (and say which failed)."""
        pending = self.spec.pending_tools
        if pending is None:
            return
        tools, joined, failed = await pending.poll()
        if not pending.starting:
            self.spec.pending_tools = None
        added = [t for t in tools if t.name not in self.spec.tools]
        for tool in added:
            self.spec.tools.add(tool)
        if joined or failed:
            self.emit(ev.McpServers(joined=list(joined), failed=dict(failed), starting=list(pending.starting),
                      message=servers_message(joined=joined, failed=failed, tools=[t.name for t in added])))

    async def _run_tools(self, calls: Sequence[ToolMessage], *, from_text: bool = False) -> list[ToolResultMessage]:
        for call in calls:
            if self.unheard():  # nobody reads it: its number taken, the event not built
                continue
            tool = self.spec.tools.get(call.name)
            self.emit(ev.ToolUse(id=call.id or "", name=call.name, input=call.input,
                      server=tool.mcp if tool else None, from_text=from_text))
        limit = self.spec.max_tool_rounds
        if limit is not None:
            self._tool_count += len(calls)
            if self._tool_count > limit:  # the circuit breaker: the whole turn is refused
                raise ToolLoopError(circuit_breaker_message(self._tool_count, limit))
        results: list[ToolResultMessage | None] = [None] * len(calls)
        orders = [next_call_order() for _call in calls]  # the message's order, whichever call finishes first

        async def one(i: int, call: ToolMessage) -> None:
            results[i] = result = await self._run_tool(call, order=orders[i])
            self._turn_results[call.id or ""] = result

        if len(calls) == 1:
            await one(0, calls[0])
        else:
            try:
                async with asyncio.TaskGroup() as group:
                    for i, call in enumerate(calls):
                        group.create_task(one(i, call))
            except* Exception as group_error:  # a raise_on_error tool, or a hook, raised: the run fails with it
                raise group_error.exceptions[0] from None
        done = [r for r in results if r is not None]
        if self._doom is not None:
            self._check_doom_loop(done)
        return done

    def _check_doom_loop(self, results: list[ToolResultMessage]) -> None:
        """Track the calls in the order the model made them; on a loop, warn the model in that result."""
        detector = self._doom
        assert detector is not None
        for i, result in enumerate(results):
            detector.track(result.tool.name, result.tool.input)  # a loop: the same call, arguments too
            warning = detector.warning_message() if detector.doom_loop else None
            if warning is None:
                continue
            detector.reset()
            content = result.content
            if isinstance(content, dict) and ("error" in content or "data" in content):
                key = "error" if "error" in content else "data"
                content = {**content, key: with_warning(content[key], warning)}
            else:
                content = with_warning(content, warning)
            results[i] = ToolResultMessage(tool=result.tool, content=content)
            self._turn_results[result.tool.id or ""] = results[i]
            self.emit(ev.RunStatus(state="notice", detail=warning))

    async def _run_tool(self, call: ToolMessage, *, order: int | None = None) -> ToolResultMessage:
        spec = self.spec
        tool = spec.tools.get(call.name)
        call_id = call.id or ""
        started = time.monotonic()
        if tool is None and spec.pending_tools is not None and await spec.pending_tools.wait_for_tool(call.name):
            await self._join_pending_tools()  # a tool of a server that was still starting: it is up now
            tool = spec.tools.get(call.name)
        if tool is None:
            available = ", ".join(spec.tools.names) or "(none)"
            return self._tool_failed(call, f"Unknown tool '{call.name}'. Available tools: {available}",
                                     started, None)
        if INVALID_ARGUMENTS in call.input and set(call.input) <= {INVALID_ARGUMENTS, INVALID_WHY}:
            why = call.input.get(INVALID_WHY)
            problem = f"are {why}" if why else "were not valid JSON"
            fix = " nested less deep" if why else ""
            return self._tool_failed(
                call,
                f"The arguments for '{call.name}' {problem}: {call.input[INVALID_ARGUMENTS]!r}. "
                f"Send the arguments as one JSON object{fix}.",
                started,
                tool,
            )
        arguments: Any = call.input
        #: A command that would run without a sandbox (none here, and the folder allows it): whether the person
        #: approved this very call ("asked"; only then does it run) or not ("not asked"); None: not such a call.
        without_sandbox: str | None = None
        if spec.approval is not None and not (spec.output is not None and spec.output.is_output_tool(call.name)):
            effects: tuple[FileEffect, ...] = ()
            if tool.mcp is None and call.name in EFFECT_TOOLS:  # decided by what it does, not its name
                effects = await asyncio.to_thread(file_effects, call.name, call.input, folder=spec.folder,
                                                  changes=spec.changes)
            elif isinstance(tool, ScriptTool) and isinstance(call.input, dict):  # the command the script runs
                effects = (FileEffect(kind="run", path=".", command=tool.command(call.input, spec.folder)),)
            original = tool.annotations.get("mcpTool") if tool.mcp is not None else None
            request = ApprovalRequest(call_id=call_id, robot=spec.robot, tool=call.name, input=call.input,
                                      server=tool.mcp, annotations=dict(tool.annotations), run_id=self.run_id,
                                      task=spec.task, thread_id=spec.thread_id,
                                      original=original if isinstance(original, str) else None, effects=effects)
            verdict = await spec.approval.adecide(request)
            decision: ApprovalDecision
            if isinstance(verdict, ApprovalDecision):  # a callable policy decided it all
                action = "decided"
                decision = verdict
            elif verdict == "allow":
                action = verdict
                decision = ApprovalDecision(approved=True, scope="policy")
            elif verdict == "deny":
                action = verdict
                decision = ApprovalDecision(approved=False, scope="policy",
                                            reason=f"The approval policy denies '{call.name}'.")
            else:
                action = verdict
                shown = dict(tool.annotations)
                if effects:  # what the call does, as the policy decided it
                    shown["effects"] = [effect.to_dict() for effect in effects]
                self.emit(ev.ApprovalRequested(id=call_id, name=call.name, input=call.input, server=tool.mcp,
                          annotations=shown))
                decision = await spec.approval.ask(request)
            started = time.monotonic()  # the tool's duration leaves out the wait for the person's decision
            if action in ("ask", "decided") or not decision.approved:
                self.emit(ev.ApprovalDecided(id=call_id, name=call.name, decision=decision.decision,
                          input=decision.input if decision.input is not None else call.input,
                          reason=decision.reason, scope=decision.event_scope))
            if not decision.approved:
                reason = decision.reason or "no reason given"
                return self._tool_failed(call, f"Denied by the user: {reason}", started, tool)
            if decision.input is not None:
                arguments = decision.input
            if any(effect.kind == "run" and effect.unsandboxed for effect in effects):
                without_sandbox = "asked" if action == "ask" else "not asked"
        if spec.on_tool_call is not None:
            _safe_callback(spec.on_tool_call, ToolMessage(id=call.id, name=call.name, input=arguments))
        # extras: what an MCP server's requests during the call need (sampling with the thread's
        # model, asking the person through the run's gate; workspace.mcp.requests).
        context = ToolContext(robot=spec.robot, run_id=self.run_id, call_id=call_id, task=spec.task,
                              memory=spec.memory, network=spec.network, folder=spec.folder,
                              changes=spec.changes, emit=self.emit, run=cast(RunHandle, self), order=order,  # the AgentRun
                              extras={"provider": spec.provider, "approval": spec.approval, "tool": call.name,
                                      "settings": spec.settings, "thread_id": spec.thread_id,
                                      "without_sandbox": without_sandbox})
        if spec.hooks:
            output = await self._hooked_invoke(tool, arguments, context)
        else:
            output = await self._invoke(tool, arguments, context)
        duration = time.monotonic() - started
        ran = ToolMessage(id=call.id, name=call.name, input=arguments)
        if output.is_error:
            result = ToolResultMessage(tool=ran, content={"error": output.data})
            if not self.unheard():  # (an event nobody reads is not built: its number is taken)
                self.emit(ev.ToolError(id=call_id, name=call.name, error=output.data, raw=output.raw,
                          duration=duration, server=tool.mcp))
        else:
            result = ToolResultMessage(tool=ran, content={"data": output.data})
            if not self.unheard():
                self.emit(ev.ToolResult(id=call_id, name=call.name, payload={"data": output.data}, raw=output.raw,
                          duration=duration, server=tool.mcp))
        if spec.on_tool_result is not None:
            _safe_callback(spec.on_tool_result, result)
        return result

    async def _invoke(self, tool: Tool, arguments: Any, context: ToolContext) -> ToolOutput:
        if tool.timeout is None and self.spec.tool_timeout:
            return await _with_timeout(tool, arguments, context, self.spec.tool_timeout)
        return await tool.invoke(arguments, context)

    async def _hooked_invoke(self, tool: Tool, arguments: Any, context: ToolContext) -> ToolOutput:
        """The tool call inside the tool_call hooks: ``ctx.tool_result`` is what the model is sent (a hook
        that sets it without calling ``call_next`` skips the tool)."""
        ctx = hooks.ToolCallHookContext(tool=tool, tool_name=tool.name, tool_args=arguments, robot=self.spec.owner)
        ran: list[ToolOutput] = []

        async def core() -> Any:
            output = await self._invoke(tool, arguments, context)
            ran.append(output)
            ctx.tool_result = output.data
            ctx.tool_error = output.data if output.is_error else None
            return output.data

        await hooks.dispatch("tool_call", ctx, self.spec.hooks, core)
        original = ran[0] if ran else None
        if original is not None and ctx.tool_result is original.data and \
                (ctx.tool_error is not None) == original.is_error:
            return original
        return ToolOutput(ctx.tool_result, raw=original.raw if original else None, is_error=ctx.tool_error is not None)

    def _tool_failed(self, call: ToolMessage, error: str, started: float, tool: Tool | None) -> ToolResultMessage:
        self.emit(ev.ToolError(id=call.id or "", name=call.name, error=error,
                  duration=time.monotonic() - started, server=tool.mcp if tool else None))
        result = ToolResultMessage(tool=call, content={"error": error})
        if self.spec.on_tool_result is not None:
            _safe_callback(self.spec.on_tool_result, result)
        return result


async def _with_timeout(tool: Tool, arguments: Any, context: ToolContext, timeout: float) -> ToolOutput:
    try:
        async with asyncio.timeout(timeout):
            return await tool.invoke(arguments, context)
    except TimeoutError:
        return ToolOutput(f"Tool '{tool.name}' timed out after {timeout:g} s", is_error=True)


def _safe_callback(fn: ToolCallback, arg: Any) -> None:
    import logging

    try:
        fn(arg)
    except Exception as exc:  # a callback must never break the loop
        logging.getLogger("workspace.agent").warning("tool callback failed: %s", serialize(exc))
