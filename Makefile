# The course's commands. `make book` and `make test` build .venv from requirements.txt when
# needed, so they work on a fresh machine that has Python 3.11, make and git.
#
#   make book    build the HTML site into _build/html
#   make test    unit + structure tests, nbval (strict) on every notebook, strict site build,
#                browser tests of the built site
#   make lab     open JupyterLab on the notebooks
#   make bench   time every notebook (and memory, throughput) against its budget
#   make execute NB=chapters/01_depth_problem.ipynb   re-execute one notebook in place

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.requirements.sha256
NOTEBOOK_DIRS := $(wildcard chapters labs solutions)
# Reproducible hashing in kernels and tests; no telemetry or network from Jupyter Book tooling.
export PYTHONHASHSEED := 0
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help setup book test unit nbval nbval-threads build browser bench lab execute execute-all clean

help:
	@sed -n '1,10p' Makefile

# Create .venv if missing; (re)install only when requirements.txt or pyproject.toml changed.
setup:
	@set -e; \
	if [ ! -x $(BIN)/python ]; then \
	  echo ">> creating $(VENV) with $(PYTHON) -m venv"; $(PYTHON) -m venv $(VENV); \
	fi; \
	want=$$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1); \
	if [ "$$(cat $(STAMP) 2>/dev/null)" = "$$want" ]; then \
	  echo ">> $(VENV) is up to date with requirements.txt (install skipped)"; \
	else \
	  echo ">> installing requirements.txt into $(VENV) (a few minutes the first time)"; \
	  $(BIN)/python -m pip install --quiet --upgrade pip; \
	  $(BIN)/python -m pip install --quiet -r requirements.txt; \
	  echo "$$want" > $(STAMP); \
	fi

book: setup
	$(BIN)/jupyter-book build . --quiet
	@echo ">> site built: open file://$(CURDIR)/_build/html/index.html"

test: setup unit nbval build browser
	@echo ">> all tests passed"

# Unit tests of depthlab and structure tests of the book (fast, run first).
unit: setup
	$(BIN)/python -m pytest tests -q --ignore=tests/browser

# Strict nbval: every notebook is re-executed and its outputs compared with the committed ones.
# Two notebooks at a time (one per core), each kernel on ONE thread: the committed outputs were
# produced with the default thread count, so this also proves they do not depend on it.
NBVAL_WORKERS ?= 2
NBVAL := $(BIN)/python -m pytest --nbval --nbval-kernel-name python3 --nbval-cell-timeout 600 -q
nbval: setup
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 $(NBVAL) -n $(NBVAL_WORKERS) --dist loadfile $(NOTEBOOK_DIRS)

# The same, one notebook at a time with PyTorch's default thread count (not part of `make test`).
nbval-threads: setup
	DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 $(NBVAL) $(NOTEBOOK_DIRS)

# Strict build: any Sphinx warning (or nitpicky reference problem) fails it.
build: setup
	rm -rf _build/html
	$(BIN)/jupyter-book build . -W -n --keep-going --quiet

# The built site in headless Chromium, offline (skipped with a message when Chromium is missing).
# Screenshots of every page, light and dark, land in _build/screenshots/.
browser: setup
	@test -f _build/html/index.html || $(MAKE) --no-print-directory build
	$(BIN)/python -m pytest tests/browser -q -rs

# Execute every notebook in a fresh kernel; print time, peak memory and training throughput
# against the budgets; re-run every lab at seeds 1 and 2 and report whether its conclusions
# hold; write both tables to the book page running.md. BENCH_ARGS="--device cuda" for a GPU.
bench: setup
	$(BIN)/python tools/bench.py $(BENCH_ARGS)

lab: setup
	$(BIN)/jupyter lab --notebook-dir=.

# Re-execute one notebook top to bottom in a fresh kernel and store its outputs (then commit it).
# Stored outputs always come from the CPU at seed 0, which is what nbval compares against.
execute: setup
	@test -n "$(NB)" || (echo "usage: make execute NB=path/to/notebook.ipynb" && exit 2)
	DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 $(BIN)/python tools/execute.py $(NB)

execute-all: setup
	DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 $(BIN)/python tools/execute.py $(foreach d,$(NOTEBOOK_DIRS),$(wildcard $(d)/*.ipynb))

clean:
	rm -rf _build
