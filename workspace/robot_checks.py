"""Checks of a :class:`~workspace.robot.Robot`'s constructor arguments: RobotLab's older ``mcp_servers=``, whole
numbers, the model settings, the budget ledger (shared with :mod:`workspace.robot_config`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from workspace.errors import ConfigurationError
from workspace.ledger import Ledger
from workspace.tools import selection


def _legacy_mcp_servers(robot: str, servers: Any, mcp: Any) -> Any:
    """RobotLab's older ``mcp_servers=[...]``: taken as ``mcp=`` (an empty list leaves ``mcp=`` as it is)."""
    if isinstance(servers, str | bytes | Mapping) or not isinstance(servers, Iterable):
        raise ValueError(f"Robot '{robot}': mcp_servers= must be a list of MCP servers, got {servers!r}; "
                         "give them as mcp=[...] (names from mcpServers, or {name, command|url} mappings)")
    servers = list(servers)
    if not servers:
        return mcp
    if not selection.is_inherit(mcp):
        raise ValueError(f"Robot '{robot}': both mcp= and mcp_servers= given; mcp_servers= is RobotLab's older "
                         "name for mcp=, so give the servers once, as mcp=[...]")
    return servers


def _whole(value: Any, what: str, robot: str, *, minimum: int) -> int | None:
    """``value`` checked as a whole number of at least ``minimum`` (None stays None)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"Robot '{robot}': {what} must be a whole number of at least {minimum} "
                                 f"(got {value!r})")
    return value


def _check_settings(settings: Mapping[str, Any], init: Callable[..., Any]) -> None:
    """``Robot(..., **settings)``: only the model settings, in range (pydantic is imported only here); ``init`` is
    ``Robot.__init__``, whose parameters are the other names an unknown setting may be a misspelling of."""
    from workspace.schemas.robot import check_settings

    params = [p for p in inspect.signature(init).parameters if p not in ("self", "settings")]
    check_settings(settings, also_known=params)


def _budget_ledger(robot: str, ledger: Ledger | None, tokens: int | None, cost: float | None) -> Ledger | None:
    """The robot's budget ledger: ``ledger=`` as given, or one with ``token_budget`` / ``cost_budget`` as limits."""
    if ledger is not None:
        if tokens is not None or cost is not None:
            raise ConfigurationError(f"Robot '{robot}': give token_budget= / cost_budget= or ledger=, not both "
                                     "(a shared ledger has its own limits: Ledger(limits={'tokens': ..., 'cost': ...}))")
        return ledger
    limits: dict[str, float] = {}
    if tokens is not None:
        limits["tokens"] = _whole(tokens, "token_budget", robot, minimum=1) or 0
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0:
            raise ConfigurationError(f"Robot '{robot}': cost_budget must be a number of US dollars, 0 or more "
                                     f"(got {cost!r})")
        limits["cost"] = float(cost)
    return Ledger(limits=limits) if limits else None
