"""Run an eval: every case for every robot and model (the matrix), ``concurrency`` cases at a time.

Each case is a fresh run of a freshly loaded robot: its folder (when the case names one) is copied to a
temporary folder the robot works on; tools that change files propose into the case's own change set, which
nothing applies; a tool that asks for approval is answered by the file's ``approve`` (deny by default). Model
answers go through the :class:`~workspace.evals.cache.AnswerCache` unless ``cache`` is None.

Given a ``store``, each case's run is recorded as a thread of it as it happens (:data:`EVAL_ORIGIN`: its
metadata names the eval file, the case, the model and the eval's run, ``eval_run``, one id for the whole
matrix), so a case can be opened and read like any conversation; thread lists leave such threads out unless
asked (``Store.list_threads(include_evals=True)``).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.evals.checks import Outcome, check, describe
from workspace.evals.judge import JUDGE_PROMPT, JudgeUsage, judge_answer
from workspace.evals.spec import Case, EvalFile, Expect, ModelEntry

if TYPE_CHECKING:
    from workspace.config import Config
    from workspace.evals.cache import AnswerCache
    from workspace.persistence import Store
    from workspace.providers.base import Provider

log = logging.getLogger("workspace.evals")

__all__ = ["EVAL_ORIGIN", "JUDGE_PROMPT", "CaseResult", "EvalReport", "run_eval"]

#: ``metadata["origin"]`` of a thread an eval case's run was recorded in.
EVAL_ORIGIN = "eval"


#: Seconds a case stopped at the eval's timeout gets to end its run before its folder copy is removed.
_STOP_WAIT_S = 10.0

#: The stop's reason in a case's ``run_cancelled`` event when the whole eval was cancelled while the case ran.
CANCELLED_REASON = "the eval was cancelled"


@dataclass(slots=True)
class CaseResult:
    """One cell of the matrix: a case run by a robot with a model."""

    case: str
    robot: str
    model: str
    #: Each assertion as written and why it failed (None: it held).
    checks: list[tuple[str, str | None]] = field(default_factory=list)
    outcome: Outcome = field(default_factory=Outcome)
    #: Model answers served from the cache, and requests sent to the model.
    cached: int = 0
    requests: int = 0
    #: The robot's tokens (the run's totals); its cost is ``outcome.cost``.
    input_tokens: int = 0
    output_tokens: int = 0
    #: The rubric judge's calls, tokens and cost, apart from the robot's.
    judge: JudgeUsage = field(default_factory=JudgeUsage)
    #: The thread the case's run was recorded in (None: not recorded, or the robot did not load).
    thread_id: str | None = None
    #: The eval was cancelled while this case ran: its run was stopped and recorded so, its checks not made (such a
    #: result reaches ``on_result`` only, never a report).
    cancelled: bool = False

    @property
    def failures(self) -> list[str]:
        out = [f"{what}: {why}" for what, why in self.checks if why is not None]
        if self.outcome.error is not None:
            out.insert(0, f"the run did not finish: {self.outcome.error}")
        return out

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        return {"case": self.case, "robot": self.robot, "model": self.model, "passed": self.passed,
                "failures": self.failures, "answer": o.answer, "seconds": round(o.seconds, 3), "cost": o.cost,
                "tool_calls": o.tool_calls, "changes": sorted(o.changes), "cached": self.cached,
                "requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "judge": self.judge.to_dict(), "thread_id": self.thread_id}


@dataclass(slots=True)
class EvalReport:
    """Every case's result, in the matrix's order, and the cache's figures."""

    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    #: The eval's run: ``eval_run`` in the metadata of every thread it recorded.
    run_id: str = ""

    def totals(self) -> dict[str, Any]:
        """The robots' and the judges' tokens and cost over every case, apart (a cost is None when no call of
        that side reported a price)."""
        robot_cost = [r.outcome.cost for r in self.results if r.outcome.cost is not None]
        judge_cost = [r.judge.cost for r in self.results if r.judge.cost is not None]
        return {"robot": {"input_tokens": sum(r.input_tokens for r in self.results),
                          "output_tokens": sum(r.output_tokens for r in self.results),
                          "cost": sum(robot_cost) if robot_cost else None},
                "judge": {"calls": sum(r.judge.calls for r in self.results),
                          "input_tokens": sum(r.judge.input_tokens for r in self.results),
                          "output_tokens": sum(r.judge.output_tokens for r in self.results),
                          "cost": sum(judge_cost) if judge_cost else None}}

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def pass_rates(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(robot, model) -> (cases passed, cases run)."""
        rates: dict[tuple[str, str], tuple[int, int]] = {}
        for r in self.results:
            done, total = rates.get((r.robot, r.model), (0, 0))
            rates[(r.robot, r.model)] = (done + r.passed, total + 1)
        return rates

    def summary(self) -> dict[str, Any]:
        failed = sum(not r.passed for r in self.results)
        return {"summary": True, "cases": len(self.results), "passed": len(self.results) - failed,
                "failed": failed, "seconds": round(self.seconds, 3), "cache_hits": self.cache_hits,
                "model_requests": self.cache_misses, "eval_run": self.run_id, **self.totals(),
                "pass_rates": [{"robot": robot, "model": model, "passed": p, "total": t}
                               for (robot, model), (p, t) in self.pass_rates().items()]}


class _Providers:
    """One provider per model and server for the whole eval (its client, its answers about the model's window
    are made once, not per case); each case wraps it to count its own cached and asked answers."""

    def __init__(self, config: Config, written: frozenset[str] = frozenset()) -> None:
        self.config = config
        #: The addresses written in the eval file (:func:`_written_bases`): the folder's, not the user's.
        self.written = written
        self._made: dict[tuple[str | None, str | None, bool], Provider] = {}

    def get(self, model: str | None, api_base: str | None, *, folder_written: bool = False,
            router: dict[str, Any] | None = None) -> Provider:
        folder_written = folder_written or (api_base is not None and api_base in self.written)
        key = (model, api_base, folder_written)
        found = self._made.get(key)
        if found is None and router is not None:  # a group of deployments: litellm's Router spreads the requests
            from workspace.providers.litellm_provider import PLACEHOLDER_KEY, RouterProvider
            from workspace.urls import key_may_go

            settings = {k: v for k, v in router.items() if k != "model_list"}
            deployments = []
            for entry in router["model_list"]:  # written in the eval file: no key of the user's to its servers
                params = dict(entry.get("litellm_params") or {})
                base = params.get("api_base")
                if base and not params.get("api_key") and \
                        not key_may_go(str(base), config=self.config, folder_written=True):
                    params["api_key"] = PLACEHOLDER_KEY
                deployments.append({**entry, "litellm_params": params})
            found = self._made[key] = RouterProvider(str(model), model_list=deployments,
                                                     router_settings=settings)
        elif found is None:
            from workspace.providers import provider_for

            found = self._made[key] = provider_for(model, api_base=api_base, config=self.config,
                                                   folder_written=folder_written)
        return found


@dataclass(frozen=True, slots=True)
class _Cell:
    robot: str
    entry: ModelEntry | None
    case: Case


@dataclass(frozen=True, slots=True)
class _Recorder:
    """Where each case's run is recorded: the store, the eval file's path and the eval's run id."""

    store: Store
    eval_file: str
    run_id: str

    def thread(self, *, case: Case, robot: str, model: str) -> tuple[str, str]:
        """A new thread for ``case`` and its first turn: (thread id, turn id)."""
        thread = self.store.create_thread(robot=robot, title=f"Eval {case.name} · {model}", metadata={
            "origin": EVAL_ORIGIN, "eval_file": self.eval_file, "eval_case": case.name, "eval_run": self.run_id,
            "eval_model": model})
        turn = self.store.add_turn(thread.id, user_text=case.message, parent_turn_id=None)
        return thread.id, turn.id

    def save(self, thread_id: str, turn_id: str, events: list[ev.Event], terminal: ev.Event | None) -> None:
        """The case's run, once it ended, written as its turn's events in one transaction, and the turn's end.

        Written at the end, not as they happen (a thread the window records writes each event at once, so a
        crash loses nothing): 13 transactions a case became 4, and an eval's case is run again rather than
        read back after a crash (its turn is then marked interrupted). A store that cannot be written is logged
        and the case's result stands."""
        from workspace.persistence import StoreError, status_for

        if terminal is not None and (not events or events[-1] is not terminal):
            events = [*events, terminal]
        try:
            self.store.append_events(thread_id, turn_id, events)
            self.store.finish_turn(turn_id, status_for(terminal) if terminal is not None else "interrupted")
        except (StoreError, OSError) as exc:
            log.warning("the eval case's run could not be recorded in thread %s: %s", thread_id[:8], exc)


async def run_eval(spec: EvalFile, *, base: Path, robots: Sequence[str] | None = None,
                   models: Sequence[ModelEntry] | None = None, concurrency: int = 4,
                   cache: AnswerCache | None = None, config: Config | None = None,
                   on_result: Callable[[CaseResult], None] | None = None, store: Store | None = None,
                   eval_file: str | Path | None = None) -> EvalReport:
    """Run the matrix of ``spec`` (``robots`` / ``models`` instead of the file's when given); ``base`` is the
    eval file's folder (robot files and case folders are relative to it). ``on_result`` hears each result
    as it comes; the report keeps the matrix's order. With ``store``, each case's run is recorded there as a
    thread (its metadata: ``eval_file``, the path of ``eval_file`` or else ``base``, ``eval_case``,
    ``eval_run``); the result names it (``thread_id``).

    Cancelled (its task), the eval stops every case that is running: each run ends with its ``run_cancelled``
    event (:data:`CANCELLED_REASON`), its thread's turn is recorded with its events so far and the status
    ``cancelled`` (never left ``running``), ``on_result`` hears it (``cancelled``), and the cancellation goes on;
    the cases not begun leave nothing."""
    import uuid

    if concurrency < 1:
        raise ValueError(f"concurrency must be 1 or more, not {concurrency}")
    run_id = uuid.uuid4().hex
    recorder = None if store is None else _Recorder(store, str(Path(eval_file or base).resolve()), run_id)
    if config is None:
        from workspace.config import load_config

        config = load_config(None, overrides={"review": {"mode": "review"}})
    given = list(models) if models is not None else spec.model_entries()
    entries: list[ModelEntry | None] = list(given) if given else [None]
    cells = [_Cell(robot, entry, case) for robot in (robots or spec.robot_names()) for entry in entries
             for case in spec.cases]
    written = _written_bases(spec)
    _refuse_elsewhere(spec, written, source=Path(eval_file or base).resolve(), base=base,
                      robots=list(robots or spec.robot_names()))
    gate = asyncio.Semaphore(concurrency)
    providers = _Providers(config, written)
    hits0, misses0 = (cache.hits, cache.misses) if cache is not None else (0, 0)
    started = time.monotonic()

    async def one(cell: _Cell) -> CaseResult:
        async with gate:
            result = await _run_case(spec, cell, base=base, cache=cache, config=config, providers=providers,
                                     recorder=recorder, on_cancelled=on_result)
        if on_result is not None:
            on_result(result)
        return result

    tasks = [asyncio.ensure_future(one(cell)) for cell in cells]
    try:
        results = await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        # gather ends at its first cancelled case (one waiting for its turn ends at once): wait for the running
        # ones to stop their runs and record them, so nothing is left half-written when this returns.
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        raise
    report = EvalReport(results=list(results), seconds=time.monotonic() - started, run_id=run_id)
    if cache is not None:
        report.cache_hits, report.cache_misses = cache.hits - hits0, cache.misses - misses0
    return report


def _written_bases(spec: EvalFile) -> frozenset[str]:
    """Every ``api_base`` the eval file writes (its own, its models' and their routers' deployments', its
    rubrics'): a file of the opened folder, so the folder's addresses, which get none of the user's keys unless
    the user configured them too (:func:`workspace.urls.key_may_go`)."""
    found = {spec.api_base}
    for entry in spec.model_entries() or ():
        found.add(entry.api_base)
        for deployment in (entry.router or {}).get("model_list") or ():
            params = deployment.get("litellm_params") if isinstance(deployment, dict) else None
            found.add(params.get("api_base") if isinstance(params, dict) else None)
    for case in spec.cases:
        found.update(expect.rubric.api_base for expect in case.expect if expect.rubric is not None)
    return frozenset(str(base) for base in found if base)


def _refuse_elsewhere(spec: EvalFile, written: frozenset[str], *, source: Path, base: Path,
                      robots: list[str]) -> None:
    """The rules of files in the opened folder (the eval file's, ``base``), as ``robotlab run --folder`` keeps
    them (:func:`workspace.trust.folder_file_problem`): an address the eval file or a robot file in the folder
    writes must be on this machine. A ConfigurationError says which and how to fix it, before any case runs."""
    from workspace.errors import ConfigurationError
    from workspace.templates import Template
    from workspace.trust import folder_file_problem, template_problem

    for address in sorted(written):
        problem = folder_file_problem(source, base, api_base=address)
        if problem:
            raise ConfigurationError(problem)
    for reference in robots:
        if not (reference.endswith(".md") or "/" in reference):
            continue  # a robot of the user's catalog: their own file
        path = (base / reference).resolve()
        try:
            template = Template.load(path)
        except Exception:  # a file that does not load fails its cases, with the reason
            continue
        problem = template_problem(template, base)
        if problem:
            raise ConfigurationError(problem)


def _model_name(robot: Any, entry: ModelEntry | None) -> str:
    if entry is not None:
        return entry.name
    return str(robot.model or "offline-demo")


async def _run_case(spec: EvalFile, cell: _Cell, *, base: Path, cache: AnswerCache | None,
                    config: Config, providers: _Providers, recorder: _Recorder | None,
                    on_cancelled: Callable[[CaseResult], None] | None = None) -> CaseResult:
    case = cell.case
    result = CaseResult(case=case.name, robot=cell.robot, model=cell.entry.name if cell.entry else "")
    work_root = Path(tempfile.mkdtemp(prefix="robotlab-eval-"))
    try:
        folder = (work_root / "folder").resolve()
        if case.folder is not None:
            await asyncio.to_thread(shutil.copytree, base / case.folder, folder, symlinks=True)
        else:
            folder.mkdir()
        await _run_in(spec, cell, result, folder=folder, base=base, cache=cache, config=config,
                      providers=providers, recorder=recorder)
    except asyncio.CancelledError:
        if result.cancelled and on_cancelled is not None:
            on_cancelled(result)
        raise
    except Exception as exc:  # a robot that cannot load, a provider that cannot be made: this case fails
        result.outcome.error = f"{type(exc).__name__}: {exc}"
    finally:
        await asyncio.to_thread(shutil.rmtree, work_root, True)
    return result


def _counting(provider: Provider, cache: AnswerCache | None, replace: dict[str, str], result: CaseResult) -> Provider:
    if cache is None:
        return provider
    from workspace.evals.cache import CachingProvider

    def lookup(hit: bool) -> None:
        if hit:
            result.cached += 1
        else:
            result.requests += 1

    return CachingProvider(provider, cache, replace=replace, on_lookup=lookup)


async def _run_in(spec: EvalFile, cell: _Cell, result: CaseResult, *, folder: Path, base: Path,
                  cache: AnswerCache | None, config: Config, providers: _Providers,
                  recorder: _Recorder | None) -> None:
    from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
    from workspace.catalog import load_robot
    from workspace.changes import ChangeSet

    case, entry = cell.case, cell.entry
    reference = cell.robot
    if reference.endswith(".md") or "/" in reference:
        reference = str((base / reference).resolve())
    robot = load_robot(reference, folder=folder, config=config, model=entry.model if entry else None,
                       api_base=entry.api_base if entry else None)
    result.robot = robot.name
    if not result.model:
        result.model = _model_name(robot, entry)
    from workspace.trust import written_in_folder

    if robot.template is not None and written_in_folder(robot.template.path, base):
        # A robot file of the eval's folder (the robot works on the case's copy, so it cannot tell): its
        # addresses are the folder's, as when `robotlab run --folder` runs it.
        if entry is None or entry.api_base is None:
            robot.api_base_in_folder = True
        robot.fallbacks_in_folder = True
    provider = providers.get(robot.model, robot.api_base, folder_written=robot.api_base_in_folder,
                             router=entry.router if entry is not None else None)
    changes = ChangeSet(folder, mode="review")
    stable = {str(folder): "<folder>", changes.id: "<changes>"}
    robot.provider = _counting(provider, cache, stable, result)
    allow = (case.approve or spec.approve) == "allow"

    async def answer(request: ApprovalRequest) -> ApprovalDecision:
        if allow:
            return ApprovalDecision(approved=True)
        return ApprovalDecision(approved=False, reason=f"The eval denies tools that ask for approval "
                                f"('{request.tool}'); say what you would have done instead.")

    options: dict[str, Any] = {"folder": folder, "changes": changes,
                               "approval": ApprovalGate(ApprovalPolicy(), ask=answer)}
    if case.max_turns is not None:
        options["max_turns"] = case.max_turns
    if case.attachments:
        from workspace.attachments import AttachmentLimits, coerce_attachments

        options["attachments"] = coerce_attachments(case.attachments, folder=folder,
                                                    limits=AttachmentLimits.from_config(config))
    if case.thread is not None:
        options["history"] = await asyncio.to_thread(_thread_history, case.thread, base)
    outcome = result.outcome
    started = time.monotonic()
    run = robot.stream(case.message, **options)
    turn_id = ""
    if recorder is not None:
        result.thread_id, turn_id = recorder.thread(case=case, robot=robot.name, model=result.model)
    events: list[ev.Event] = []
    answer_text = ""
    stopped = False

    def stop() -> None:  # the run ends with its run_cancelled event, which says why (and is recorded)
        nonlocal stopped
        stopped = True
        run.cancel(f"the case ran past the eval's timeout of {spec.timeout:g} s")

    async def consume() -> None:
        nonlocal answer_text, stopped
        try:
            # Past the timeout the run is stopped (its tools too) and its last events come in; one that does not
            # end within _STOP_WAIT_S more is left, so the folder copy is not removed under a tool that still runs.
            async with asyncio.timeout(spec.timeout + _STOP_WAIT_S):
                async for event in run:
                    events.append(event)
                    if event.parent_run_id is not None:
                        continue  # a nested run (a robot used as a tool): its parts are not this answer
                    if isinstance(event, ev.Text):
                        answer_text = event.text
                    elif isinstance(event, ev.ToolUse):
                        outcome.tool_calls.append({"name": event.name, "args": dict(event.input)})
                    elif isinstance(event, ev.Usage):
                        result.input_tokens = event.total_input_tokens
                        result.output_tokens = event.total_output_tokens
                        if event.total_cost is not None:
                            outcome.cost = event.total_cost
                    elif isinstance(event, ev.RunFailed):
                        outcome.error = event.error or event.error_type
                    elif isinstance(event, ev.RunCancelled):
                        outcome.error = f"stopped ({event.reason})"
        except TimeoutError:
            stopped = True

    timer = asyncio.get_running_loop().call_later(spec.timeout, stop)
    # The events are read in a task of their own, so that the eval cancelled stops the run with its reason and
    # its last events (the run_cancelled one too) still come in and are recorded.
    consuming = asyncio.ensure_future(consume())
    try:
        await asyncio.shield(consuming)
    except asyncio.CancelledError:
        result.cancelled = True
        outcome.error = f"stopped ({CANCELLED_REASON})"
        run.cancel(CANCELLED_REASON)
        try:
            await asyncio.wait({consuming}, timeout=_STOP_WAIT_S)
        finally:
            if not consuming.done():
                consuming.cancel()
            elif not consuming.cancelled():
                consuming.exception()  # (retrieved: the cancellation is what goes on)
            if recorder is not None and result.thread_id is not None:
                recorder.save(result.thread_id, turn_id, events, run.terminal)
        raise
    finally:
        timer.cancel()
    if stopped:
        outcome.error = f"stopped after the eval's timeout of {spec.timeout:g} s (timeout: in the eval file)"
    outcome.seconds = time.monotonic() - started
    if recorder is not None and result.thread_id is not None:
        recorder.save(result.thread_id, turn_id, events, run.terminal)
    outcome.answer = answer_text
    for change in changes.pending_files:
        target = change.new_path or change.path
        outcome.changes[target] = change.text("after")
    for expect in case.expect:
        result.checks.append((describe(expect), await _check(expect, outcome, spec=spec, robot=robot,
                                                             changes=changes, config=config, cache=cache,
                                                             folder=folder, stable=stable, result=result,
                                                             providers=providers)))


async def _check(expect: Expect, outcome: Outcome, *, spec: EvalFile, robot: Any, changes: Any, config: Config,
                 cache: AnswerCache | None, folder: Path, stable: dict[str, str], result: CaseResult,
                 providers: _Providers) -> str | None:
    if expect.verify is not None:
        return await _verify(expect.verify, spec=spec, robot=robot, changes=changes, config=config, folder=folder)
    if expect.rubric is not None:
        return await _judge(expect, outcome, spec=spec, robot=robot, cache=cache, stable=stable,
                            result=result, providers=providers)
    return check(expect, outcome)


async def _verify(wanted: str, *, spec: EvalFile, robot: Any, changes: Any, config: Config,
                  folder: Path) -> str | None:
    from workspace.isolation import SandboxUnavailable
    from workspace.session.verify import run_verify, verify_command

    command = spec.verify or verify_command(config, robot, folder=folder).command
    if command is None:
        return ("no verify command: set verify: in the eval file (e.g. verify: \"pytest -q\"), or the robot's "
                "verify: or the configuration's review.verify")
    try:
        event = await run_verify(command, changes, subset="proposed")
    except SandboxUnavailable as exc:
        return f"the verify command could not run: {exc}"
    got = "passed" if event.passed else "failed"
    if got == wanted:
        return None
    why = "timed out" if event.timed_out else f"exit code {event.exit_code}"
    tail = event.output.strip()[-300:]
    return f"the verify command {command!r} {got} ({why}), expected {wanted}" + (f"; its output ends: {tail}" if tail
                                                                                else "")


async def _judge(expect: Expect, outcome: Outcome, *, spec: EvalFile, robot: Any, cache: AnswerCache | None,
                 stable: dict[str, str], result: CaseResult, providers: _Providers) -> str | None:
    rubric = expect.rubric
    assert rubric is not None
    if rubric.model is not None:
        model, api_base = rubric.model, rubric.api_base or spec.api_base
    else:
        model, api_base = robot.model, rubric.api_base or robot.api_base
    from_robot = rubric.api_base is None and rubric.model is None and bool(robot.api_base_in_folder)
    try:
        judge = _counting(providers.get(model, api_base, folder_written=from_robot), cache, stable, result)
    except Exception as exc:  # a judge's provider that cannot be made (an unknown model, a missing key)
        return f"the judge ({model}) could not be asked: {exc}"
    return await judge_answer(judge, rubric, model=str(model), message=_message_of(spec, result.case),
                              answer=outcome.answer, usage=result.judge)


def _message_of(spec: EvalFile, name: str) -> str:
    return next(c.message for c in spec.cases if c.name == name)


def _thread_history(thread_id: str, base: Path) -> list[Any]:
    """The conversation a case continues: a thread's export (a ``.json`` file of `robotlab threads export ID
    --format json`, relative to the eval file), or a recorded thread of the app's database (its id, or the
    start of it)."""
    from workspace.errors import ConfigurationError
    from workspace.paths import database_path
    from workspace.persistence import Store

    export = base / thread_id
    if export.suffix == ".json" and export.is_file():
        from workspace.exports import ImportFormatError, import_results_json, read_results_file

        with tempfile.TemporaryDirectory(prefix="robotlab-eval-thread-") as scratch:
            store = Store.open(Path(scratch) / "export.db")
            try:
                thread = import_results_json(store, read_results_file(export))
                return list(store.history_messages(thread.id))
            except ImportFormatError as exc:
                raise ConfigurationError(f"thread: {thread_id}: not a thread's export ({exc}); export one with "
                                         "`robotlab threads export ID --format json`") from None
            finally:
                store.close()
    path = database_path()
    if not path.is_file():
        raise ConfigurationError(f"thread: {thread_id}: there is no database of threads yet ({path})")
    store = Store.open(path)
    try:
        matches = [t for t in store.list_threads(include_evals=True)
                   if t.id == thread_id or t.id.startswith(thread_id)]
        if len(matches) != 1:
            raise ConfigurationError(f"thread: {thread_id}: {'no' if not matches else 'more than one'} recorded "
                                     "thread has that id; see `robotlab threads list`")
        return list(store.history_messages(matches[0].id))
    finally:
        store.close()
