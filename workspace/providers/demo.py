"""The offline demo: a rule-based provider that is honestly not a language model.

With no API key and no local model server, the workspace still works end to end:
this provider reads the user's message, calls the real tools the robot has (list
and read files of the opened folder, search them, propose an edit, call an MCP
tool), and then explains what happened. Everything it does goes through the same
agent loop, approvals, change review and persistence as a real model would.

It is labelled "Offline demo (no language model)" everywhere it appears.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.providers.base import Chunk, ProviderBase, ToolSpec
from workspace.providers.testing import Part, ToolCall, stream_parts


def _said(content: Any) -> str:
    """What the user typed: the text, or (a message with attachments) its first text part."""
    if isinstance(content, list):
        first = next((p for p in content if isinstance(p, Mapping) and p.get("type") == "text"), None)
        return str(first.get("text") or "") if first is not None else ""
    return str(content or "")

if TYPE_CHECKING:
    from workspace.messages import Message

DEMO_LABEL = "Offline demo (no language model)"
DEMO_MODEL_ID = "offline-demo"

CONNECT_HINT = (
    "To talk to a real model, open Settings (Ctrl+,) and pick a model: set an API key such as "
    "OPENAI_API_KEY or ANTHROPIC_API_KEY, or point it at a local server such as Ollama "
    "(model `ollama_chat/llama3.1`, API base `http://localhost:11434`). "
    "On the command line: `robotlab run assistant \"...\" --model ollama_chat/llama3.1 --api-base http://localhost:11434`."
)

_FILE = r"[\w./\\-]+\.[A-Za-z0-9]+|[\w-]+/[\w./-]+"
_QUOTED = r"\"([^\"]+)\"|'([^']+)'|`([^`]+)`"


def _quoted(text: str) -> list[str]:
    return [a or b or c for a, b, c in re.findall(_QUOTED, text)]


def _has(tools: Mapping[str, ToolSpec], name: str) -> bool:
    return name in tools


def warm_up() -> None:
    """Compile the patterns the demo reads messages with (Python keeps them): the first reply would spend
    about 4 ms on them. Meant for the warm-up's worker thread."""
    demo = DemoProvider(delay=0)
    for text in ("list the files", "read README.md", "search for TODO in notes.md", "remember that color is teal",
                 "what is the color", "replace a with b in notes.md", "create notes.md with hi", "hello"):
        demo._plan(text, {})


