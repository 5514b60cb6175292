# RobotLab Workspace: two commands do all the set-up.
#   make run    start the desktop app (works offline, with no API key)
#   make test   run the whole test suite (lint, type check, tests)
# Both install what they need first: a virtual environment in .venv, the Python
# packages, the MCP reference servers (npm) for the tests, and the system libraries
# Qt needs when they are missing (Debian/Ubuntu, with root or sudo).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: run test install install-dev bench screenshot package clean lint typecheck

run: install
	@scripts/run-app.sh

test: install-dev
	$(VENV)/bin/ruff check workspace ui tests bench packaging
	$(VENV)/bin/mypy
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/pytest -q -p no:cacheprovider

install:
	@PYTHON=$(PYTHON) VENV=$(VENV) scripts/bootstrap.sh app

install-dev:
	@PYTHON=$(PYTHON) VENV=$(VENV) scripts/bootstrap.sh dev

lint: install-dev
	$(VENV)/bin/ruff check workspace ui tests bench packaging

typecheck: install-dev
	$(VENV)/bin/mypy

bench: install-dev
	@for f in bench/bench_*.py; do echo "== $$f"; QT_QPA_PLATFORM=offscreen $(PY) $$f || exit 1; done

screenshot: install-dev
	QT_QPA_PLATFORM=offscreen $(PY) scripts/screenshot.py docs/screenshot.png

package: install-dev
	@scripts/package.sh

clean:
	rm -rf build dist *.egg-info packaging/build packaging/dist
