# The course's commands. `make book`, `make test` and `make lab` build .venv when needed, so they
# work on a fresh Linux or macOS machine that has Python 3.11 or newer, make and git.
#
#   make book    build the HTML site into _build/html
#   make test    unit + structure tests, the learner-environment test, nbval (strict) on every
#                notebook, strict site build, browser tests of the built site
#   make lab     open JupyterLab on the notebooks
#   make bench   time every notebook (and memory, throughput) against its budget
#   make execute NB=chapters/01_depth_problem.ipynb   re-execute one notebook in place
#   make lock    regenerate the pinned requirements*.txt from requirements*.in (needs the network)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
NOTEBOOK_DIRS := $(wildcard chapters labs solutions)
# Reproducible hashing in kernels and tests; no telemetry or network from Jupyter Book tooling.
export PYTHONHASHSEED := 0
export PATH := $(CURDIR)/$(BIN):$(PATH)
# The committed outputs are what PyTorch computes with AVX2 kernels. On a CPU with AVX-512, PyTorch,
# oneDNN and MKL choose wider kernels that add floating-point numbers in another order; training a
# deep network amplifies that last bit until printed numbers differ (measured: chapter 7's gradient
# ratio after 20 SGD steps, 3.14 with AVX2 and 17.7 with AVX-512 on one AMD EPYC), and nbval fails.
# So every notebook run from here (nbval, execute, bench, lab) is capped at AVX2, which x86-64 CPUs
# have had since 2013; on ARM (Apple silicon) these are ignored and the printed digits may differ.
export ATEN_CPU_CAPABILITY := avx2
export ONEDNN_MAX_CPU_ISA := AVX2
export MKL_CBWR := AVX2

.PHONY: help setup book test unit learner nbval nbval-threads build browser bench lab execute \
        execute-all lock clean

help:
	@sed -n '1,11p' Makefile

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

# Unit tests of depthlab and structure tests of the book (fast, run first).
unit: setup
	$(BIN)/python -m pytest tests -q --ignore=tests/browser --ignore=tests/test_learner_env.py

# A fresh virtual environment with only what Colab gives plus depthlab installed by the notebooks'
# own first cell, offline from .venv/wheelhouse; runs a chapter and a lab top to bottom.
learner: setup
	$(BIN)/python -m pytest tests/test_learner_env.py -q -rs

# Strict nbval: every notebook is re-executed and its outputs compared with the committed ones.
# Two notebooks at a time (one per core), each kernel on ONE thread, as `make execute` stores them.
NBVAL_WORKERS ?= 2
NBVAL := $(BIN)/python -m pytest --nbval --nbval-kernel-name python3 --nbval-cell-timeout 600 -q
nbval: setup
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 $(NBVAL) -n $(NBVAL_WORKERS) --dist loadfile $(NOTEBOOK_DIRS)

# The same, one notebook at a time with PyTorch's default thread count (not part of `make test`).
# On some CPUs the digits of a multi-threaded run differ from the stored ones (see `execute`);
# that the conclusions hold at two threads, `make bench` checks at seeds 0-2.
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
# Stored outputs always come from the CPU at seed 0 on ONE thread, which is what nbval compares
# against: with more threads, how the libraries split the work depends on the CPU, so the order of
# the sums, and the digits after training, can change from one CPU to another.
EXECUTE := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 DEPTHLAB_DEVICE=cpu DEPTHLAB_SEED=0 \
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
