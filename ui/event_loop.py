"""The window's asyncio loop: qasync's, on the QApplication, with a task's step never lost to a nested Qt loop.

qasync runs the loop's callbacks from Qt's event loop. When a task's step runs Qt's events itself (a nested loop:
``processEvents``, a dialog's ``exec``), a callback due meanwhile runs inside that step; a callback that steps
another task (its wakeup once what it awaits is done) then fails (``RuntimeError: Cannot enter into task ... while
another task ... is being executed``, logged and dropped) and that task is never stepped again: it stays pending
for good, and so does what it holds. Switching between two 2,000-turn threads, a bench pumping Qt's events from its
own task lost the inspector's load of each thread this way (``ui.window.docks.Docks.load_inspector``: its
``inspector-load`` task, kept by the window's :class:`~ui.tasks.TaskOwner`, holding the thread's transcript and
tool calls): 2,000 ``ToolCallRecord``, ``AnsiParser`` and ``TurnInfo`` and 17-20 MB more at every switch
(``bench/bench_ui_gc.py --switch``). :class:`WindowLoop` runs such a step once no task's step is running (it is
put off by :data:`DEFERRED_STEP_S` at a time), as a loop with no nested one would.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import qasync

#: How long (s) a task's step due inside another task's step waits before it looks again (a nested loop may run
#: for long, a dialog's: this is what it polls at).
DEFERRED_STEP_S = 0.01


class WindowLoop(qasync.QEventLoop):
    """qasync's loop whose tasks' steps wait for the task whose step runs a nested Qt loop (the module's
    docstring)."""

    def call_later(self, delay: float, callback: Any, *args: Any, context: contextvars.Context | None = None) -> Any:
        if isinstance(getattr(callback, "__self__", None), asyncio.Task):  # a task's step or wakeup
            context = contextvars.copy_context() if context is None else context
            return super().call_later(delay, self._step_alone, context, callback, *args, context=context)
        return super().call_later(delay, callback, *args, context=context)

    def _step_alone(self, context: contextvars.Context, step: Any, *args: Any) -> None:
        if asyncio.current_task(self) is None:
            step(*args)
        else:  # (inside another task's step, in a nested Qt loop: entering this task would fail)
            super().call_later(DEFERRED_STEP_S, self._step_alone, context, step, *args, context=context)
