"""Tool approval: a policy of allow / ask / deny per robot, server and tool.

The agent loop asks an :class:`ApprovalGate` before every tool call. The gate
consults the :class:`ApprovalPolicy`; when the answer is "ask" it calls the
``ask`` callback the front end supplied (the desktop shows an inline card, the
CLI asks in the terminal) and remembers the answer for the scope the user chose:
``once``, ``thread`` (until the thread is closed) or ``always`` (written to the
policy file).

Rules are matched by specificity: a rule naming robot, server and tool beats one
naming only the tool, which beats the wildcard rule; among equally specific rules
the last one wins. When no rule matches, defaults come from the tool itself:
read-only tools are allowed, MCP tools without a read-only hint and tools marked
destructive are asked about, and local tools (your own code and the built-in file
tools, whose writes are proposals reviewed separately) are allowed.

Programs that embed robots can decide in code instead (:class:`CallbackGate`, made for them by
``Robot(approval=fn)``): ``fn(request)`` returns ``"allow"``, ``"deny"`` or ``"ask"`` (ask the
gate's ``ask`` callback, if any), ``True``/``False``, or an :class:`ApprovalDecision` (with a
reason, or edited arguments); it may be async.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from workspace.errors import ConfigurationError

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[str, ...] = ("allow", "ask", "deny")
SCOPES: tuple[str, ...] = ("once", "thread", "always")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    call_id: str
    robot: str
    tool: str
    input: Any
    server: str | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    run_id: str = ""
    task: str | None = None
    thread_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    approved: bool
    #: The arguments to run with when the user edited them (None: as asked).
    input: Any = None
    reason: str | None = None
    scope: str = "once"

    @property
    def decision(self) -> str:
        return "approve" if self.approved else "deny"


@dataclass(frozen=True, slots=True)
class Rule:
    action: str
    robot: str = "*"
    server: str = "*"
    tool: str = "*"

    def matches(self, request: ApprovalRequest) -> bool:
        server = request.server or "local"
        return (
            fnmatch.fnmatchcase(request.robot, self.robot)
            and fnmatch.fnmatchcase(server, self.server)
            and fnmatch.fnmatchcase(request.tool, self.tool)
        )

    @property
    def specificity(self) -> int:
        return sum(1 for part in (self.robot, self.server, self.tool) if part != "*")

    def to_dict(self) -> dict[str, str]:
        out = {"action": self.action}
        for key in ("robot", "server", "tool"):
            value = getattr(self, key)
            if value != "*":
                out[key] = value
        return out


class ApprovalPolicy:
    """Ordered rules, loadable from and savable to YAML (``approval: {rules: [...]}``)."""

    def __init__(self, rules: list[Rule] | None = None, *, path: Path | None = None) -> None:
        self.rules: list[Rule] = list(rules or [])
        self.path = path

    @classmethod
    def from_list(cls, items: Any, *, source: str = "approval policy", path: Path | None = None) -> ApprovalPolicy:
        if items is None:
            return cls(path=path)
        if not isinstance(items, list):
            raise ConfigurationError(f"{source}: 'rules' must be a list of rules, got {type(items).__name__}")
        rules = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ConfigurationError(f"{source}: rules[{i}] must be a mapping like "
                                         "{tool: write_file, action: ask}")
            action = str(item.get("action", ""))
            if action not in ACTIONS:
                raise ConfigurationError(
                    f"{source}: rules[{i}].action is {action!r}; must be one of: {', '.join(ACTIONS)}"
                )
            unknown = set(item) - {"action", "robot", "server", "tool"}
            if unknown:
                raise ConfigurationError(
                    f"{source}: rules[{i}] has unknown key(s) {', '.join(sorted(unknown))}; "
                    "allowed keys: action, robot, server, tool"
                )
            rules.append(Rule(action, str(item.get("robot", "*")), str(item.get("server", "*")),
                              str(item.get("tool", "*"))))
        return cls(rules, path=path)

    @classmethod
    def load(cls, path: Path) -> ApprovalPolicy:
        import yaml

        from workspace import yaml_limits

        if not path.exists():
            return cls(path=path)
        try:
            data = yaml_limits.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigurationError(f"{path}: not valid YAML ({exc}). Fix or delete the file.") from exc
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{path}: expected a mapping with a 'rules' list")
        return cls.from_list(data.get("rules"), source=str(path), path=path)

    def save(self, path: Path | None = None) -> None:
        import yaml

        target = path or self.path
        if target is None:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        text = "# RobotLab Workspace approval policy: allow / ask / deny per robot, server, tool.\n"
        text += yaml.safe_dump({"rules": [r.to_dict() for r in self.rules]}, sort_keys=False)
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)

    def set_rule(self, action: str, *, robot: str = "*", server: str = "*", tool: str = "*") -> None:
        """Add (or replace the same-target) rule, most recent last so it wins ties."""
        if action not in ACTIONS:
            raise ValueError(f"Invalid action: {action}. Must be one of: {', '.join(ACTIONS)}")
        self.rules = [r for r in self.rules if (r.robot, r.server, r.tool) != (robot, server, tool)]
        self.rules.append(Rule(action, robot, server, tool))

    def rule_for(self, request: ApprovalRequest) -> Rule | None:
        best: Rule | None = None
        for rule in self.rules:
            if rule.matches(request) and (best is None or rule.specificity >= best.specificity):
                best = rule
        return best

    def decide(self, request: ApprovalRequest) -> Action:
        rule = self.rule_for(request)
        if rule is not None:
            return rule.action  # type: ignore[return-value]
        return default_action(request)


def default_action(request: ApprovalRequest) -> Action:
    """Defaults from MCP annotations: read-only allowed, destructive asked."""
    hints = request.annotations
    if hints.get("autoApprove"):  # the server's autoApprove / alwaysAllow list names this tool
        return "allow"
    if hints.get("readOnlyHint"):
        return "allow"
    if hints.get("destructiveHint"):
        return "ask"
    if request.server:
        return "ask"
    return "allow"


AskFn = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


class ApprovalGate:
    """Policy plus the front end's way of asking, plus grants remembered per thread."""

    def __init__(self, policy: ApprovalPolicy | None = None, ask: AskFn | None = None) -> None:
        self.policy = policy or ApprovalPolicy()
        self.ask_fn = ask
        #: "for this thread" grants: (thread id, robot, server, tool); a run outside a thread has id "".
        self._thread_grants: set[tuple[str, str, str, str]] = set()

    @staticmethod
    def _key(request: ApprovalRequest) -> tuple[str, str, str]:
        return (request.robot, request.server or "local", request.tool)

    @classmethod
    def _thread_key(cls, request: ApprovalRequest) -> tuple[str, str, str, str]:
        return (request.thread_id or "", *cls._key(request))

    def decide(self, request: ApprovalRequest) -> Action:
        if self._thread_key(request) in self._thread_grants:
            return "allow"
        return self.policy.decide(request)

    async def adecide(self, request: ApprovalRequest) -> Action | ApprovalDecision:
        """What the agent loop asks before a tool call: allow, deny or ask, or a whole decision
        (a :class:`CallbackGate`'s function may give one). This gate: :meth:`decide`."""
        return self.decide(request)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.ask_fn is None:
            return ApprovalDecision(
                approved=False,
                reason=(
                    f"The tool '{request.tool}' needs approval and nobody is there to approve it. "
                    "Allow it in the approval policy, or run interactively."
                ),
            )
        decision = await self.ask_fn(request)
        self.remember(request, decision)
        return decision

    def remember(self, request: ApprovalRequest, decision: ApprovalDecision) -> None:
        if not decision.approved and decision.scope == "once":
            return
        robot, server, tool = self._key(request)
        if decision.scope == "thread" and decision.approved:
            self._thread_grants.add(self._thread_key(request))
        elif decision.scope == "always":
            self.policy.set_rule("allow" if decision.approved else "deny", robot=robot, server=server, tool=tool)
            self.policy.save()