class DemoProvider(ProviderBase):
    """Reads the message, calls real tools, explains the results. Not a language model."""

    label = DEMO_LABEL
    model_id = DEMO_MODEL_ID
    supports_tools = True
    supports_streaming = True
    is_language_model = False
    supports_response_schema = False

    def __init__(self, *, delay: float = 0.015) -> None:
        self.delay = delay

    async def stream(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> AsyncIterator[Chunk]:
        parts = self.reply(system, list(messages), {t.name: t for t in tools})
        async for chunk in stream_parts(parts, messages=messages, model=self.model_id, delay=self.delay):
            yield chunk

    # -- the rules ----------------------------------------------------------------------------
    def reply(self, system: str | None, messages: list[Message], tools: dict[str, ToolSpec]) -> list[Part]:
        last = messages[-1] if messages else None
        if last is not None and last.is_tool_result:
            edit = _edit_after_reading(messages, tools)
            if edit:
                return edit
            return [self._explain(messages)]
        text = _typed(_said(last.content)) if last is not None else ""  # not the review outcome in front of it
        category = _classify(system, text)
        if category is not None:
            return [category]
        routed = _specialist(system, text, tools)
        if routed is not None:
            return [routed]
        shared = _memory_plan(system, text, tools)
        if shared:
            return shared
        calls = self._plan(text, tools)
        if calls:
            intro = "I'll use " + ", ".join(f"`{c.name}`" for c in calls) + " for that.\n"
            return [intro, *calls]
        return [self._help(text, tools, first=_first_turn(messages))]

    def _plan(self, text: str, tools: dict[str, ToolSpec]) -> list[ToolCall]:
        low = text.lower()
        quoted = _quoted(text)
        files = [f for f in re.findall(_FILE, text) if not f.startswith("http")]

        # "run `ls -la`" / "run pytest -q": a command in the sandbox.
        m = re.match(r"\s*(?:please\s+)?run\s+(?:the\s+command\s+)?(.+?)\s*$", text, re.IGNORECASE | re.DOTALL)
        if m and _has(tools, "run_command"):
            return [ToolCall("run_command", {"command": quoted[0] if quoted else m.group(1)})]

        # An MCP (or any non-file) tool named in the message: call it.
        for name, spec in tools.items():
            short = name.split("__", 1)[-1]
            if (name.lower() in low or (len(short) > 3 and re.search(rf"\b{re.escape(short.lower())}\b", low))) \
                    and name not in _FILE_TOOLS and name not in _MEMORY_TOOLS:
                return [ToolCall(name, _arguments_for(spec, text, name))]

        m = re.search(r"(?:replace|change)\s+(.+?)\s+(?:with|to|by)\s+(.+?)\s+in\s+(" + _FILE + ")", text,
                      re.IGNORECASE)
        if m and _has(tools, "edit_file"):
            old, new = (quoted + [None, None])[:2] if len(quoted) >= 2 else (_unquote(m.group(1)), _unquote(m.group(2)))
            return [ToolCall("edit_file", {"path": m.group(3), "search": old, "replace": new, "replace_all": True})]
        m = re.search(r"(?:create|write|make)\s+(?:a\s+)?(?:new\s+)?(?:file\s+)?(" + _FILE + r")"
                      r"(?:\s+(?:with|containing|saying)\s+(.+))?", text, re.IGNORECASE | re.DOTALL)
        if m and (_has(tools, "create_file") or _has(tools, "write_file")):
            content = quoted[0] if quoted else (m.group(2) or "Hello from the RobotLab offline demo.\n")
            if not content.endswith("\n"):
                content += "\n"
            name = "create_file" if _has(tools, "create_file") else "write_file"
            return [ToolCall(name, {"path": m.group(1), "content": content})]
        m = re.search(r"(?:search|find|grep|look)\s+(?:for\s+)?(.+?)(?:\s+in\s+(" + _FILE + r"|\.))?\s*$", text,
                      re.IGNORECASE)
        if m and _has(tools, "search_files") and not re.search(r"\bfiles?\b\s*$", m.group(1)):
            query = quoted[0] if quoted else _unquote(m.group(1))
            args: dict[str, Any] = {"query": query}
            if m.group(2):
                args["path"] = m.group(2)
            return [ToolCall("search_files", args)]
        if files and _has(tools, "read_file") and _EDIT_WORDS.search(text) and _edit_tool(tools):
            # Asked to change a file: read it first; the edit is proposed once its text is known.
            return [ToolCall("read_file", {"path": files[0]})]
        if files and _has(tools, "read_file") and re.search(r"\b(read|open|show|cat|view|what(?:'s| is) in)\b", low):
            return [ToolCall("read_file", {"path": f}) for f in files[:3]]
        if _has(tools, "list_files") and re.search(
            r"\b(list|files|folder|directory|ls|tree|what(?:'s| is) (?:here|in))\b", low
        ):
            path = next((f for f in files if "/" in f and "." not in f.rsplit("/", 1)[-1]), ".")
            return [ToolCall("list_files", {"path": path})]
        if files and _has(tools, "read_file"):
            return [ToolCall("read_file", {"path": files[0]})]
        m = re.search(r"\bremember\s+(?:that\s+)?(\w[\w -]*?)\s+(?:is|=|are)\s+(.+)$", text, re.IGNORECASE)
        if m and _has(tools, "remember"):
            return [ToolCall("remember", {"key": m.group(1).strip().replace(" ", "_"), "value": m.group(2).strip()})]
        m = re.search(r"\b(?:recall|what is|what's)\s+(?:the\s+)?(\w+)\b", text, re.IGNORECASE)
        if m and _has(tools, "recall") and "remember" not in low and m.group(1).lower() not in ("here", "in", "this"):
            return [ToolCall("recall", {"key": m.group(1)})]
        return []

    def _help(self, text: str, tools: dict[str, ToolSpec], *, first: bool) -> str:
        lines = ["Hello! I'm the **offline demo** — a few rules, not a language model — so I can only do "
                 "simple things, but everything I do goes through the real workspace: tool calls, "
                 "approvals, change review and the inspector."]
        if tools:
            lines.append("\nTry one of these:")
            examples = []
            if "list_files" in tools:
                examples.append("- `list the files`")
            if "read_file" in tools:
                examples.append("- `read README.md`")
            if "search_files" in tools:
                examples.append("- `search for TODO`")
            if "edit_file" in tools:
                examples.append("- `replace \"old text\" with \"new text\" in notes.txt`")
            if "create_file" in tools:
                examples.append("- `create hello.txt with \"Hi there\"`")
            if "run_command" in tools:
                examples.append("- `run \"ls -la\"` (a command in the sandbox: it sees the folder with the proposed "
                                "changes, and what it writes is proposed too)")
            mcp = [n for n in tools if n not in _FILE_TOOLS and n not in ("remember", "recall")]
            for name in mcp[:3]:
                examples.append(f"- `call {name}` (an MCP tool)")
            lines.extend(examples)
            lines.append("\nTools available to this robot: " + ", ".join(f"`{n}`" for n in tools) + ".")
        else:
            lines.append("\nThis robot has no tools, so there is little I can show. Pick the **file-helper** robot "
                         "and open a folder (File > Open Folder) to see tool calls and change review.")
        lines.append("\n" + CONNECT_HINT)
        return "\n".join(lines)

    def _explain(self, messages: list[Message]) -> str:
        results = []
        for message in reversed(messages):
            if not message.is_tool_result:
                break
            results.append(message)
        results.reverse()
        parts = []
        for result in results:
            tool = result.tool  # type: ignore[attr-defined]
            name = tool.name
            if result.is_error:  # type: ignore[attr-defined]
                error = result.error  # type: ignore[attr-defined]
                detail = error.get("message", error) if isinstance(error, dict) else error
                parts.append(f"`{name}` reported an error: {detail}")
                continue
            data = result.data  # type: ignore[attr-defined]
            parts.append(_describe(name, tool.input, data))
        parts.append("\n_(Offline demo — no language model wrote this; it only reports what the tools returned.)_")
        return "\n\n".join(parts)


#: A message that asks to change a file ("add a line to notes.txt", "fix README.md", "edit app.py").
_EDIT_WORDS = re.compile(r"\b(edit|change|update|modify|fix|append|add|insert|amend|rewrite|improve|correct)\b",
                         re.IGNORECASE)
#: What the demo adds when it is asked to change a file without saying what to write.
DEMO_LINE = "Edited with the RobotLab offline demo (no language model): review this change, then apply or reject it."


_REVIEW_NOTE = re.compile(r"<change-review>.*?</change-review>\s*", re.DOTALL)


def _typed(text: str) -> str:
    """What the person typed: without the review outcome put in front of the message (whose words,
    "applied", "edit", name files too)."""
    return _REVIEW_NOTE.sub("", text)


def _edit_tool(tools: Mapping[str, ToolSpec]) -> str | None:
    return next((name for name in ("write_file", "edit_file") if name in tools), None)


def _edit_after_reading(messages: list[Message], tools: Mapping[str, ToolSpec]) -> list[Part]:
    """After reading a file the user asked to change: propose a change to it (an added line: the quoted
    text of the message, else a line saying the demo made it), so the change review can be tried offline.
    Nothing when the turn already proposed a change, or the message did not ask for one."""
    start = max((i for i, m in enumerate(messages) if m.is_user), default=-1)
    if start < 0:
        return []
    request = _typed(_said(messages[start].content))
    if not _EDIT_WORDS.search(request) or _edit_tool(tools) is None:
        return []
    results = [m for m in messages[start + 1:] if m.is_tool_result]
    if any(r.tool.name in _CHANGE_TOOLS for r in results):  # type: ignore[attr-defined]
        return []
    read = next((r for r in reversed(results) if r.tool.name == "read_file"  # type: ignore[attr-defined]
                 and isinstance(r.data, dict) and isinstance(r.data.get("content"), str)), None)  # type: ignore[attr-defined]
    if read is None:
        return []
    data: dict[str, Any] = read.data  # type: ignore[attr-defined]
    path = str(data.get("path") or read.tool.input.get("path"))  # type: ignore[attr-defined]
    content = str(data["content"])
    quoted = _quoted(request)
    addition = quoted[0] if quoted else DEMO_LINE
    what = f"the line “{addition}”" if quoted else "a line saying the offline demo made this change"
    intro = (f"I can't work out edits without a language model, so to show the change review I propose adding "
             f"{what} at the end of `{path}`.\n")
    if "write_file" in tools and not data.get("truncated"):
        body = content if not content or content.endswith("\n") else content + "\n"
        return [intro, ToolCall("write_file", {"path": path, "content": body + addition + "\n"})]
    if "edit_file" in tools and content.strip():
        lines = content.splitlines()
        anchor = next((line for line in reversed(lines) if line.strip() and content.count(line) == 1), None)
        if anchor is not None:
            return [intro, ToolCall("edit_file", {"path": path, "search": anchor, "replace": f"{anchor}\n{addition}"})]
    return []


_CHANGE_TOOLS = {"write_file", "edit_file", "apply_patch", "create_file", "delete_file", "rename_file"}

_FILE_TOOLS = {"read_file", "list_files", "search_files", "write_file", "edit_file", "apply_patch", "create_file",
               "delete_file", "rename_file", "run_command"}


_MEMORY_TOOLS = {"remember", "recall"}


def _first_turn(messages: list[Message]) -> bool:
    return sum(1 for m in messages if m.is_user) <= 1


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1]
    return text


