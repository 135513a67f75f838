"""Re-execute notebooks top to bottom in a fresh kernel and store their outputs in place.

    python tools/execute.py [--timeout SECONDS] chapters/01_depth_problem.ipynb [more.ipynb ...]

This is what ``make execute NB=...`` and ``make execute-all`` run. nbclient does the work (a new
``python3`` kernel started in the notebook's own folder, as nbval does; cells run in order; a
cell tagged ``raises-exception`` may raise, any other error stops that notebook). What the course
adds:

* the notebook is written back without widget state (a blob that changes on every run and that
  the static site does not need: its no-kernel twin panels are plain HTML) and without per-cell
  timestamps;
* every cell has a time limit (``--timeout``, default 600 s as for nbval in ``make test``; no
  cell of the course needs more than a minute on an idle machine), enforced twice: by nbclient, and by a watchdog that kills the kernel if
  nbclient is still waiting a minute later, so a lost message can never hang ``make execute``;
* the kernel talks to nbclient over TCP, as nbval's kernels do (Unix sockets, used before,
  lost a cell's reply now and then on one machine: see ``new_client``);
* a notebook that fails is left as it was (its committed outputs stay), the others still run,
  and the exit status says whether all of them succeeded;
* every ``dl.panel`` is stored as its no-kernel twin (the kernel gets ``DEPTHLAB_TWINS=1``;
  a learner's kernel shows the live slider instead);
* the notebook's metadata records where its outputs come from (``depthlab.executed``: the CPU,
  the operating system, Python and PyTorch, the thread count and kernel set the kernel ran
  with, the device and the date); the book's Running page lists it for every notebook
  (``_ext/provenance.py``), and ``make nbval-strict`` reproduces the outputs exactly only on
  such a machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

CELL_TIMEOUT = 600  # seconds per cell, as nbval's --nbval-cell-timeout in the Makefile
# Kernel starts per notebook. Two kernels started at the same moment (by another command, or by
# the unit tests' two workers) can choose the same free TCP port, a known race of jupyter_client;
# the loser dies before it replies. Nothing in the notebook has run then, so it is started again,
# as tests/nbval/kernels.py does for nbval.
KERNEL_STARTS = 3
WATCHDOG_GRACE = 60  # seconds after the cell timeout before the watchdog kills the kernel


class Watchdog:
    """Kill the kernel when one cell has run ``limit`` seconds (nbclient then reports it dead).

    Armed and disarmed by nbclient's ``on_cell_execute`` / ``on_cell_executed`` hooks.
    """

    def __init__(self, limit: float):
        self.limit = limit
        self.client: NotebookClient | None = None
        self.fired = False
        self._timer: threading.Timer | None = None

    def arm(self, cell=None, cell_index=None, **_):
        self.disarm()
        self._timer = threading.Timer(self.limit, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def disarm(self, **_):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _kill(self):
        km = getattr(self.client, "km", None)
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None:
            self.fired = True
            process.kill()


def new_client(nb, path: Path, *, timeout: int = CELL_TIMEOUT,
               grace: float = WATCHDOG_GRACE) -> NotebookClient:
    """An nbclient ``NotebookClient`` for ``nb`` (read from ``path``) with the course's settings.

    Call :func:`finish` on the client after executing, so the watchdog stops.
    """
    watchdog = Watchdog(timeout + grace)
    # nbclient's default transport, TCP, as nbval uses. Unix-socket kernels (transport "ipc")
    # were used until 2026-11-25, when five executions hung on one machine with the kernel
    # idle and the client still waiting for a cell's reply, until the watchdog killed them.
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        # nbclient needs the widget state while it runs (its Output-widget capture fails
        # without it); write() drops it from the file
        store_widget_state=True,
        record_timing=False,  # no per-cell timestamps: they change on every run
        on_cell_execute=watchdog.arm, on_cell_executed=watchdog.disarm)
    watchdog.client = client
    client.watchdog = watchdog
    return client


def finish(client: NotebookClient) -> None:
    """Stop the client's watchdog (after the last cell, or after an error)."""
    client.watchdog.disarm()


@contextmanager
def running_kernel(nb, path: Path, *, timeout: int = CELL_TIMEOUT, env: dict | None = None):
    """A :func:`new_client` for ``nb`` with its kernel running (environment ``env``, or this
    process's), shut down and its watchdog stopped on leaving. A kernel that dies while starting
    is started again, up to :data:`KERNEL_STARTS` times in all."""
    for attempt in range(1, KERNEL_STARTS + 1):
        client = new_client(nb, path, timeout=timeout)
        with ExitStack() as stack:
            stack.callback(finish, client)
            try:
                stack.enter_context(client.setup_kernel(**({"env": env} if env else {})))
            except RuntimeError:  # it died before replying: no cell has run
                if attempt == KERNEL_STARTS:
                    raise
                continue
            yield client
            return


