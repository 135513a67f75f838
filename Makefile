# The course's commands. `make book`, `make test` and `make lab` build .venv when needed, so they
# work on a fresh Linux or macOS machine that has Python 3.11 or newer, make and git.
#
#   make book    build the HTML site into _build/html
#   make test    unit + structure tests, the learner-environment test, nbval (portable) on every
#                notebook, strict site build, browser tests of the built site
#   make lab     open JupyterLab on the notebooks
#   make bench   time every notebook against its budget; check every conclusion over seeds,
#                thread counts and kernel sets (BENCH_ARGS="--matrix" for the whole matrix)
#   make execute NB=chapters/01_depth_problem.ipynb   re-execute one notebook in place
#   make nbval-strict   exact comparison, on the machine that re-executed the notebooks
#   make assignments    the labs as Otter-Grader assignments in _build/assignments: student
#                versions and autograders (instructors.md); make grade-check grades them all
#   make lock    regenerate the pinned requirements*.txt from requirements*.in (needs the network)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
NOTEBOOK_DIRS := $(wildcard chapters labs solutions)
# Reproducible hashing in kernels and tests; no telemetry or network from Jupyter Book tooling.
export PYTHONHASHSEED := 0
export PATH := $(CURDIR)/$(BIN):$(PATH)
# The digits of a trained network depend on the CPU (vendor, vector width), the thread count and
# the library paths PyTorch takes; `make test` does not compare them (see `nbval`). Storing
# outputs and comparing them exactly (`execute`, `nbval-strict`) pins what can be pinned on x86-64:
# PyTorch's, oneDNN's and MKL's AVX2 kernels, so that two CPUs of one vendor, with and without
# AVX-512, store the same digits. On ARM (Apple silicon) these settings do not exist: nothing is set.
ifneq ($(filter x86_64 amd64 i686,$(shell uname -m)),)
EXACT_KERNELS := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2
endif
ONE_THREAD := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

.PHONY: help setup book test unit learner nbval nbval-strict build browser bench assignments \
        grade-check lab execute execute-all lock clean

help:
	@sed -n '1,15p' Makefile

# Create .venv if missing and install requirements.txt (the learner's set, with the CPU build of
# torch on Linux without CUDA) and requirements-dev.txt (book build, tests, linters), only when
# they, pyproject.toml or tools/setup_venv.py changed. tools/setup_venv.py does it in Python:
# the Python-version check (3.11 or newer), the hash of the inputs, the torch index.
setup:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "!! $(PYTHON) not found: install Python 3.11 or newer, then run make PYTHON=python3.X ..." >&2; exit 1; }
	@$(PYTHON) tools/setup_venv.py --venv $(VENV)

book: setup
	$(BIN)/jupyter-book build . --quiet
	@echo ">> site built: open file://$(CURDIR)/_build/html/index.html"

test: setup unit learner nbval build browser
	@echo ">> all tests passed"

# Unit tests of depthlab and structure tests of the book (fast, run first), one process per core.
unit: setup
	$(BIN)/python -m pytest tests -q -n $(CORES) --ignore=tests/browser --ignore=tests/test_learner_env.py

# A fresh virtual environment with only what Colab gives plus depthlab installed by the notebooks'
# own first cell, offline from .venv/wheelhouse; runs a chapter and a lab top to bottom.
learner: setup
	$(BIN)/python -m pytest tests/test_learner_env.py -q -rs

# nbval, portable: every notebook is re-executed top to bottom, every check it makes
# (depthlab.conclusions) must hold, and its outputs are compared with the committed ones after
# tests/nbval/portable.cfg has masked what differs from machine to machine (numbers and other
# values that come out of a run, column widths). One notebook per core (at most 8: each kernel
# takes up to about 1 GB), each kernel on one thread; the slowest notebooks start first
# (tests/nbval/order.py), and a kernel that dies while starting (a port taken by another at the
# same moment) is started again (tests/nbval/kernels.py).
CORES := $(shell n=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2); [ "$$n" -gt 8 ] && n=8; echo $$n)
NBVAL_WORKERS ?= $(CORES)
DEPTHLAB_DEVICE ?= cpu
NBVAL := $(BIN)/python -m pytest --nbval --nbval-kernel-name python3 --nbval-cell-timeout 600 -q
# DEPTHLAB_TWINS=1: every dl.panel shows its no-kernel twin, as in the stored outputs (a learner's
# kernel shows the live slider instead; depthlab/book/twin.py).
NBVAL_ENV := $(ONE_THREAD) DEPTHLAB_DEVICE=$(DEPTHLAB_DEVICE) DEPTHLAB_SEED=0 DEPTHLAB_TWINS=1
nbval: setup
	$(NBVAL_ENV) PYTHONPATH=tests/nbval $(NBVAL) -p order -p kernels \
	  --nbval-sanitize-with tests/nbval/portable.cfg -n $(NBVAL_WORKERS) --dist loadfile \
	  $(NOTEBOOK_DIRS)

