"""``Ledger``: RobotLab's ``Budget::Ledger``, a token and cost budget shared by parallel tasks.

Each model call reserves what it may spend before it starts (:meth:`Ledger.reserve`) and, once its
usage is known, replaces the reservation with what it really spent (:meth:`Ledger.reconcile`); a
call that did not happen gives its reservation back (:meth:`Ledger.release`). The reservations keep
parallel callers from all starting on the same remaining amount. A dimension without a limit is
never refused. The ledger is thread-safe (tools run in worker threads), so one ledger may be shared
by every task of a network.

The agent loop uses it as RobotLab's robot does (:mod:`workspace.agent.budget`): before each model
call it holds the whole remaining amount of each dimension (:meth:`Ledger.hold_rest`, which waits
while another call holds it all, so parallel tasks sharing a ledger take turns), and after the call
it settles what the call really spent. A robot's own ``max_cost`` / ``max_total_tokens`` are
separate, per-run limits.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Mapping

from workspace.errors import Error


class BudgetExceeded(Error):
    """A reservation would take a dimension of a :class:`Ledger` over its limit."""


def budget_message(key: str, used: float, limit: float) -> str:
    """RobotLab's words for a spent budget: "Token budget exceeded: <n> tokens used, budget is <b>",
    "Cost budget exceeded: $<x> used, budget is $<y>" (six decimals); another dimension by its name."""
    if key == "tokens":
        return f"Token budget exceeded: {used:g} tokens used, budget is {limit:g}"
    if key == "cost":
        return f"Cost budget exceeded: ${used:.6f} used, budget is ${limit:.6f}"
    return f"Budget exceeded for {key}: {used:g} used, budget is {limit:g}"


def _amount(value: object, *, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value < 0:
        raise ValueError(f"{what} must be a number of 0 or more (got {value!r})")
    return float(value) if isinstance(value, float) else value


class Ledger:
    """Limits per dimension (``{"tokens": 10_000, "cost": 0.5}``), what was consumed, what is reserved.

    ``consumed`` starts a ledger with what was already spent (a budget carried over).
    """

    def __init__(self, *, limits: Mapping[str, float] | None = None,
                 consumed: Mapping[str, float] | None = None) -> None:
        self._lock = threading.Lock()
        self._limits = {str(k): _amount(v, what=f"The limit of {k!r}") for k, v in (limits or {}).items()}
        self._consumed: dict[str, float] = {
            str(k): _amount(v, what=f"What was consumed of {k!r}") for k, v in (consumed or {}).items()}
        self._reserved: dict[str, float] = {}
        #: Callers of :meth:`hold_rest` waiting for a reservation to end: (their loop, their future).
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def limits(self) -> dict[str, float]:
        """The limit of each dimension (a copy)."""
        return dict(self._limits)

    @property
    def consumed(self) -> dict[str, float]:
        """What each dimension has consumed (a copy; 0 for a dimension nothing was recorded in)."""
        with self._lock:
            return {key: self._consumed.get(key, 0) for key in {*self._limits, *self._consumed}}

    @property
    def reserved(self) -> dict[str, float]:
        """What is reserved and not yet reconciled or released, per dimension (a copy)."""
        with self._lock:
            return {key: value for key, value in self._reserved.items() if value}

    def reserve(self, key: str, amount: float) -> None:
        """Reserve ``amount`` of ``key`` before spending it; :class:`BudgetExceeded` when consumed + reserved +
        amount would pass the limit (even an amount of 0 once the dimension has overrun). No limit: nothing
        is checked or held."""
        amount = _amount(amount, what="The amount to reserve")
        with self._lock:
            limit = self._limits.get(key)
            if limit is None:
                return
            total = self._consumed.get(key, 0) + self._reserved.get(key, 0) + amount
            if total > limit:
                raise BudgetExceeded(f"budget exceeded for {key}: {total:g} > {limit:g}")
            self._reserved[key] = self._reserved.get(key, 0) + amount

    def reconcile(self, key: str, *, reserved: float, actual: float) -> None:
        """Replace a reservation of ``reserved`` with the ``actual`` amount spent (which may be more)."""
        reserved = _amount(reserved, what="The reserved amount")
        actual = _amount(actual, what="The actual amount")
        with self._lock:
            self._reserved[key] = max(self._reserved.get(key, 0) - reserved, 0)
            self._consumed[key] = self._consumed.get(key, 0) + actual
        self._wake()

    def release(self, key: str, amount: float) -> None:
        """Give back a reservation that was not spent (the call did not happen)."""
        amount = _amount(amount, what="The amount to release")
        with self._lock:
            self._reserved[key] = max(self._reserved.get(key, 0) - amount, 0)
        self._wake()

    def over(self, key: str) -> tuple[float, float] | None:
        """``(consumed, limit)`` when ``key`` has consumed more than its limit, else None."""
        with self._lock:
            limit = self._limits.get(key)
            used = self._consumed.get(key, 0)
            return (used, limit) if limit is not None and used > limit else None

    async def hold_rest(self, *keys: str) -> Reservation:
        """Reserve the whole remaining amount of each of ``keys`` (RobotLab's robot before a model call), as
        one :class:`Reservation` to settle with what the call spent. A dimension without a limit holds 0 (what
        is settled is still counted in :attr:`consumed`). A dimension already used up raises
        :class:`BudgetExceeded` with RobotLab's message (:func:`budget_message`); while another call holds all
        that remains, this waits for it to be settled or given back, so callers sharing a ledger take turns."""
        while True:
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] | None = None
            with self._lock:
                held: dict[str, float] = {}
                for key in keys:
                    limit = self._limits.get(key)
                    if limit is None:
                        held[key] = 0
                        continue
                    used = self._consumed.get(key, 0)
                    if used >= limit:
                        raise BudgetExceeded(budget_message(key, used, limit))
                    rest = limit - used - self._reserved.get(key, 0)
                    if rest <= 0:
                        waiter = loop.create_future()
                        self._waiters.append((loop, waiter))
                        break
                    held[key] = rest
                if waiter is None:
                    for key, amount in held.items():
                        if amount:
                            self._reserved[key] = self._reserved.get(key, 0) + amount
                    return Reservation(self, held)
            try:
                await waiter
            finally:
                with self._lock:
                    if (loop, waiter) in self._waiters:
                        self._waiters.remove((loop, waiter))

    def _wake(self) -> None:
        """Tell every :meth:`hold_rest` waiting that a reservation ended (each tries again)."""
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    def remaining(self, key: str) -> float:
        """What may still be reserved: limit - consumed - reserved, never below 0; ``math.inf`` without a limit."""
        with self._lock:
            limit = self._limits.get(key)
            if limit is None:
                return math.inf
            return max(limit - self._consumed.get(key, 0) - self._reserved.get(key, 0), 0)

    def reservation(self, **amounts: float) -> Reservation:
        """Reserve several dimensions at once (``ledger.reservation(tokens=2000, cost=0.01)``), all or none,
        for a ``with`` block: :meth:`Reservation.settle` records what was spent; leaving the block without
        settling (the call failed or never happened) gives the reservation back."""
        held: dict[str, float] = {}
        try:
            for key, amount in amounts.items():
                self.reserve(key, amount)
                held[key] = amount
        except BaseException:
            for key, amount in held.items():
                self.release(key, amount)
            raise
        return Reservation(self, held)

    def __repr__(self) -> str:
        return f"<Ledger limits={self._limits!r} consumed={self.consumed!r}>"


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Reservation:
    """What :meth:`Ledger.reservation` holds, until settled or given back."""

    def __init__(self, ledger: Ledger, amounts: dict[str, float]) -> None:
        self._ledger = ledger
        self.amounts = amounts
        self.settled = False

    def settle(self, **actual: float) -> None:
        """Record what was really spent (a dimension not named spent 0) and drop the reservation."""
        if self.settled:
            raise RuntimeError("This reservation is already settled or given back")
        unknown = sorted(set(actual) - set(self.amounts))
        if unknown:
            raise ValueError(f"Nothing was reserved for {', '.join(unknown)} (reserved: "
                             f"{', '.join(sorted(self.amounts)) or 'nothing'})")
        for key, reserved in self.amounts.items():
            self._ledger.reconcile(key, reserved=reserved, actual=actual.get(key, 0))
        self.settled = True

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.settled:
            for key, amount in self.amounts.items():
                self._ledger.release(key, amount)
            self.settled = True
