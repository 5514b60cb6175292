"""``robotlab eval FILE``: run an eval file's cases for each robot × model and report the pass rates.

Exit status: 0 every case passed, 1 some failed, 2 nothing ran (a bad file or option). ``--junit FILE``
writes JUnit XML for CI; ``--json`` prints one object per case result (with the thread its run was recorded in)
and a summary. Each case's run is recorded as a thread of the app's database (``--db``; ``--no-record``: not).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from workspace.cli.record import add_db_option
from workspace.cli.run import positive_int


def register(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="run an eval file: cases for each robot × model, with pass rates (for CI)",
        description="Run the cases of an eval file (YAML: robot or robots, optional models, cases with a message "
        "and what the answer must show) for every robot × model, each in a fresh run on a copy of its folder "
        "(nothing is applied). Model answers are cached by request, so a re-run costs nothing "
        "(--no-cache, --refresh). `robotlab schema eval` prints the file's JSON Schema.",
        epilog="Exit status: 0 every case passed, 1 some case failed, 2 nothing ran (a bad eval file or option).",
    )
    p.add_argument("file", help="the eval file (.yaml)")
    p.add_argument("--robots", metavar="A,B", help="run these robots instead of the file's (names, or robot files relative to the current folder)")
    p.add_argument("--models", metavar="M,N", help="run these models instead of the file's")
    p.add_argument("--api-base", metavar="URL", help="the OpenAI-compatible server of the models given by --models")
    p.add_argument("--concurrency", "-j", type=positive_int, default=4, metavar="K",
                   help="cases run at the same time (default 4)")
    p.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML to FILE")
    p.add_argument("--json", action="store_true", help="print one JSON object per case result, then a summary")
    add_db_option(p)
    p.add_argument("--no-record", action="store_true",
                   help="do not record the cases' runs (by default each is a thread of the database, left out of "
                   "thread lists; `robotlab threads list --evals` shows them)")
    cached = p.add_mutually_exclusive_group()
    cached.add_argument("--no-cache", action="store_true", help="ask the models; neither read nor write the cache")
    cached.add_argument("--refresh", action="store_true", help="ask the models again and store their new answers")
    p.set_defaults(func=cmd_eval)


def _names(text: str | None, option: str) -> list[str] | None:
    from workspace.cli import CLIError

    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise CLIError(f"{option} is empty; give names separated by commas ({option} a,b)")
    return names


def cmd_eval(args: argparse.Namespace) -> int:
    import asyncio

    from workspace.cli import CLIError
    from workspace.errors import ConfigurationError
    from workspace.evals import AnswerCache, ModelEntry, load_eval_file, run_eval
    from workspace.evals.report import failures_text, junit_xml, table

    try:
        spec = load_eval_file(args.file)
    except ConfigurationError as exc:
        raise CLIError(str(exc)) from None
    base = Path(args.file).resolve().parent
    robots = _names(args.robots, "--robots")
    if robots is not None:  # a robot file given here is relative to the current folder (the file's: to the file)
        robots = [str(Path(r).resolve()) if Path(r).suffix == ".md" and Path(r).is_file() else r for r in robots]
    model_names = _names(args.models, "--models")
    if args.api_base and model_names is None:
        raise CLIError("--api-base goes with --models (the server of those models); an eval file's own models "
                       "say their server with api_base:")
    models = [ModelEntry(model=m, api_base=args.api_base or spec.api_base) for m in model_names] \
        if model_names is not None else None
    _check_keys(models or spec.model_entries() or [])
    junit = Path(args.junit) if args.junit else None
    if junit is not None and not junit.parent.is_dir():
        raise CLIError(f"--junit {args.junit}: the folder {junit.parent} does not exist")
    store = None
    if not args.no_record:
        from workspace.cli.record import open_store

        store = open_store(args, create=True)
    cache = None if args.no_cache else AnswerCache(refresh=args.refresh)

    def heard(result: Any) -> None:
        if args.json:
            print(json.dumps(result.to_dict(), ensure_ascii=False, default=str), flush=True)

    try:
        report = asyncio.run(run_eval(spec, base=base, robots=robots, models=models, concurrency=args.concurrency,
                                      cache=cache, on_result=heard, store=store, eval_file=args.file))
    finally:
        if cache is not None:
            cache.close()
        if store is not None:
            store.close()
    if junit is not None:
        junit.write_text(junit_xml(report, name=Path(args.file).stem), encoding="utf-8")
    if args.json:
        print(json.dumps(report.summary(), ensure_ascii=False))
    else:
        print(table(report))
        failed = failures_text(report)
        if failed:
            print()
            print(failed)
        summary = report.summary()
        print(f"\n{summary['passed']}/{summary['cases']} passed in {report.seconds:.1f} s; model answers: "
              f"{report.cache_hits} from the cache, {report.cache_misses} asked"
              + (" (cache off)" if cache is None else ""))
        print(usage_line(summary))
        if store is not None:
            print(f"Each case's run is a thread: `robotlab threads list --evals` (this run: {report.run_id[:8]})")
    if junit is not None and not args.json:
        print(f"JUnit XML: {junit}", file=sys.stderr)
    return 0 if report.passed else 1


def _check_keys(models: list[Any]) -> None:
    """A model that needs a key set nowhere stops the eval before any case runs (exit 2, naming the variable)."""
    from workspace.cli.runs import check_key
    from workspace.providers import is_offline

    for entry in models:
        if entry.router is None and not is_offline(entry.model):  # a router's deployments carry their own keys
            check_key(entry.model, entry.api_base)


def _tokens(side: dict[str, Any]) -> str:
    cost = side.get("cost")
    return (f"{side['input_tokens']:,} in / {side['output_tokens']:,} out"
            + (f", ${cost:.4f}" if cost is not None else ", cost not known"))


def usage_line(summary: dict[str, Any]) -> str:
    """The robots' and the judges' tokens and cost, apart: ``robots: 1,200 in / 300 out, $0.0021; judges: …``."""
    judge = summary["judge"]
    judged = f"judges ({judge['calls']} call(s)): {_tokens(judge)}" if judge["calls"] else "judges: none asked"
    return f"Tokens: robots: {_tokens(summary['robot'])}; {judged}"