def _arguments_for(spec: ToolSpec, text: str, name: str) -> dict[str, Any]:
    """Fill a tool's required arguments from the message as well as rules can."""
    props = dict(spec.parameters.get("properties") or {})
    required = list(spec.parameters.get("required") or [])
    quoted = _quoted(text)
    numbers = [float(n) if "." in n else int(n) for n in re.findall(r"-?\d+(?:\.\d+)?", text)]
    # Text after the tool's name is the natural argument: "echo hello world" -> "hello world".
    short = name.split("__", 1)[-1]
    m = re.search(re.escape(short), text, re.IGNORECASE)
    tail = text[m.end():].strip(" :,-") if m else text
    tail = re.sub(r"^(with|using|via|on|for)\s+", "", tail, flags=re.IGNORECASE)
    try:
        words = shlex.split(tail)
    except ValueError:
        words = tail.split()
    args: dict[str, Any] = {}
    for key in required or list(props)[:1]:
        schema = props.get(key, {})
        kind = schema.get("type")
        if kind in ("number", "integer") and numbers:
            value: Any = numbers.pop(0)
            args[key] = int(value) if kind == "integer" else value
        elif kind == "boolean":
            args[key] = True
        elif schema.get("enum"):
            args[key] = next((e for e in schema["enum"] if str(e).lower() in text.lower()), schema["enum"][0])
        elif kind in ("string", None):
            args[key] = quoted.pop(0) if quoted else (" ".join(words) or "hello")
        elif kind == "array":
            args[key] = words
        elif kind == "object":
            args[key] = {}
    return args


