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

Seed robustness: every lab ends with :func:`depthlab.conclusions`, which glues each claim of its
verdict as ``holds_<name>``. After the timed pass (seed 0), each lab is executed again with
``DEPTHLAB_SEED=1`` and ``DEPTHLAB_SEED=2`` (``--seeds`` sets how many seeds in all), and a
second table says, for every claim, whether it held at every seed.

``--device cpu|cuda|auto`` sets ``DEPTHLAB_DEVICE`` for the kernels (default: auto, i.e. CUDA
when available); the page records which device the labs trained on.
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


def glued_claims(nb) -> dict[str, bool]:
    """The ``holds_<name>`` values a notebook glued with :func:`depthlab.conclusions`."""
    claims = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name", "")
            if name.startswith("holds_"):
                text = out["data"]["application/papermill.record/text/plain"]
                claims[name.removeprefix("holds_")] = text.strip() == "True"
    return claims


def run_notebook(path: Path, seed: int = 0) -> dict:
    """Execute ``path`` in a fresh kernel (outputs are not written back) and measure it.

    ``seed`` is passed to the kernel as ``DEPTHLAB_SEED`` (see :mod:`depthlab.reproduce`).
    """
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})
    # the kernel inherits this process's environment when it starts
    os.environ["DEPTHLAB_SEED"] = str(seed)
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
    stats["claims"] = glued_claims(nb)
    return stats


def notebooks(only: list[str]) -> list[Path]:
    paths = [p for d in FOLDERS for p in sorted((ROOT / d).glob("*.ipynb"))]
    if only:
        paths = [p for p in paths if any(o in str(p) for o in only)]
    return paths


NBSP = "\u00a0"  # keeps "18 s" and "20.3 (10 %)" on one line in a narrow table


def _name(path: str) -> str:
    """``labs/lab1_fifty_layers.ipynb`` -> ``lab1_fifty_layers`` (names are unique)."""
    return Path(path).stem


def table(rows: list[dict], peak: float) -> list[str]:
    """Markdown lines: one row per notebook with its measurements and ok/over."""
    lines = ["| notebook | time | peak memory | training GFLOP/s (% of peak) | status |",
             "|---|---:|---:|---:|---|"]
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
            over.append("GFLOP/s")
        rate_text = "-" if rate is None else f"{rate:.1f} ({100 * share:.0f}{NBSP}%)"
        lines.append(
            f"| {_name(r['path'])} | {r['seconds']:.0f}{NBSP}s | "
            f"{r['rss'] / 2**20:.0f}{NBSP}MiB | {rate_text.replace(' ', NBSP)} | "
            f"{'ok' if not over else 'over: ' + ', '.join(over)} |")
    return lines


def robustness_table(claims: dict[str, dict[int, dict[str, bool]]], seeds: list[int]):
    """Markdown lines: one row per lab claim, ``holds``/``FAILS`` per seed; and whether all held."""
    lines = ["| lab | conclusion | " + " | ".join(f"seed {s}" for s in seeds) + " |",
             "|---|---|" + "---|" * len(seeds)]
    every = True
    for lab, by_seed in claims.items():
        names = list(by_seed[seeds[0]])
        for name in names:
            marks = []
            for s in seeds:
                value = by_seed.get(s, {}).get(name)
                every &= bool(value)
                marks.append("missing" if value is None else "holds" if value else "**FAILS**")
            short = _name(lab).split("_")[0]  # lab1_fifty_layers -> lab1
            lines.append(f"| {short} | `{name}` | " + " | ".join(marks) + " |")
    return lines, every


def machine() -> dict:
    """What the page says about the machine and the software."""
    import matplotlib
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return dict(date=dt.date.today().isoformat(), cpu=cpu, cores=os.cpu_count(),
                threads=torch.get_num_threads(), python=platform.python_version(),
                torch=torch.__version__, numpy=numpy.__version__,
                matplotlib=matplotlib.__version__)


