"""Tool approval: a policy of allow / ask / deny per robot, server and tool.

The agent loop asks an :class:`ApprovalGate` before every tool call. The gate
consults the :class:`ApprovalPolicy`; when the answer is "ask" it calls the
``ask`` callback the front end supplied (the desktop shows an inline card, the
CLI asks in the terminal) and remembers the answer for the scope the user chose:
``once``, ``thread`` (until the thread is closed) or ``always`` (written to the
policy file).

Rules are matched by specificity: a rule naming robot, server and tool beats one
naming only the tool, which beats the wildcard rule; among equally specific rules
the last one wins. A rule about an MCP tool matches whichever name it is written
with: the name robots see (``files__wipe``) or, in a rule that names the server,
the server's own name (``{server: files, tool: wipe}``). A rule's ``command`` (``run_command``'s calls) is a
glob or the command's first words; with ``exact: true`` it is one whole command and nothing else (what an
"always" answer to a command writes: the command approved, not any command it begins). When no rule matches,
defaults come from the tool itself: local tools (your own code and the built-in
file tools, whose writes are proposals reviewed separately) are allowed unless
marked destructive; an MCP tool is asked about, unless its server's entry has
``trustAnnotations: true`` and the server marks it read-only (``readOnlyHint``),
or it is in the server's ``autoApprove`` list. Annotations are the server's
claims, hints as the MCP specification says, so they count only when trusted.

**Policy by effect.** A built-in file tool's call carries its effects
(:class:`FileEffect`: create, modify, delete or rename of which paths), and the
rules for ``write_file`` (creating or changing a file), ``delete_file`` (deleting
one; for a rename's source only an explicit rule, since the content is kept) and
``rename_file`` apply to them whichever tool produces them (``apply_patch``,
``edit_file``, ...). The strictest applicable decision wins (deny, then ask, then
allow). With ``empty_write_is_delete: true`` in the policy file, emptying a file
counts as deleting it.

Programs that embed robots can decide in code instead (:class:`CallbackGate`, made for them by
``Robot(approval=fn)``): ``fn(request)`` returns ``"allow"``, ``"deny"`` or ``"ask"`` (ask the
gate's ``ask`` callback, if any), ``True``/``False``, or an :class:`ApprovalDecision` (with a
reason, or edited arguments); it may be async.
"""

from __future__ import annotations

import fnmatch
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, assert_never, cast

from workspace.errors import ConfigurationError

if TYPE_CHECKING:
    from workspace.events import ApprovalChoice, ApprovalScope

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[str, ...] = ("allow", "ask", "deny")
SCOPES: tuple[str, ...] = ("once", "thread", "always")


