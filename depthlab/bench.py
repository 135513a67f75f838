"""Measure what running the course costs: ``python -m depthlab.bench`` (``make bench``).

Every notebook in chapters/, labs/ and solutions/ is executed in a fresh kernel, as nbval does,
and the table printed and written to ``running.md`` (a page of the book) gives for each one:

* wall time of the execution (kernel start included);
* peak memory: the kernel's peak resident set size (``VmHWM`` from ``/proc``, read at the end);
* for notebooks that train, the training throughput of all :func:`depthlab.train` calls in it,
  in GFLOP/s (the FLOPs of the linear layers, 6 per weight per example per step: 2 forward,
  4 backward), next to the float32 matmul peak of this machine measured in the same run, and
  their ratio.

Each figure is compared with its budget (chapter <= 30 s, lab <= 90 s, peak memory <= 2 GiB, lab
training throughput >= 25 % of the matmul peak) and marked ``ok`` or ``OVER``. Budgets are
reported, not enforced: timing tests fail on a busy machine for reasons that are not bugs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chapters", "labs", "solutions")
BUDGET_S = {"chapters": 30, "labs": 90, "solutions": 90}
BUDGET_RSS = 2 * 1024**3
BUDGET_EFFICIENCY = 0.25

# Run in the kernel after the notebook: the kernel's peak RSS and depthlab's training log.
_PROBE = """
import json as _json, re as _re
_hwm = int(_re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1]) * 1024
try:
    from depthlab.train import TRAINING_LOG as _log
    _flops, _secs = sum(r[0] for r in _log), sum(r[1] for r in _log)
except ImportError:
    _flops = _secs = 0
print(_json.dumps({"rss": _hwm, "flops": _flops, "train_s": _secs}))
"""


def matmul_peak_gflops(n: int = 2048, repeats: int = 10) -> float:
    """Best float32 matmul rate of this machine (GFLOP/s) with the current thread setting."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def run_notebook(path: Path) -> dict:
    """Execute ``path`` in a fresh kernel (outputs are not written back) and measure it."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - start
        probe = nbformat.v4.new_code_cell(_PROBE)
        nb.cells.append(probe)
        client.execute_cell(probe, len(nb.cells) - 1)
    text = "".join(o.get("text", "") for o in probe.outputs if o.get("name") == "stdout")
    stats = json.loads(text.strip().splitlines()[-1])
    stats["seconds"] = seconds
    return stats


def notebooks(only: list[str]) -> list[Path]:
    paths = [p for d in FOLDERS for p in sorted((ROOT / d).glob("*.ipynb"))]
    if only:
        paths = [p for p in paths if any(o in str(p) for o in only)]
    return paths


def table(rows: list[dict], peak: float) -> list[str]:
    lines = ["| notebook | wall time | budget | peak memory | training GFLOP/s | "
             "% of matmul peak | status |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        folder = r["path"].split("/")[0]
        budget = BUDGET_S[folder]
        over = []
        if r["seconds"] > budget:
            over.append("time")
        if r["rss"] > BUDGET_RSS:
            over.append("memory")
        rate = r["flops"] / r["train_s"] / 1e9 if r["train_s"] > 0 else None
        share = rate / peak if rate else None
        if folder == "labs" and share is not None and share < BUDGET_EFFICIENCY:
            over.append("throughput")
        lines.append(
            f"| `{r['path']}` | {r['seconds']:.1f} s | {budget} s | {r['rss'] / 2**20:.0f} MiB | "
            f"{'-' if rate is None else f'{rate:.1f}'} | "
            f"{'-' if share is None else f'{100 * share:.0f} %'} | "
            f"{'ok' if not over else 'OVER: ' + ', '.join(over)} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run only notebooks whose path contains these")
    parser.add_argument("--page", default=str(ROOT / "running.md"),
                        help="where to write the book page (default: running.md)")
    args = parser.parse_args(argv)

    threads = torch.get_num_threads()
    peak = matmul_peak_gflops()
    print(f"float32 matmul peak: {peak:.1f} GFLOP/s with {threads} threads", flush=True)
    rows = []
    for path in notebooks(args.only):
        rel = str(path.relative_to(ROOT))
        stats = run_notebook(path)
        stats["path"] = rel
        rows.append(stats)
        print(f"{rel}: {stats['seconds']:.1f} s, {stats['rss'] / 2**20:.0f} MiB", flush=True)
    lines = table(rows, peak)
    total = sum(r["seconds"] for r in rows)
    print("\n".join(lines))
    print(f"total: {total / 60:.1f} min for {len(rows)} notebooks")

    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import matplotlib
    import numpy

    page = [
        "# Running the course: time and hardware",
        "",
        "What executing each notebook cost when `make bench` last ran (it executes every notebook "
        "in a fresh kernel, as the tests do). Budgets: a chapter in 30 s, a lab in 90 s, at most "
        "2 GiB of memory, and a lab's training at least 25 % of the machine's own float32 matmul "
        "peak, measured in the same run.",
        "",
        f"* date: {dt.date.today().isoformat()}",
        f"* CPU: {cpu}, {os.cpu_count()} cores, {threads} PyTorch threads",
        f"* float32 matmul peak (2048 x 2048): {peak:.1f} GFLOP/s",
        f"* Python {platform.python_version()}, PyTorch {torch.__version__}, "
        f"NumPy {numpy.__version__}, matplotlib {matplotlib.__version__}",
        f"* all notebooks: {total / 60:.1f} min",
        "",
        *lines,
        "",
        "Small networks spend most of their time in Python and PyTorch's per-operation overhead, "
        "not in arithmetic, so their share of the matmul peak is low; the training throughput "
        "column says how far each lab is from the hardware's limit.",
        "",
    ]
    if args.page:
        Path(args.page).write_text("\n".join(page))
        print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
