"""Evals: threads become tests. An eval file names robots, models and cases with what each answer must show;
:func:`run_eval` runs the matrix (``robotlab eval FILE`` on the command line).

    from workspace.evals import AnswerCache, load_eval_file, run_eval

    spec = load_eval_file("evals/support.yaml")
    report = await run_eval(spec, base=Path("evals"), concurrency=8, cache=AnswerCache())
    report.passed, report.pass_rates(), [r.failures for r in report.results]
"""

from __future__ import annotations

from workspace.evals.cache import AnswerCache, CachingProvider, request_key
from workspace.evals.checks import Outcome, check
from workspace.evals.report import junit_xml, table
from workspace.evals.runner import CaseResult, EvalReport, run_eval
from workspace.evals.spec import Case, EvalFile, Expect, ModelEntry, eval_json_schema, load_eval_file

__all__ = [
           "AnswerCache",
           "CachingProvider",
           "Case",
           "CaseResult",
           "EvalFile",
           "EvalReport",
           "Expect",
           "ModelEntry",
           "Outcome",
           "check",
           "eval_json_schema",
           "junit_xml",
           "load_eval_file",
           "request_key",
           "run_eval",
           "table",
]