#: What a callable approval policy returns (or an awaitable of it).
PolicyAnswer = Action | bool | ApprovalDecision
PolicyFn = Callable[[ApprovalRequest], PolicyAnswer | Awaitable[PolicyAnswer]]


class CallbackGate(ApprovalGate):
    """An approval policy written as a function, for programs that embed robots.

    ``fn(request)`` (sync or async) returns ``"allow"``, ``"deny"``, ``"ask"``, ``True``/``False`` or
    an :class:`ApprovalDecision`. ``"ask"`` goes to ``ask`` (a front end's question, as for
    :class:`ApprovalGate`); without one the call is denied, saying nobody could be asked.
    """

    def __init__(self, fn: PolicyFn, ask: AskFn | None = None, *, policy: ApprovalPolicy | None = None) -> None:
        if not callable(fn):
            raise ConfigurationError(f"approval must be an ApprovalGate or a function of the request, not {fn!r}")
        super().__init__(policy, ask)
        self.fn = fn

    def decide(self, request: ApprovalRequest) -> Action:
        """The synchronous answer (an async function's is not known here: "ask")."""
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            close = getattr(answer, "close", None)
            if callable(close):
                close()  # never awaited here
            return "ask"
        return _as_action(answer) if not isinstance(answer, ApprovalDecision) else (
            "allow" if answer.approved else "deny")

    async def adecide(self, request: ApprovalRequest) -> Action | ApprovalDecision:
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, ApprovalDecision):
            return ApprovalDecision(approved=answer.approved, input=answer.input,
                                    reason=answer.reason or (None if answer.approved else "denied by the policy"),
                                    scope="policy")
        return _as_action(answer)


def _as_action(answer: object) -> Action:
    if answer is True:
        return "allow"
    if answer is False:
        return "deny"
    if answer in ACTIONS:
        return answer  # type: ignore[return-value]
    raise ConfigurationError(f"an approval function must return 'allow', 'deny', 'ask', True, False or an "
                             f"ApprovalDecision, not {answer!r}")


def as_gate(approval: ApprovalGate | PolicyFn | None) -> ApprovalGate | None:
    """``Robot(approval=...)``: a gate as it is, a function as a :class:`CallbackGate`."""
    if approval is None or isinstance(approval, ApprovalGate):
        return approval
    return CallbackGate(approval)
