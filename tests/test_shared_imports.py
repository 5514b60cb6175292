"""The garbage collector paused while libraries load, and what was loaded frozen out of later passes; pydantic
imported whole before a worker thread that imports the provider SDKs starts."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

from workspace.shared_imports import gc_paused, pause_gc, refreeze, resume_gc


@pytest.fixture(autouse=True)
def collector_on() -> object:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_pauses_nest_and_the_last_resume_freezes_and_restarts() -> None:
    frozen = gc.get_freeze_count()
    kept = [[i] for i in range(1000)]  # tracked objects that exist when the pause ends
    pause_gc()
    pause_gc()
    assert not gc.isenabled()
    resume_gc()
    assert not gc.isenabled()  # one pause still holds
    resume_gc()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(kept)  # out of later collections
    resume_gc()  # one too many: nothing happens
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_pause_ends_when_the_load_fails() -> None:
    with pytest.raises(ImportError), gc_paused():
        raise ImportError("no such library")
    assert gc.isenabled()


def test_pauses_from_two_threads_end_with_the_last_one() -> None:
    inside = threading.Event()
    leave = threading.Event()

    def load() -> None:
        with gc_paused():
            inside.set()
            leave.wait(5)

    worker = threading.Thread(target=load)
    worker.start()
    assert inside.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the worker's load goes on
    leave.set()
    worker.join(5)
    assert gc.isenabled()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_refreeze_frees_what_a_pause_froze_and_keeps_the_rest_frozen() -> None:
    """A pause's end freezes the cyclic garbage that exists then too: no collection frees it, a refreeze does (and
    what lives is frozen again); while a pause is on, a refreeze does nothing."""
    kept = [[i] for i in range(1000)]
    gc.disable()  # (no collection between the garbage made and the pause's end)
    garbage = weakref.ref(_Cycle())
    with gc_paused():
        pass
    gc.enable()
    gc.collect()
    assert garbage() is not None  # frozen with the rest
    with gc_paused():
        assert not refreeze()
    assert refreeze()
    assert garbage() is None
    walked = {id(o) for o in gc.get_objects()}
    assert gc.get_freeze_count() >= len(kept) and not any(id(k) in walked for k in kept)


#: Starts the command line's warm-up thread (``robotlab run``), and says, for each thread started, whether
#: pydantic was settled on the starting thread by then.
_WARM_UP_PROBE = """
import argparse, json, sys, threading
from workspace import shared_imports
started = []
original = threading.Thread.start
def start(self):
    started.append([self.name, shared_imports._settled])
    return original(self)
threading.Thread.start = start
from workspace.cli.run import _warm_up
_warm_up(argparse.Namespace(model="openai/gpt-4o-mini", api_base=None))
print(json.dumps(started))
"""


def test_the_command_lines_warm_up_thread_starts_after_pydantic_is_whole() -> None:
    """``robotlab run`` imports jinja2 and the model's SDK in a thread while the main thread reads the
    configuration and the robot, both importing pydantic's inner modules: the main thread imports them whole
    first (the packaged app failed once with "partially initialized module 'pydantic._internal._validators'")."""
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", _WARM_UP_PROBE], capture_output=True, text=True, cwd=root,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    started = json.loads(result.stdout.strip().splitlines()[-1])
    assert ["robotlab-warm-up", True] in started, started
