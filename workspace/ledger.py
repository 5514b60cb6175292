"""``Ledger``: RobotLab's ``Budget::Ledger``, a token and cost budget shared by parallel tasks.

Each model call reserves what it may spend before it starts (:meth:`Ledger.reserve`) and, once its
usage is known, replaces the reservation with what it really spent (:meth:`Ledger.reconcile`); a
call that did not happen gives its reservation back (:meth:`Ledger.release`). The reservations keep
parallel callers from all starting on the same remaining amount. A dimension without a limit is
never refused. The ledger is thread-safe (tools run in worker threads), so one ledger may be shared
by every task of a network.

The agent loop does not use it yet: a robot's own budget is still ``max_cost`` / ``max_total_tokens``,
checked by the loop before each model call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping

from workspace.errors import Error


class BudgetExceeded(Error):
    """A reservation would take a dimension of a :class:`Ledger` over its limit."""


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

    def release(self, key: str, amount: float) -> None:
        """Give back a reservation that was not spent (the call did not happen)."""
        amount = _amount(amount, what="The amount to release")
        with self._lock:
            self._reserved[key] = max(self._reserved.get(key, 0) - amount, 0)

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