def _describe(name: str, arguments: Mapping[str, Any], data: Any) -> str:
    if name == "run_command" and isinstance(data, dict):
        ended = ("was stopped by its time limit" if data.get("timed_out") else
                 f"exited with {data.get('exit_code')}" if data.get("exit_code") is not None else "was stopped")
        output = str(data.get("output") or "").rstrip("\n")
        excerpt = output if len(output) <= 3000 else output[:3000] + "\n…"
        said = f"`{arguments.get('command')}` {ended} (in the sandbox; your folder was not touched)."
        if excerpt:
            said += f"\n\n```\n{excerpt.replace('```', '` ` `')}\n```"
        if data.get("changes"):
            said += ("\n\nWhat it wrote is proposed for your review: " +
                     ", ".join(f"`{p}`" for p in data["changes"]) + ".")
        return said
    if name == "remember" and isinstance(data, dict):
        return f"Saved `{arguments.get('key')}` to the shared memory: {_brief(arguments.get('value'))}."
    if name == "recall" and isinstance(data, dict):
        if not data.get("found"):
            return f"**{data.get('key')}**: not in the shared memory."
        return f"**{data.get('key')}**: {_brief(data.get('value'))}"
    if name == "list_files":
        entries = data.get("entries") if isinstance(data, dict) else data
        if isinstance(entries, list):
            shown = [str(e.get("path", e)) if isinstance(e, dict) else str(e) for e in entries[:25]]
            more = f"\n…and {len(entries) - 25} more." if len(entries) > 25 else ""
            listing = "\n".join(f"- `{s}`" for s in shown)
            return f"The folder `{arguments.get('path', '.')}` has {len(entries)} {'entry' if len(entries) == 1 else 'entries'}:\n{listing}{more}"
    if name == "read_file":
        content = data.get("content") if isinstance(data, dict) else data
        if isinstance(content, str):
            lines = content.splitlines()
            head = "\n".join(lines[:30])
            more = f"\n\n({len(lines) - 30} more lines not shown.)" if len(lines) > 30 else ""
            lang = str(arguments.get("path", "")).rsplit(".", 1)[-1] if "." in str(arguments.get("path", "")) else ""
            count = f"{len(lines)} {'line' if len(lines) == 1 else 'lines'}"
            return f"Here is `{arguments.get('path')}` ({count}):\n\n```{lang}\n{head}\n```{more}"
    if name == "search_files":
        matches = data.get("matches") if isinstance(data, dict) else data
        if isinstance(matches, list):
            if not matches:
                return f"No matches for `{arguments.get('query')}`."
            shown = []
            for item in matches[:15]:
                if isinstance(item, dict):
                    shown.append(f"- `{item.get('path')}:{item.get('line')}` {str(item.get('text', '')).strip()}")
                else:
                    shown.append(f"- {item}")
            return f"{len(matches)} {'match' if len(matches) == 1 else 'matches'} for `{arguments.get('query')}`:\n" + "\n".join(shown)
    if name in _FILE_TOOLS:
        summary = data.get("message") if isinstance(data, dict) else None
        if summary:
            return str(summary)
    if isinstance(data, str):
        return f"`{name}` returned:\n\n{data}"
    return f"`{name}` returned:\n\n```json\n{json.dumps(data, indent=2, ensure_ascii=False, default=str)[:4000]}\n```"


