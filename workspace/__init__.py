"""RobotLab Workspace core: robots, networks, messages, tools, MCP and memory (Qt-free, asyncio).

Names are imported lazily so ``import workspace`` stays fast and never imports litellm.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from workspace.version import __version__

_EXPORTS: dict[str, str] = {
    "Robot": "workspace.robot",
    "RobotResult": "workspace.result",
    "Usage": "workspace.result",
    "Memory": "workspace.memory",
    "MemoryChange": "workspace.memory",
    "Message": "workspace.messages",
    "TextMessage": "workspace.messages",
    "ToolMessage": "workspace.messages",
    "ToolCallMessage": "workspace.messages",
    "ToolResultMessage": "workspace.messages",
    "UserMessage": "workspace.messages",
    "Tool": "workspace.tools",
    "ToolContext": "workspace.tools",
    "ToolManifest": "workspace.tools",
    "ToolOutput": "workspace.tools",
    "tool": "workspace.tools",
    "Template": "workspace.templates",
    "AgentRun": "workspace.agent",
    "Attachment": "workspace.attachments",
    "AttachmentError": "workspace.attachments",
    "Network": "workspace.network",
    "Task": "workspace.network",
    "Person": "workspace.network.person",
    "Convergence": "workspace.network.convergence",
    "load_network": "workspace.network",
    "Runnable": "workspace.runnable",
    "compare": "workspace.session.compare",
    "acompare": "workspace.session.compare",
    "Candidate": "workspace.session.compare",
    "Comparison": "workspace.session.compare",
    "load_config": "workspace.config",
    "ScriptedProvider": "workspace.providers.testing",
    "FunctionProvider": "workspace.providers.testing",
    "ToolCall": "workspace.providers.testing",
    "DemoProvider": "workspace.providers.demo",
    "provider_for": "workspace.providers",
    "ApprovalGate": "workspace.approval",
    "ApprovalPolicy": "workspace.approval",
    "ApprovalRequest": "workspace.approval",
    "ApprovalDecision": "workspace.approval",
    "CallbackGate": "workspace.approval",
    "OutputSchema": "workspace.output",
    "OutputValidationError": "workspace.output",
    "Pipeline": "workspace.pipeline",
    "StepResult": "workspace.pipeline",
    "Error": "workspace.errors",
    "ConfigurationError": "workspace.errors",
    "ToolNotFoundError": "workspace.errors",
    "InferenceError": "workspace.errors",
    "ProviderError": "workspace.errors",
    "ContextOverflowError": "workspace.errors",
    "MCPError": "workspace.errors",
    "ToolError": "workspace.errors",
    "AwaitTimeout": "workspace.errors",
    "RunFailedError": "workspace.errors",
    "RobotMessage": "workspace.bus",
    "MessageBus": "workspace.bus",
    "BusError": "workspace.bus",
    "DelegationFuture": "workspace.delegation",
    "DelegationTimeout": "workspace.delegation",
    "AgentSkill": "workspace.agent_skills",
    "AgentSkillCatalog": "workspace.agent_skills",
    "Ledger": "workspace.ledger",
    "KnowledgeStore": "workspace.knowledge",
    "KnowledgeEntry": "workspace.knowledge",
    "PendingMemoryWrite": "workspace.knowledge",
    "HistoryResult": "workspace.learning",
    "BudgetExceeded": "workspace.ledger",
    # Hooks and the tool loop's guards (RobotLab 0.2)
    "Hook": "workspace.hooks",
    "on": "workspace.hooks",
    "clear_hooks": "workspace.hooks",
    "ToolLoopError": "workspace.errors",
    "DoomLoopDetector": "workspace.agent.guards",
    "AskUser": "workspace.ask_user",
    "ScriptTool": "workspace.tools.script",
    # Narrator, DocumentStore and the cyborg's channels and interviewer (RobotLab 0.2)
    "Narrator": "workspace.narrator",
    "DocumentStore": "workspace.documents",
    "Channel": "workspace.network.channels",
    "ChannelMessage": "workspace.network.channels",
    "ScriptedChannel": "workspace.network.channels",
    "TerminalChannel": "workspace.network.channels",
    "Interviewer": "workspace.network.interviewer",
    "Question": "workspace.network.interviewer",
    # RobotLab 0.2's RunConfig (layered config of robots, networks, tasks and runs)
    "RunConfig": "workspace.run_config",
}

__all__ = [*sorted(_EXPORTS), "__version__", "build", "create_memory"]

if TYPE_CHECKING:
    from workspace.memory import Memory
    from workspace.robot import Robot


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workspace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def build(name: str, **options: Any) -> Robot:
    """RobotLab's ``RobotLab.build``: a :class:`Robot`."""
    from workspace.robot import Robot

    return Robot(name, **options)


def create_memory(data: dict[str, Any] | None = None, **options: Any) -> Memory:
    """RobotLab's ``RobotLab.create_memory``."""
    from workspace.memory import Memory

    return Memory(data=data, **options)
