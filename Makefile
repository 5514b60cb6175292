# Conveniences over the two set-up commands of the README:
#   scripts/run    start the desktop app (make run)
#   scripts/test   run the whole test suite (make test)

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: run test install install-dev bench bench-scale screenshot package clean lint typecheck

run:
	@scripts/run

test:
	@scripts/test

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

# The window at scale: each figure against its target, met or missed (bench/scale_report.py).
bench-scale: install-dev
	QT_QPA_PLATFORM=offscreen $(PY) bench/scale_report.py

screenshot: install-dev
	QT_QPA_PLATFORM=offscreen $(PY) scripts/screenshot.py docs/screenshot.png

package: install-dev
	@scripts/package.sh

clean:
	rm -rf build dist *.egg-info packaging/build packaging/dist
