"""A run's model calls against a budget :class:`~workspace.ledger.Ledger` (RobotLab's ``Budget::Ledger`` wiring).

Before each model call the run holds the whole remaining amount of ``tokens`` and ``cost``
(:meth:`~workspace.ledger.Ledger.hold_rest`: a budget already used up raises
:class:`~workspace.ledger.BudgetExceeded` before anything is spent; while another run sharing the ledger
holds what remains, this one waits its turn). After the call the reservation is settled with what the call
reported (input + output tokens; its cost, 0 when the price is not known), also when the call failed or was
stopped (then usually nothing: the reservation is given back). A call that took the ledger over a limit
raises ``BudgetExceeded`` with RobotLab's message once it is over: its usage is known only afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from workspace.ledger import BudgetExceeded, Ledger, budget_message
from workspace.result import Usage

#: The dimensions a model call is held and settled in.
DIMENSIONS = ("tokens", "cost")


@asynccontextmanager
async def ledger_call(ledger: Ledger | None, usage: Callable[[], Usage]) -> AsyncIterator[None]:
    """Around one model call: hold the rest of ``ledger`` before it, settle it from ``usage()`` (the run's
    totals, read before and after) after it. No ledger: nothing is done."""
    if ledger is None:
        yield
        return
    held = await ledger.hold_rest(*DIMENSIONS)
    before = usage()
    try:
        yield
    finally:
        after = usage()
        tokens = max(after.total_tokens - before.total_tokens, 0)
        cost = max((after.cost or 0.0) - (before.cost or 0.0), 0.0)
        held.settle(tokens=tokens, cost=cost)
    for key in DIMENSIONS:
        over = ledger.over(key)
        if over is not None:
            raise BudgetExceeded(budget_message(key, *over))