def failure(error: Exception, client: NotebookClient | None, timeout: int) -> str:
    """One message saying why executing a notebook failed (``client`` None: no kernel ran)."""
    fired = client is not None and client.watchdog.fired
    if isinstance(error, CellTimeoutError) or fired:
        return (f"a cell ran longer than {timeout} s and was stopped (--timeout sets the "
                f"limit; on an idle machine the course's cells need under a minute)")
    if isinstance(error, DeadKernelError):
        return "the kernel died (out of memory?)"
    if isinstance(error, CellExecutionError):
        return f"a cell raised {error.ename}: {error.evalue}\n{error}"
    return f"{type(error).__name__}: {error}"


def cpu_name() -> str:
    """The CPU's model name ("AMD EPYC", "Intel(R) Xeon(R) Processor", "Apple M2"), or the
    architecture where the system does not say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:  # Linux
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], check=True,
                                  capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


# What the kernel reports about itself after the notebook ran (one line of JSON).
_ABOUT_KERNEL = """
import json as _json, platform as _platform, torch as _torch
print(_json.dumps({"python": _platform.python_version(), "torch": _torch.__version__,
                   "threads": _torch.get_num_threads(),
                   "kernels": _torch.backends.cpu.get_cpu_capability()}))
"""


def provenance(about_kernel: dict) -> dict:
    """Where a notebook's stored outputs come from: this machine and the kernel that ran it."""
    return {
        "cpu": cpu_name(),
        "system": f"{platform.system()} {platform.machine()}",
        "python": about_kernel.get("python", platform.python_version()),
        "torch": about_kernel.get("torch"),
        # torch's thread count at the end: notebooks that set their own show it
        "threads": about_kernel.get("threads"),
        "kernels": about_kernel.get("kernels"),
        "device": os.environ.get("DEPTHLAB_DEVICE", "auto"),
        "date": dt.date.today().isoformat(),
    }


def execute(path: Path, timeout: int = CELL_TIMEOUT) -> float:
    """Execute the notebook at ``path`` in place; return its wall time in seconds.

    Raises ``RuntimeError`` with the reason if a cell fails or runs out of time; the file is
    then left unchanged.
    """
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    probe = nbformat.v4.new_code_cell(_ABOUT_KERNEL)
    cells = list(nb.cells)
    nb.cells.append(probe)  # run after the notebook, never written
    client = None
    try:
        # the outputs the book is built from: every dl.panel as its no-kernel twin
        twins = {**os.environ, "DEPTHLAB_TWINS": "1"}
        with running_kernel(nb, path, timeout=timeout, env=twins) as client:
            start = time.perf_counter()
            for index, cell in enumerate(cells):
                client.execute_cell(cell, index)
            seconds = time.perf_counter() - start
            client.execute_cell(probe, len(cells))
    except Exception as error:  # noqa: BLE001 -- reported with its reason below
        raise RuntimeError(failure(error, client, timeout)) from error
    finally:
        nb.cells = cells
    printed = "".join(o.get("text", "") for o in probe.get("outputs", [])
                      if o.get("name") == "stdout").strip()
    try:
        about = json.loads(printed.splitlines()[-1])
    except (IndexError, ValueError):  # the record then says what this process knows
        about = {}
    nb.metadata.pop("widgets", None)
    nb.metadata.setdefault("depthlab", {})["executed"] = provenance(about)
    nbformat.write(nb, path)
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", help="notebook files to execute in place")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT,
                        help=f"seconds one cell may run (default {CELL_TIMEOUT})")
    args = parser.parse_args(argv)
    if args.timeout < 1:
        parser.error(f"--timeout must be at least 1 second, got {args.timeout}")
    paths = [Path(name) for name in args.notebooks]
    for path in paths:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"not a notebook file: {path}")
    failed = []
    for path in paths:
        try:
            seconds = execute(path, args.timeout)
        except RuntimeError as error:
            print(f"{path}: FAILED, left unchanged: {error}", file=sys.stderr, flush=True)
            failed.append(path)
            continue
        print(f"{path}: executed in {seconds:.1f} s", flush=True)
    if failed:
        print(f"{len(failed)} of {len(paths)} notebooks failed: "
              + ", ".join(map(str, failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