EffectKind = Literal["create", "modify", "delete", "rename", "run"]
_STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEffect:
    """What a file tool's call does to one file (paths relative to the opened folder), or, of kind
    ``run``, the shell command a call runs in the sandbox (``command``; ``path`` is the folder's ``.``)."""

    kind: EffectKind
    path: str
    #: A rename's target.
    new_path: str | None = None
    #: A modification that leaves a file with content empty.
    emptied: bool = False
    #: The command a ``run`` effect runs.
    command: str | None = None
    #: A ``run`` effect with no sandbox (none can be made here and the person let this folder's commands run
    #: without one): always asked, every time, whatever the rules and grants say.
    unsandboxed: bool = False

    def describe(self) -> str:
        match self.kind:
            case "create":
                return f"creating '{self.path}'"
            case "modify":
                return f"emptying '{self.path}'" if self.emptied else f"changing '{self.path}'"
            case "delete":
                return f"deleting '{self.path}'"
            case "rename":
                return f"renaming '{self.path}' to '{self.new_path}'"
            case "run" if self.unsandboxed:
                return (f"running the command `{self.command}` WITHOUT a sandbox, directly in the folder: it can "
                        "change or delete the folder's files and reach the network")
            case "run":
                return (f"running the command `{self.command}` in the sandbox (it sees the folder with the pending "
                        "changes; what it writes is proposed for review, not written)")
            case _:
                assert_never(self.kind)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "path": self.path}
        if self.new_path is not None:
            out["new_path"] = self.new_path
        if self.emptied:
            out["emptied"] = True
        if self.command is not None:
            out["command"] = self.command
        if self.unsandboxed:
            out["unsandboxed"] = True
        return out


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
    #: The MCP server's own name of the tool (``wipe`` for ``files__wipe``); None for local tools.
    original: str | None = None
    #: What a built-in file tool's call does (:func:`workspace.agent.effects.file_effects`).
    effects: tuple[FileEffect, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    approved: bool
    #: The arguments to run with when the user edited them (None: as asked).
    input: Any = None
    reason: str | None = None
    scope: str = "once"

    @property
    def decision(self) -> ApprovalChoice:
        return "approve" if self.approved else "deny"

    @property
    def event_scope(self) -> ApprovalScope:
        """``scope`` as the :class:`~workspace.events.ApprovalDecided` event records it (the window's
        widgets set ``scope`` from their combo boxes' data, typed ``str``)."""
        return cast("ApprovalScope", self.scope)


def unsandboxed(request: ApprovalRequest) -> bool:
    """True when the call would run a command without a sandbox (asked every time)."""
    return any(effect.kind == "run" and effect.unsandboxed for effect in request.effects)


#: What makes a shell command more than one command: a separator, a pipe, a substitution.
_COMPOUND = re.compile(r"[;&|`\n]|\$\(")
_SEPARATORS = re.compile(r"\|\||&&|[;&|\n`(]|\$\(")


def command_of(request: ApprovalRequest) -> str | None:
    """The shell command a call runs (``run_command``'s ``command``), None for other calls."""
    if request.server is not None or not isinstance(request.input, Mapping):
        return None
    command = request.input.get("command")
    return command.strip() if isinstance(command, str) and request.tool == "run_command" else None


def command_matches(pattern: str, command: str, action: str, *, exact: bool = False) -> bool:
    """Whether a rule's ``command`` pattern covers ``command``. ``exact``: the pattern is the whole command, as written
    (its ends' spaces aside), and nothing else. Otherwise a pattern with ``*``, ``?`` or
    ``[`` is a glob over the whole command; one without is a prefix of whole words (``pytest`` covers
    ``pytest -q``, not ``pytester``). An *allow* covers a single command only: one with ``;``, ``&&``, ``|``, a newline or a
    substitution is asked about (``pytest*`` must not allow ``pytest; curl …``). A *deny* or *ask* covers a
    command any part of which it covers (``rm *`` denies ``make && rm -rf build`` and ``echo $(rm x)``). A
    deny is a best effort over the shell's text (``sh -c "rm x"`` is ``sh`` to it): the sandbox is what keeps
    the folder safe."""
    if exact:
        return command.strip() == pattern.strip()
    def one(text: str) -> bool:
        text = text.strip().lstrip("({ ").strip()
        if any(c in pattern for c in "*?["):
            return fnmatch.fnmatchcase(text, pattern)
        return text == pattern or text.startswith(pattern + " ")

    if action == "allow":
        return one(command) and not _COMPOUND.search(command)
    return one(command) or any(one(part) for part in _SEPARATORS.split(command) if part.strip())


@dataclass(frozen=True, slots=True)
class Rule:
    action: str
    robot: str = "*"
    server: str = "*"
    tool: str = "*"
    #: For ``run_command``: a glob or word prefix of the command (:func:`command_matches`); None: any call.
    command: str | None = None
    #: ``command`` is one whole command, nothing else (the rule an "always" answer to a command writes).
    exact: bool = False

    def matches(self, request: ApprovalRequest) -> bool:
        server = request.server or "local"
        if not (fnmatch.fnmatchcase(request.robot, self.robot) and fnmatch.fnmatchcase(server, self.server)):
            return False
        if not any(fnmatch.fnmatchcase(name, self.tool) for name in self.tool_names(request)):
            return False
        if self.command is None:
            return True
        command = command_of(request)
        return command is not None and command_matches(self.command, command, self.action, exact=self.exact)

    def tool_names(self, request: ApprovalRequest) -> tuple[str, ...]:
        """The names the rule's ``tool`` may be written with for ``request``'s tool: the name robots see,
        ``<server>__<tool>`` from the server's own name, and the server's own name when the rule names
        the server (a bare ``wipe`` in a rule for every server would be any server's ``wipe``)."""
        if request.server is None or request.original is None:
            return (request.tool,)
        names = [request.tool, f"{_sanitize(request.server)}__{_sanitize(request.original)}"]
        if self.server != "*":
            names.append(request.original)
        return tuple(names)

    @property
    def specificity(self) -> int:
        named = sum(1 for part in (self.robot, self.server, self.tool) if part != "*")
        return named + (self.command is not None) + self.exact

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        for key in ("robot", "server", "tool"):
            value = getattr(self, key)
            if value != "*":
                out[key] = value
        if self.command is not None:
            out["command"] = self.command
            if self.exact:
                out["exact"] = True
        return out


def _sanitize(part: str) -> str:
    """:func:`workspace.mcp.naming.sanitize` (a layer above this one)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", part) or "_"


class ApprovalPolicy:
    """Ordered rules, loadable from and savable to YAML (``approval: {rules: [...]}``)."""

    def __init__(self, rules: list[Rule] | None = None, *, path: Path | None = None,
                 empty_write_is_delete: bool = False) -> None:
        self.rules: list[Rule] = list(rules or [])
        self.path = path
        #: Emptying a file (a write of empty content, an edit or patch removing all of it) is deleting it.
        self.empty_write_is_delete = empty_write_is_delete

    @classmethod
    def from_list(cls, items: Any, *, source: str = "approval policy", path: Path | None = None,
                  empty_write_is_delete: bool = False) -> ApprovalPolicy:
        if items is None:
            return cls(path=path, empty_write_is_delete=empty_write_is_delete)
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
            unknown = set(item) - {"action", "robot", "server", "tool", "command", "exact"}
            if unknown:
                raise ConfigurationError(
                    f"{source}: rules[{i}] has unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                    "allowed keys: action, robot, server, tool, command, exact"
                )
            command = item.get("command")
            if command is not None and (not isinstance(command, str) or not command.strip()):
                raise ConfigurationError(
                    f"{source}: rules[{i}].command must be a command's start or a pattern, like "
                    f"{{tool: run_command, command: \"pytest*\", action: allow}}, not {command!r}"
                )
            exact = item.get("exact", False)
            if not isinstance(exact, bool) or (exact and command is None):
                raise ConfigurationError(
                    f"{source}: rules[{i}].exact must be true or false, with a command (true: that whole command "
                    f"and no other), like {{tool: run_command, command: \"git status\", exact: true, action: allow}}; "
                    f"not {exact!r}{'' if command is not None else ' without a command'}"
                )
            rules.append(Rule(action, str(item.get("robot", "*")), str(item.get("server", "*")),
                              str(item.get("tool", "*")), command.strip() if command is not None else None, exact))
        return cls(rules, path=path, empty_write_is_delete=empty_write_is_delete)

    @classmethod
    def load(cls, path: Path) -> ApprovalPolicy:
        import yaml

        from workspace import yaml_limits
        from workspace.readlimits import CONFIG_FILE_BYTES, read_text_bounded

        if not path.exists():
            return cls(path=path)
        try:
            data = yaml_limits.safe_load(read_text_bounded(path, CONFIG_FILE_BYTES, "approval rules file")) or {}
        except yaml.YAMLError as exc:
            raise ConfigurationError(f"{path}: not valid YAML ({exc}). Fix or delete the file.") from exc
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{path}: expected a mapping with a 'rules' list")
        unknown = set(data) - {"rules", "empty_write_is_delete"}
        if unknown:
            raise ConfigurationError(f"{path}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                                     "allowed keys: rules, empty_write_is_delete")
        emptying = data.get("empty_write_is_delete", False)
        if not isinstance(emptying, bool):
            raise ConfigurationError(f"{path}: empty_write_is_delete must be true or false, not {emptying!r}")
        return cls.from_list(data.get("rules"), source=str(path), path=path, empty_write_is_delete=emptying)

    def save(self, path: Path | None = None) -> None:
        import yaml

        target = path or self.path
        if target is None:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        text = "# RobotLab Workspace approval policy: allow / ask / deny per robot, server, tool.\n"
        data: dict[str, Any] = {"rules": [r.to_dict() for r in self.rules]}
        if self.empty_write_is_delete:
            data["empty_write_is_delete"] = True
        text += yaml.safe_dump(data, sort_keys=False)
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)

    def set_rule(self, action: str, *, robot: str = "*", server: str = "*", tool: str = "*",
                 command: str | None = None, exact: bool = False) -> None:
        """Add (or replace the same-target) rule, most recent last so it wins ties."""
        if action not in ACTIONS:
            raise ValueError(f"Invalid action: {action}. Must be one of: {', '.join(ACTIONS)}")
        exact = exact and command is not None
        target = (robot, server, tool, command, exact)
        self.rules = [r for r in self.rules if (r.robot, r.server, r.tool, r.command, r.exact) != target]
        self.rules.append(Rule(action, robot, server, tool, command, exact))

    def rule_for(self, request: ApprovalRequest) -> Rule | None:
        best: Rule | None = None
        for rule in self.rules:
            if rule.matches(request) and (best is None or rule.specificity >= best.specificity):
                best = rule
        return best

    def decide_one(self, request: ApprovalRequest) -> Action:
        """The decision for the request's tool alone (its rule, else its default), effects aside."""
        rule = self.rule_for(request)
        if rule is not None:
            return rule.action  # type: ignore[return-value]
        return default_action(request)

    def checks(self, request: ApprovalRequest) -> list[tuple[ApprovalRequest, FileEffect | None]]:
        """What is decided for ``request``: the call itself, then for each of its effects the request of
        the tool whose rules govern that effect (``write_file``, ``delete_file``, ``rename_file``)."""
        out: list[tuple[ApprovalRequest, FileEffect | None]] = [(request, None)]
        for effect in request.effects:
            for tool, hints in self._effect_tools(effect):
                if tool == request.tool and (not hints or effect.kind == "run"):
                    continue  # the call itself, already there
                sub = replace(request, tool=tool, annotations=hints, original=None, effects=())
                if effect.command is not None:  # run_command's rules see the command, whichever tool runs it
                    sub = replace(sub, input={"command": effect.command})
                out.append((sub, effect))
        return out

    def _effect_tools(self, effect: FileEffect) -> list[tuple[str, dict[str, Any]]]:
        destructive = {"destructiveHint": True}
        match effect.kind:
            case "create":
                return [("write_file", {})]
            case "modify":
                if effect.emptied and self.empty_write_is_delete:
                    return [("write_file", {}), ("delete_file", destructive)]
                return [("write_file", {})]
            case "delete":
                return [("delete_file", destructive)]
            case "rename":
                # The source's name stops existing (delete_file's rules; not its destructive default, as the
                # content is kept), and the target is written.
                return [("rename_file", {}), ("delete_file", {}), ("write_file", {})]
            case "run":
                # Whichever tool runs a command, run_command's rules (and their command patterns) decide it.
                return [("run_command", {"destructiveHint": True})]
            case _:
                assert_never(effect.kind)

    def deciding(self, request: ApprovalRequest, *,
                 granted: Callable[[ApprovalRequest], bool] | None = None,
                 ) -> tuple[Action, ApprovalRequest, FileEffect | None]:
        """The strictest decision over :meth:`checks` (``granted``: allowed for this thread), with the
        check that gave it (the first of the strictest)."""
        best: tuple[Action, ApprovalRequest, FileEffect | None] | None = None
        for sub, effect in self.checks(request):
            action: Action = "allow" if granted is not None and granted(sub) else self.decide_one(sub)
            if best is None or _STRICTNESS[action] > _STRICTNESS[best[0]]:
                best = (action, sub, effect)
        assert best is not None
        return best

    def decide(self, request: ApprovalRequest) -> Action:
        return self.deciding(request)[0]


def default_action(request: ApprovalRequest) -> Action:
    """Defaults when no rule matches: local tools are allowed unless marked destructive; an MCP tool is
    asked about unless it is in its server's ``autoApprove`` list, or its server's annotations are trusted
    (``trustAnnotations``: true in its entry) and mark it read-only. A server's annotations are its own
    claims (hints, in the MCP specification's words), so an untrusted server's ``readOnlyHint`` is not
    believed."""
    hints = request.annotations
    if hints.get("autoApprove"):  # the server's autoApprove / alwaysAllow list names this tool
        return "allow"
    if request.server:
        if hints.get("trustAnnotations") and hints.get("readOnlyHint") and not hints.get("destructiveHint"):
            return "allow"
        return "ask"
    if hints.get("readOnlyHint"):
        return "allow"
    if hints.get("destructiveHint"):
        return "ask"
    return "allow"


AskFn = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


class ApprovalGate:
    """Policy plus the front end's way of asking, plus grants remembered per thread."""

    def __init__(self, policy: ApprovalPolicy | None = None, ask: AskFn | None = None) -> None:
        self.policy = policy or ApprovalPolicy()
        self.ask_fn = ask
        #: Who answers a robot's question (the AskUser tool, a person's task in a network) when the front end
        #: shows it (the window): a function of an :class:`ApprovalRequest` of the tool ``ask_user`` (its input:
        #: ``question``, ``choices``, ``default``, ``timeout``) whose approved decision's input is
        #: ``{"answer": text}``; a decision not approved means nobody answered. None: the terminal, or nobody.
        self.question_fn: AskFn | None = None
        #: "for this thread" grants: (thread id, robot, server, tool, command); a run outside a thread has id "",
        #: a call that runs no command the command "" (a grant for ``run_command`` is for that command only).
        self._thread_grants: set[tuple[str, str, str, str, str]] = set()

    @staticmethod
    def _key(request: ApprovalRequest) -> tuple[str, str, str]:
        return (request.robot, request.server or "local", request.tool)

    @classmethod
    def _thread_key(cls, request: ApprovalRequest) -> tuple[str, str, str, str, str]:
        return (request.thread_id or "", *cls._key(request), command_of(request) or "")

    def _granted(self, request: ApprovalRequest) -> bool:
        return self._thread_key(request) in self._thread_grants

    def decide(self, request: ApprovalRequest) -> Action:
        """The strictest of the call's own decision and its effects' (a grant for this thread allows
        what it names: the tool, or the tool whose rules govern an effect). A command run without a sandbox
        is asked about every time: no rule or grant allows it."""
        action = self.policy.deciding(request, granted=self._granted)[0]
        return "ask" if action == "allow" and unsandboxed(request) else action

    async def adecide(self, request: ApprovalRequest) -> Action | ApprovalDecision:
        """What the agent loop asks before a tool call: allow, deny or ask, or a whole decision
        (a :class:`CallbackGate`'s function may give one). This gate: :meth:`decide`; a denial because
        of what the call does (an effect) is a decision that says so."""
        action = self.decide(request)
        if action != "deny" or not request.effects:
            return action
        strictest, sub, effect = self.policy.deciding(request, granted=self._granted)
        command = command_of(sub)
        if strictest == "deny" and command is not None:
            return ApprovalDecision(
                approved=False, scope="policy",
                reason=(f"The approval policy denies running `{command}` (a rule for run_command). Tell the user "
                        "what you wanted to run and why, or do without it."),
            )
        if strictest == "deny" and effect is not None:
            return ApprovalDecision(
                approved=False, scope="policy",
                reason=(f"The approval policy denies {effect.describe()}, which '{request.tool}' would do "
                        f"(the rules for {sub.tool} apply to it whichever tool does it). Tell the user what "
                        "you wanted to change instead."),
            )
        return action

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

    def answers_questions(self) -> AskFn | None:
        """The front end's :attr:`question_fn` (None: it shows no questions)."""
        return self.question_fn

    def remember(self, request: ApprovalRequest, decision: ApprovalDecision) -> None:
        if not decision.approved and decision.scope == "once":
            return
        if decision.approved and unsandboxed(request):
            return  # asked every time: never an "always" rule nor a grant for the thread
        if decision.approved and decision.input is not None:
            request = replace(request, input=decision.input)  # edited: what is remembered is what was approved
        if request.tool == "run_command" and request.server is None and not command_of(request):
            return  # no command to name (edited away, or never there): a rule without one would allow every command
        robot, server, tool = self._key(request)
        if decision.scope == "thread" and decision.approved:
            self._thread_grants.add(self._thread_key(request))
        elif decision.scope == "always":
            # For run_command: allowed, exactly that command, as a grant for the thread is (not every command it
            # begins: "git log" is not "git log --output=README.md"); refused, every command it begins too (a deny
            # reaching further is the safe side), unless a glob's characters would make it a pattern (then the
            # rule is not written, and the answer holds once).
            command = command_of(request)
            exact = decision.approved and command is not None
            if command is not None and not exact and any(c in command for c in "*?["):
                return
            self.policy.set_rule("allow" if decision.approved else "deny", robot=robot, server=server, tool=tool,
                                 command=command, exact=exact)
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


# -- rules that match nothing ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownTools:
    """The tools a policy's rules may be about, for :func:`rule_problems`.

    ``servers``: each configured MCP server's tools as ``(the name robots see, the server's own name)``
    pairs, or None when its tools are not known (the server is not running). ``local``: the names of the
    tools that run in the process (the built-in tools, your own)."""

    servers: Mapping[str, Sequence[tuple[str, str]] | None]
    local: Sequence[str] = ()


def _rule_text(rule: Rule) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in [*((k, v) for k, v in rule.to_dict().items() if k != "action"),
                                                      ("action", rule.action)]) + "}"