_CATEGORY = re.compile(r"one of\s*:?\s*([\w, /|-]+)", re.IGNORECASE)
_KEYWORDS = re.compile(r"^\s*[-*]?\s*(\w+)\s*(?:\(|:)\s*(?:keywords?\s*:?\s*)?([^)\n]+)\)?\s*$", re.MULTILINE)


def _classify(system: str | None, text: str) -> str | None:
    """For routing robots: the system prompt asks for exactly one of a few labels."""
    if not system or "answer with" not in system.lower():
        return None
    m = _CATEGORY.search(system)
    if not m:
        return None
    labels = [w.strip().lower() for w in re.split(r"[,|/]| or ", m.group(1)) if w.strip()]
    labels = [label.split()[0] for label in labels if label.split()]
    if not labels:
        return None
    keywords = {label: {label} for label in labels}
    for km in _KEYWORDS.finditer(system):
        label = km.group(1).lower()
        if label in keywords:
            keywords[label].update(w.strip().lower() for w in km.group(2).split(",") if w.strip())
    low = text.lower()
    scores = {label: sum(1 for w in words if re.search(rf"\b{re.escape(w)}", low)) for label, words in keywords.items()}
    best = max(scores.values())
    if best == 0:
        return labels[-1]
    return max(labels, key=lambda label: scores[label])


# -- network rules: specialists that were routed to, analysers and synthesisers ----------------
_SPECIALIST = re.compile(r"\byou are (?:the|a|an)\s+([\w -]{2,40}?)\s+specialist\b", re.IGNORECASE)


def _specialist(system: str | None, text: str, tools: Mapping[str, ToolSpec]) -> str | None:
    """A tool-less robot whose instructions say "You are the X specialist": say the routing worked."""
    if not system or tools:
        return None
    m = _SPECIALIST.search(system)
    if not m:
        return None
    role = m.group(1).strip()
    quoted = " ".join(text.split())
    if len(quoted) > 400:
        quoted = quoted[:399] + "…"
    return (f"**{role[:1].upper()}{role[1:]} specialist**: this message was routed to me.\n\n> {quoted}\n\n"
            "_(Offline demo: the routing is real, but no language model is connected to write the answer. "
            "Pick a model in Settings, or pass --model, for a real reply.)_")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_REMEMBER_KEY = re.compile(r"`remember`[^\n]*?\bkey\s+`([\w:.-]+)`", re.IGNORECASE)