def render(results: dict) -> str:
    """The book page for the measurements in ``results`` (what :func:`measure` returns)."""
    m, rows, peak, seeds = results["machine"], results["rows"], results["peak"], results["seeds"]
    claims = {lab: {int(s): c for s, c in by_seed.items()}
              for lab, by_seed in results["claims"].items()}
    robust, every = robustness_table(claims, seeds)
    others = ", ".join(map(str, seeds[1:])) or "(no other seed)"
    total = sum(r["seconds"] for r in rows)
    page = [
        "# Running the course: time and hardware",
        "",
        "What executing each notebook cost when `make bench` last ran (it executes every notebook "
        "in a fresh kernel, as the tests do). Budgets: a chapter in 30 s, a lab or a solution in "
        "90 s, at most 2 GiB of memory, and a lab's training at least 25 % of the machine's own "
        "float32 matmul peak, measured in the same run; the status column says which budget a "
        "notebook is over.",
        "",
        f"* date: {m['date']}",
        f"* CPU: {m['cpu']}, {m['cores']} cores, {m['threads']} PyTorch threads",
        f"* labs trained on: {results['device']}",
        f"* float32 matmul peak (2048 x 2048): {peak:.1f} GFLOP/s",
        f"* Python {m['python']}, PyTorch {m['torch']}, NumPy {m['numpy']}, "
        f"matplotlib {m['matplotlib']}",
        f"* all {len(rows)} notebooks, one after the other: {total / 60:.1f} min",
        "",
        *table(rows, peak),
        "",
        "Training throughput is far below the 25 % budget everywhere: the networks are 32 units "
        "wide, so every matrix product is tiny and the time goes to Python and to PyTorch's "
        "per-operation overhead, not to arithmetic. The labs already train all the seeds and "
        "variants of one architecture as one batched computation "
        "(`depthlab.sweep.train_together`); closing the rest of the gap would take wider "
        "networks or larger batches, which would make every lab slower and show nothing new. "
        "The budget a learner feels, time, is met with room to spare.",
        "",
        "## Do the labs' conclusions depend on the seed?",
        "",
        "Each lab ends by checking the claims its verdict rests on (`depthlab.conclusions`). "
        f"`make bench` ran every lab again with `DEPTHLAB_SEED` set to {others}, "
        "which shifts every seed the lab uses for initialization and minibatches (the data stay "
        "the same). "
        + ("Every conclusion held at every seed." if every
           else "**Not every conclusion held at every seed**: see the rows marked FAILS."),
        "",
        *robust,
        "",
    ]
    return "\n".join(page)


def measure(only: list[str], seeds: list[int]) -> dict:
    """Execute the notebooks (and the labs again at ``seeds[1:]``); return what was measured."""
    from .reproduce import default_device

    device = default_device()
    threads = torch.get_num_threads()
    peak = matmul_peak_gflops()
    print(f"float32 matmul peak: {peak:.1f} GFLOP/s with {threads} threads", flush=True)
    rows = []
    for path in notebooks(only):
        rel = str(path.relative_to(ROOT))
        stats = run_notebook(path)
        stats["path"] = rel
        rows.append(stats)
        print(f"{rel}: {stats['seconds']:.1f} s, {stats['rss'] / 2**20:.0f} MiB", flush=True)
    print("\n".join(table(rows, peak)))
    print(f"total: {sum(r['seconds'] for r in rows) / 60:.1f} min for {len(rows)} notebooks")

    claims = {r["path"]: {0: r["claims"]} for r in rows if r["claims"]}
    for rel in claims:
        for seed in seeds[1:]:
            stats = run_notebook(ROOT / rel, seed=seed)
            claims[rel][seed] = stats["claims"]
            held = sum(stats["claims"].values())
            print(f"{rel} at seed {seed}: {held} of {len(stats['claims'])} conclusions hold "
                  f"({stats['seconds']:.0f} s)", flush=True)
    print("\n".join(robustness_table(claims, seeds)[0]))
    name = str(device) + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else "")
    return dict(machine=machine(), device=name, peak=peak, rows=rows, seeds=seeds,
                claims=claims)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run only notebooks whose path contains these")
    parser.add_argument("--page", default=str(ROOT / "running.md"),
                        help="where to write the book page (default: running.md)")
    parser.add_argument("--results", default=str(ROOT / "_build" / "bench.json"),
                        help="where to save the raw measurements (default: _build/bench.json)")
    parser.add_argument("--render-only", action="store_true",
                        help="do not execute anything: rewrite the page from --results")
    parser.add_argument("--seeds", type=int, default=3,
                        help="run every lab at seeds 0..N-1 and report whether its "
                             "conclusions hold at each (default 3; 1 skips the extra runs)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="DEPTHLAB_DEVICE for the kernels (default auto: CUDA if available)")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    results_path = Path(args.results)
    if args.render_only:
        if not results_path.exists():
            parser.error(f"--render-only needs saved results, and {results_path} does not "
                         f"exist: run `make bench` first")
        results = json.loads(results_path.read_text())
    else:
        os.environ["DEPTHLAB_DEVICE"] = args.device
        results = measure(args.only, list(range(args.seeds)))
        results_path.parent.mkdir(parents=True, exist_ok=True)
        results_path.write_text(json.dumps(results, indent=1))
        print(f"saved the measurements to {results_path}")
    if args.page:
        Path(args.page).write_text(render(results))
        print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