def rule_problems(policy: ApprovalPolicy, known: KnownTools) -> list[str]:
    """What is wrong with the policy's rules, one sentence each: a rule that matches no tool of any
    configured server nor any local tool ("rule 3 … matches no tool: did you mean …?"), one naming a server
    that is not configured, and one that could not be checked because the servers it may be about are not
    running (said as such, never as "matches no tool")."""
    import difflib

    catalogue: list[tuple[str, Sequence[tuple[str, str]] | None]] = [
        ("local", [(name, name) for name in known.local]), *known.servers.items()]
    problems: list[str] = []
    for number, rule in enumerate(policy.rules, start=1):
        label = f"rule {number} {_rule_text(rule)}"
        if rule.command is not None and not fnmatch.fnmatchcase("run_command", rule.tool):
            problems.append(f"{label} has a command, which only run_command's calls have, so it matches nothing: "
                            f"write it as {{tool: run_command, command: {rule.command}, action: {rule.action}}}")
            continue
        if rule.tool == "*":
            continue
        servers = [(name, tools) for name, tools in catalogue if fnmatch.fnmatchcase(name, rule.server)]
        if not servers:
            names = [name for name, _ in catalogue]
            close = difflib.get_close_matches(rule.server, names, n=2, cutoff=0.6)
            hint = f": did you mean {' or '.join(repr(c) for c in close)}?" if close else \
                f"; the servers are: {', '.join(names)}"
            problems.append(f"{label} names the server '{rule.server}', which is not configured{hint}")
            continue
        matched = False
        unchecked: list[str] = []
        for server, tools in servers:
            if tools is None:
                unchecked.append(server)
                continue
            for robot_name, original in tools:
                request = ApprovalRequest(call_id="", robot=rule.robot, tool=robot_name, input=None,
                                          server=None if server == "local" else server,
                                          original=None if server == "local" else original)
                if any(fnmatch.fnmatchcase(name, rule.tool) for name in rule.tool_names(request)):
                    matched = True
                    break
            if matched:
                break
        if matched:
            continue
        if unchecked:
            which = ", ".join(f"'{s}'" for s in unchecked)
            problems.append(f"{label} could not be checked for the server{'s' if len(unchecked) > 1 else ''} "
                            f"{which}: not running, so its tools are not known (start it to check)")
            continue
        problems.append(f"{label} matches no tool{_did_you_mean(rule.tool, servers)}")
    return problems


def _did_you_mean(tool: str, servers: Sequence[tuple[str, Sequence[tuple[str, str]] | None]]) -> str:
    import difflib

    spelled: dict[str, str] = {}  # a name as the rule could write it -> how to write the rule
    for server, tools in servers:
        for robot_name, original in tools or ():
            spelled.setdefault(robot_name, f"tool: {robot_name}")
            if server != "local":
                spelled.setdefault(original, f"server: {server}, tool: {original}")
    close = difflib.get_close_matches(tool, list(spelled), n=3, cutoff=0.8)
    if not close:
        return "; check the tool's name (robotlab mcp list shows each server's tools)"
    return ": did you mean " + " or ".join("{" + spelled[c] + "}" for c in close) + "?"
