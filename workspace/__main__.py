"""``python -m workspace``: the headless command line."""

from __future__ import annotations

import sys

from workspace.cli import main

sys.exit(main())
