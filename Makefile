# Robot Retarget developer tasks. Everything runs from the repo's .venv.
#   make setup   create .venv (Python 3.11, as Blender's) with requirements-dev.txt
#   make test    run the test suite (core math + real bpy extension tests)
#   make test-lts  the Blender tests again on Blender 4.5 LTS (bpy 4.5 in .venv-lts)
#   make build   build the extension zip for this platform into dist/
#   make dist    build one zip per Blender platform into dist/
#   make demo    run tools/demo.py
#   make bench   run the animation-write benchmark
#   make clean   remove build outputs (keeps .venv and the wheels/ cache)

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements.stamp

.PHONY: setup test test-lts build dist demo bench clean distclean

setup: $(STAMP)

# Python 3.11 only: bpy 5.0 (and Blender 4.5/5.0's own Python) is 3.11.
$(STAMP): requirements-dev.txt
	@set -e; \
	if [ ! -x $(PY) ]; then \
	  if command -v python3.11 >/dev/null 2>&1; then BASE=python3.11; \
	  elif command -v python3 >/dev/null 2>&1 && \
	       python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then BASE=python3; \
	  else echo "make setup: Python 3.11 is required (bpy 5.0 wheels are cp311 only): install python3.11" >&2; exit 1; fi; \
	  echo "make setup: creating $(VENV) with $$BASE"; \
	  $$BASE -m venv $(VENV); \
	fi; \
	$(PY) -m pip install --disable-pip-version-check -q --upgrade pip; \
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt; \
	touch $(STAMP)

test: setup
	$(PY) -m pytest

# blender_version_min is 4.5.0: the extension must load and work on the LTS too.
LTS_VENV := .venv-lts
LTS_STAMP := $(LTS_VENV)/.requirements.stamp
$(LTS_STAMP): requirements-dev.txt $(STAMP)
	@set -e; \
	[ -x $(LTS_VENV)/bin/python ] || $(PY) -m venv $(LTS_VENV); \
	$(LTS_VENV)/bin/python -m pip install --disable-pip-version-check -q "bpy==4.5.15" \
	  $$(grep -E '^(numpy|scipy|pytest)' requirements-dev.txt); \
	touch $(LTS_STAMP)

test-lts: $(LTS_STAMP)
	$(LTS_VENV)/bin/python -m pytest tests/blender

build: setup
	$(PY) tools/build_extension.py

dist: setup
	$(PY) tools/build_extension.py --all-platforms

demo: setup
	$(PY) tools/demo.py

bench: setup
	$(PY) bench/bench_write_keys.py

clean:
	rm -rf build dist out .pytest_cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(LTS_VENV) wheels
