"""The virtual X server the window tests run on keeps its state when its last client leaves (``-noreset``).

Without it the server resets itself then, and a client connecting during the reset is dropped before its
setup is answered: a relaunch of the app right after it quit failed with "could not connect to display" on a
live server. A root-window property is the server's state a reset clears; it must survive a client leaving.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from tests.xvfb.xsession import XServer

pytestmark = [pytest.mark.xvfb, pytest.mark.timeout(60)]


@pytest.mark.parametrize("xserver", [(320, 240)], indirect=True, ids=["320x240"])
def test_the_server_keeps_its_state_when_the_last_client_leaves(xserver: XServer) -> None:
    if shutil.which("xprop") is None:
        pytest.skip("xprop is missing (Debian: apt-get install x11-utils)")
    env = {"DISPLAY": xserver.display, "PATH": "/usr/bin:/bin"}
    subprocess.run(["xprop", "-root", "-f", "_ROBOTLAB_PROBE", "8s", "-set", "_ROBOTLAB_PROBE", "kept"],
                   env=env, check=True, timeout=20)
    time.sleep(0.5)  # the reset, when there is one, comes right after the last client leaves
    shown = subprocess.run(["xprop", "-root", "_ROBOTLAB_PROBE"], env=env, check=True, timeout=20,
                           capture_output=True, text=True).stdout
    assert '"kept"' in shown, f"the X server reset itself when its last client left: {shown!r}"
    assert xserver.alive()
