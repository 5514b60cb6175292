"""The parts of the window's session model (:class:`ui.controller.Controller`), one responsibility each, as a chain
of classes (each the base of the next, so mypy follows every call): ``state`` (its signals and state, the store, the
open thread), ``targets`` (the robots and networks new threads talk to), ``approvals`` (approvals waiting, memory
writes, what robots learnt), ``runs`` (the runs it follows, shows and stops), ``threads`` (the thread list)."""