# nbval, exact: the committed outputs digit for digit. For maintainers, on the machine that
# re-executed the notebooks (`make execute-all`; the Running page says which machine stored
# each notebook): it catches any change at all, including in numbers. Not part of `make test`.
nbval-strict: setup
	$(EXACT_KERNELS) $(ONE_THREAD) DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 DEPTHLAB_TWINS=1 \
	  PYTHONPATH=tests/nbval $(NBVAL) -p order -p kernels \
	  -n $(NBVAL_WORKERS) --dist loadfile $(NOTEBOOK_DIRS)

# Strict build: any Sphinx warning (or nitpicky reference problem) fails it.
build: setup
	rm -rf _build/html
	$(BIN)/jupyter-book build . -W -n --keep-going --quiet

# The built site in headless Chromium, offline (skipped with a message when no browser is found;
# tests/browser/sitekit.py says where it looks), one page load per page (the dark theme by the
# theme's own button), one browser per core (at most 8).
# Screenshots of every page, light and dark, land in _build/screenshots/.
BROWSER_WORKERS ?= $(CORES)
browser: setup
	@test -f _build/html/index.html || $(MAKE) --no-print-directory build
	$(BIN)/python -m pytest tests/browser -q -rs -n $(BROWSER_WORKERS)

# Execute every notebook in a fresh kernel: time and peak memory against the budgets (seed 0,
# PyTorch's default threads, as a learner runs it); then every notebook that checks conclusions
# again over seeds, thread counts and kernel sets, with the worst value of every check against
# its threshold; both tables go to the book page running.md. BENCH_ARGS="--matrix" runs the
# whole matrix (seeds 0-4, one thread and two threads with ATEN_CPU_CAPABILITY=default);
# BENCH_ARGS="--device cuda" measures a GPU. See tools/bench.py.
bench: setup
	$(BIN)/python tools/bench.py $(BENCH_ARGS)

# The labs as Otter-Grader assignments (the page instructors.md): for each lab, from the lab, its
# solutions notebook and the dl.check checks, Otter's master notebook, the student version
# (answers removed) and the autograder, in _build/assignments/<lab>/ (LABS="lab1 lab3" for some).
# grade-check runs the autograder (otter run, no Docker) on every lab's solutions (full marks)
# and on its blank student version (no marks, the checks' verdicts shown), each executed top to
# bottom as Otter grades a submission: minutes per lab. tests/test_assignments.py, in `make
# test`, proves the same for Lab 1 in seconds.
LABS ?=
assignments: setup
	$(BIN)/python tools/assignments.py build $(LABS)

grade-check: setup
	$(NBVAL_ENV) $(BIN)/python tools/assignments.py build $(LABS)
	$(NBVAL_ENV) $(BIN)/python tools/assignments.py grade-check $(LABS)

lab: setup
	$(BIN)/jupyter lab --notebook-dir=.

# Re-execute one notebook top to bottom in a fresh kernel and store its outputs (then commit it).
# Stored outputs come from the CPU at seed 0 on one thread with the x86-64 kernels pinned
# (EXACT_KERNELS), so that `make nbval-strict` on the same machine reproduces them digit for
# digit; tools/execute.py records the machine in the notebook's metadata (the Running page).
EXECUTE := $(EXACT_KERNELS) $(ONE_THREAD) DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 DEPTHLAB_TWINS=1 \
  $(BIN)/python tools/execute.py
execute: setup
	@test -n "$(NB)" || (echo "usage: make execute NB=path/to/notebook.ipynb" && exit 2)
	$(EXECUTE) $(NB)

execute-all: setup
	$(EXECUTE) $(foreach d,$(NOTEBOOK_DIRS),$(wildcard $(d)/*.ipynb))

# Regenerate the pinned requirements from requirements.in and requirements-dev.in with uv, for
# Linux, macOS and Windows and Python 3.11 or newer. Current pins are kept unless UPGRADE=1
# (every package to its newest release) or UPGRADE="pkg1 pkg2". The CUDA libraries that PyPI's
# Linux torch wheel depends on are left out: the CPU build needs none of them, and on a GPU
# machine pip installs the exact versions torch itself pins. After a torch upgrade, add any new
# CUDA package to the list (tests/test_makefile.py fails on a lock that holds one).
TORCH_CUDA_STACK := triton cuda-bindings cuda-pathfinder cuda-toolkit nvidia-cublas \
  nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft \
  nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 \
  nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx
UPGRADE ?=
UV_COMPILE = $(BIN)/uv pip compile --quiet --universal --python-version 3.11 \
  --custom-compile-command "make lock" $(addprefix --no-emit-package ,$(TORCH_CUDA_STACK)) \
  $(if $(filter 1,$(UPGRADE)),--upgrade,$(addprefix --upgrade-package ,$(UPGRADE)))
lock: setup
	@echo ">> uv pip compile requirements.in -> requirements.txt"
	@$(UV_COMPILE) requirements.in -o requirements.txt
	@echo ">> uv pip compile requirements-dev.in -> requirements-dev.txt"
	@$(UV_COMPILE) requirements-dev.in -o requirements-dev.txt

clean:
	rm -rf _build