_POSITIVE = _wordset(
    "good great excellent love loved like liked happy glad pleased amazing awesome fantastic wonderful fast "
    "helpful easy smooth reliable recommend perfect best nice thanks thank impressive enjoy enjoyed"
)
_NEGATIVE = _wordset(
    "bad terrible awful hate hated poor slow broken crash crashes crashed bug bugs buggy error errors "
    "problem problems issue issues angry annoyed disappointed disappointing worst useless expensive "
    "refund wrong failed fails failure late confusing frustrating unhappy"
)
_STOP = _wordset(
    "the a an and or but if then so of to in on at by for with from as is are was were be been being it its "
    "this that these those i me my we our you your he she they them their there here what which who whom "
    "when where why how not no yes do does did done have has had will would can could should may might "
    "just also very really too than into about over after before again all any some more most other such "
    "only own same out up down off once both each few nor hello thanks thank please"
)


def _memory_plan(system: str | None, text: str, tools: Mapping[str, ToolSpec]) -> list[Part]:
    """Network robots told (in their instructions) to store a finding with `remember` under the key
    `k`, or to read keys with `recall`: word-list analyses and memory reads, labelled as rules."""
    if not system:
        return []
    if "remember" in tools:
        m = _REMEMBER_KEY.search(system)
        if m:
            key = m.group(1)
            finding, summary = _analyse(_analysis_kind(key, system), text)
            return [summary + "\n", ToolCall("remember", {"key": key, "value": finding})]
    if "recall" in tools:
        for line in system.splitlines():
            if "`recall`" in line:
                keys = [k for k in re.findall(r"`([\w:.-]+)`", line) if k not in _MEMORY_TOOLS]
                if keys:
                    return ["Reading the findings from the shared memory.\n",
                            *[ToolCall("recall", {"key": k}) for k in dict.fromkeys(keys)]]
    return []


def _analysis_kind(key: str, system: str) -> str:
    for where in (key.lower(), system.lower()):
        if "sentiment" in where:
            return "sentiment"
        if "entit" in where:
            return "entities"
        if "keyword" in where or "topic" in where:
            return "keywords"
    return "stats"


def _analyse(kind: str, text: str) -> tuple[Any, str]:
    words = re.findall(r"[a-z][a-z']*", text.lower())
    if kind == "sentiment":
        pos = [w for w in words if w in _POSITIVE]
        neg = [w for w in words if w in _NEGATIVE]
        score = round((len(pos) - len(neg)) / max(1, len(pos) + len(neg)), 2)
        if pos and neg and abs(score) < 0.5:
            label = "mixed"
        else:
            label = "positive" if score > 0.2 else "negative" if score < -0.2 else "neutral"
        evidence = list(dict.fromkeys(pos + neg))[:6]
        shown = f" (words: {', '.join(evidence)})" if evidence else ""
        return ({"label": label, "score": score, "evidence": evidence},
                f"Sentiment by word list (offline demo rule): {label}, score {score:+.2f}{shown}.")
    if kind == "entities":
        found: list[str] = []
        for m in re.finditer(r"[$€£]\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:USD|EUR|GBP|dollars|euros)\b"
                             r"|\b[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*", text):
            value = m.group(0).strip(" .,'")
            parts = value.split()
            while parts and parts[0].lower() in _STOP:
                parts.pop(0)
            value = " ".join(parts)
            if value and value.lower() not in _STOP and value not in found:
                found.append(value)
        shown = ", ".join(found) if found else "none found"
        return found, f"Entities by capitalisation and amounts (offline demo rule): {shown}."
    if kind == "keywords":
        counts: dict[str, int] = {}
        for w in words:
            if len(w) >= 4 and w not in _STOP:
                counts[w] = counts.get(w, 0) + 1
        top = sorted(counts, key=lambda w: -counts[w])[:5]
        return top, f"Keywords by frequency (offline demo rule): {', '.join(top) if top else 'none'}."
    sentences = len([s for s in re.split(r"[.!?]+", text) if s.strip()])
    return ({"words": len(words), "sentences": sentences},
            f"Text statistics (offline demo rule): {len(words)} words, {sentences} sentences.")


def _brief(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_brief(v)}" for k, v in value.items()) or "(empty)"
    if isinstance(value, list):
        return ", ".join(_brief(v) for v in value) if value else "(none)"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
