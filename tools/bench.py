"""Measure what running the course costs: ``python tools/bench.py`` (``make bench``).

Every notebook in chapters/, labs/ and solutions/ is executed in a fresh kernel, as nbval does
(with the cell time limit of ``tools/execute.py``), and the book page ``running.md`` gives for
each one:

* the wall time of the execution, kernel start included, against its budget (a chapter 30 s,
  a lab 90 s, a solution notebook 60 s, on an idle 2-core machine);
* the time spent training: the bench wraps depthlab's training functions in the kernel before
  the notebook runs (:func:`install_training_meter`), so depthlab itself keeps no log;
* the kernel's peak memory (``resource.getrusage``'s ``ru_maxrss``: KiB on Linux, bytes on
  macOS), against a budget of 2 GiB.

Seed robustness: every lab ends with :func:`depthlab.conclusions`, which glues each claim of its
verdict as ``holds_<name>`` and raises ``ConclusionFailed`` if one does not hold. After the timed
pass (seed 0), every notebook with conclusions is executed again with ``DEPTHLAB_SEED=1`` and
``DEPTHLAB_SEED=2`` (``--seeds`` sets how many seeds in all), and a second table says, for every
claim, whether it held at every seed. A notebook whose conclusions fail is recorded (which claims
failed, and the error), not a reason to stop; so is a notebook that fails for another reason.

``--device cpu|cuda|auto`` sets ``DEPTHLAB_DEVICE`` for the kernels (default: auto, i.e. CUDA
when available); the page records which device the notebooks trained on. The measurements are
saved to ``_build/bench.json``; ``--render-only`` rewrites the page from them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import platform
import sys
import time
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import execute  # noqa: E402  (tools/execute.py: the course's nbclient settings)

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chapters", "labs", "solutions")
BUDGET_S = {"chapters": 30, "labs": 90, "solutions": 60}
BUDGET_MEMORY = 2 * 1024**3
NBSP = "\u00a0"  # keeps "18 s" and "12 s (40 %)" on one line in a narrow table


# ---------------------------------------------------------------- in the kernel


def install_training_meter(record):
    """Wrap depthlab's training functions so that every training run is timed into ``record``.

    Each outermost call of ``train``, ``train_many`` or ``train_sequence`` (however it is
    reached: ``dl.train``, ``train_together``, ``depth_sweep``...) appends
    ``{"seconds": ..., "examples": ...}``, where ``examples`` counts the training examples
    processed by all the models trained in that call (sequences, for ``train_sequence``).
    Returns a function that removes the wrappers. The bench runs this function's source in each
    kernel before the notebook; depthlab itself keeps no log.
    """
    import functools
    import sys
    import time

    import depthlab

    names = ("train", "train_many", "train_sequence")
    originals = {id(getattr(depthlab, name)): getattr(depthlab, name) for name in names}
    busy = []  # non-empty while a metered call runs: nested calls are not counted twice

    def examples(histories, args, kwargs):
        X = kwargs["X"] if "X" in kwargs else args[1]
        total = 0
        for h in histories:
            done = h.steps if h.diverged_at is None else h.diverged_at
            total += done * (h.meta.get("batch_size") or len(X))
        return total

    def meter(fn):
        @functools.wraps(fn)
        def metered(*args, **kwargs):
            if busy:
                return fn(*args, **kwargs)
            busy.append(fn)
            start = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
            finally:
                busy.pop()
            seconds = time.perf_counter() - start
            histories = out if isinstance(out, list) else [out]
            record.append({"seconds": seconds, "examples": examples(histories, args, kwargs)})
            return out

        metered.unmetered = fn
        return metered

    wrapped = {key: meter(fn) for key, fn in originals.items()}
    patched = []
    for name, module in list(sys.modules.items()):
        if name != "depthlab" and not name.startswith("depthlab."):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and id(value) in wrapped and value is originals[id(value)]:
                setattr(module, attr, wrapped[id(value)])
                patched.append((module, attr, value))

    def remove():
        for module, attr, value in patched:
            setattr(module, attr, value)

    return remove


_SETUP = inspect.getsource(install_training_meter) + """
_depthlab_bench_runs = []
install_training_meter(_depthlab_bench_runs)
del install_training_meter
"""

# Run in the kernel after the notebook: peak memory and the training runs, as one JSON line.
_PROBE = """
import json as _json, sys as _sys
try:
    import resource as _resource
    _peak = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss
    _peak *= 1 if _sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
except ImportError:  # Windows
    _peak = None
print(_json.dumps({"memory": _peak, "training": _depthlab_bench_runs}))
"""


# ---------------------------------------------------------------- running notebooks


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


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def _load() -> float | None:
    """The 1-minute load average (runnable processes), or None where the OS has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def run_notebook(path: Path, seed: int = 0, timeout: int = execute.CELL_TIMEOUT) -> dict:
    """Execute ``path`` in a fresh kernel (nothing is written back) and measure it.

    ``seed`` is passed to the kernel as ``DEPTHLAB_SEED`` (see :mod:`depthlab.reproduce`).
    Returns ``seconds``, ``memory`` (bytes, or None where it cannot be read), ``training``
    (seconds and examples of each training run), ``claims`` (glued ``holds_*``),
    ``conclusions_failed`` (the ``ConclusionFailed`` message, or None) and ``error`` (why the
    notebook stopped early, or None).
    """
    nb = nbformat.read(path, as_version=4)
    # executed as one notebook, never written back: the meter first, the probe last
    setup, probe = nbformat.v4.new_code_cell(_SETUP), nbformat.v4.new_code_cell(_PROBE)
    nb.cells = [setup, *nb.cells, probe]
    client = execute.new_client(nb, path, timeout=timeout)
    os.environ["DEPTHLAB_SEED"] = str(seed)  # the kernel inherits this process's environment
    stats = dict(memory=None, training=[], conclusions_failed=None, error=None,
                 load=_load())
    start = time.perf_counter()
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells[:-1]):
                try:
                    client.execute_cell(cell, index)
                except CellExecutionError as error:
                    if error.ename != "ConclusionFailed":
                        raise
                    stats["conclusions_failed"] = error.evalue
            stats["seconds"] = time.perf_counter() - start
            client.execute_cell(probe, len(nb.cells) - 1)
            stats.update(json.loads(_stdout(probe).strip().splitlines()[-1]))
    except Exception as error:  # noqa: BLE001 -- recorded; the bench goes on with the others
        stats["error"] = execute.failure(error, client, timeout).splitlines()[0]
        stats.setdefault("seconds", time.perf_counter() - start)
    finally:
        execute.finish(client)
    if stats["load"] is not None:  # the machine's load while the notebook ran: start and end
        stats["load"] = (stats["load"] + _load()) / 2
    stats["claims"] = glued_claims(nb)
    return stats


def notebooks(only: list[str]) -> list[Path]:
    paths = [p for d in FOLDERS for p in sorted((ROOT / d).glob("*.ipynb"))]
    if only:
        paths = [p for p in paths if any(o in str(p) for o in only)]
    return paths


# ---------------------------------------------------------------- the page


def _name(path: str) -> str:
    """``labs/lab1_fifty_layers.ipynb`` -> ``lab1_fifty_layers`` (names are unique)."""
    return Path(path).stem


def training_seconds(row: dict) -> float:
    return sum(run["seconds"] for run in row.get("training", []))


def over_budget(row: dict) -> list[str]:
    """Which budgets a notebook missed: ``time``, ``memory``, ``conclusions``, ``error``."""
    over = []
    if row.get("error"):
        over.append("error")
    if row.get("conclusions_failed"):
        over.append("conclusions")
    if row["seconds"] > BUDGET_S[row["path"].split("/")[0]]:
        over.append("time")
    if row.get("memory") is not None and row["memory"] > BUDGET_MEMORY:
        over.append("memory")
    return over


def table(rows: list[dict]) -> list[str]:
    """Markdown lines: one row per notebook with its measurements and ok/over."""
    lines = ["| notebook | time | of which training | peak memory | status |",
             "|---|---:|---:|---:|---|"]
    for r in rows:
        train = training_seconds(r)
        train_text = "-" if not r.get("training") else (
            f"{train:.0f}{NBSP}s ({100 * train / r['seconds']:.0f}{NBSP}%)")
        memory = "-" if r.get("memory") is None else f"{r['memory'] / 2**20:.0f}{NBSP}MiB"
        over = over_budget(r)
        lines.append(f"| {_name(r['path'])} | {r['seconds']:.0f}{NBSP}s | {train_text} | "
                     f"{memory} | {'ok' if not over else 'over: ' + ', '.join(over)} |")
    return lines


def robustness_table(claims: dict[str, dict[int, dict[str, bool]]], seeds: list[int]):
    """Markdown lines: one row per claim, ``holds``/``FAILS`` per seed; and whether all held."""
    lines = ["| notebook | conclusion | " + " | ".join(f"seed {s}" for s in seeds) + " |",
             "|---|---|" + "---|" * len(seeds)]
    every = True
    for path, by_seed in claims.items():
        names = list(dict.fromkeys(n for s in seeds for n in by_seed.get(s, {})))
        for name in names:
            marks = []
            for s in seeds:
                value = by_seed.get(s, {}).get(name)
                every &= bool(value)
                marks.append("missing" if value is None else "holds" if value else "**FAILS**")
            lines.append(f"| {_name(path)} | `{name}` | " + " | ".join(marks) + " |")
    return lines, every


def machine() -> dict:
    """What the page says about the machine and the software."""
    import matplotlib
    import numpy
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return dict(date=dt.date.today().isoformat(), cpu=cpu, cores=os.cpu_count(),
                threads=torch.get_num_threads(), python=platform.python_version(),
                torch=torch.__version__, numpy=numpy.__version__,
                matplotlib=matplotlib.__version__)


def _list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def mean_load(rows: list[dict]) -> float | None:
    loads = [r["load"] for r in rows if r.get("load") is not None]
    return sum(loads) / len(loads) if loads else None


def summary(rows: list[dict], cores: int | None = None) -> str:
    """The paragraph under the table, written from the measurements."""
    total = sum(r["seconds"] for r in rows)
    missed = [r for r in rows if over_budget(r)]
    if not missed:
        text = [f"All {len(rows)} notebooks ran within their time and memory budgets."]
    else:
        text = [f"{len(missed)} of {len(rows)} notebooks missed a budget or did not run "
                f"cleanly: {_list([_name(r['path']) for r in missed])} (see the status column)."]
    for folder, kind in (("chapters", "chapter"), ("labs", "lab"), ("solutions", "solution")):
        group = [r for r in rows if r["path"].startswith(folder + "/")]
        if group:
            slow = max(group, key=lambda r: r["seconds"])
            text.append(f"The slowest {kind} took {slow['seconds']:.0f} s "
                        f"({_name(slow['path'])}, budget {BUDGET_S[folder]} s).")
    train = sum(training_seconds(r) for r in rows)
    if total > 0 and train > 0:
        text.append(f"Training networks took {100 * train / total:.0f} % of the "
                    f"{total / 60:.1f} min; the rest is starting kernels, importing PyTorch, "
                    "probing networks and drawing figures.")
    measured = [r for r in rows if r.get("memory") is not None]
    if measured:
        big = max(measured, key=lambda r: r["memory"])
        text.append(f"No notebook needed more than {big['memory'] / 2**20:.0f} MiB of memory "
                    f"({_name(big['path'])}).")
    load = mean_load(rows)
    if load is not None and cores and load > 1.25 * cores:
        text.append(f"The machine was busy with other work during this run (load average "
                    f"{load:.1f} on {cores} cores), so these times are longer than on an idle "
                    "machine, and budgets missed on time may be met there.")
    return " ".join(text)


def render(results: dict) -> str:
    """The book page for the measurements in ``results`` (what :func:`measure` returns)."""
    m, rows, seeds = results["machine"], results["rows"], results["seeds"]
    claims = {path: {int(s): c for s, c in by_seed.items()}
              for path, by_seed in results["claims"].items()}
    robust, every = robustness_table(claims, seeds)
    others = ", ".join(map(str, seeds[1:]))
    total = sum(r["seconds"] for r in rows)
    page = [
        "# Running the course: time and memory",
        "",
        "What executing each notebook cost when `make bench` last ran. It executes every "
        "notebook in a fresh kernel, as the tests do, and compares the time with a budget: a "
        "chapter in 30 s, a lab in 90 s, a solution notebook in 60 s, and at most 2 GiB of "
        "memory. \"Of which training\" is the time spent inside depthlab's training functions.",
        "",
        f"* date: {m['date']}",
        f"* CPU: {m['cpu']}, {m['cores']} cores, {m['threads']} PyTorch threads",
        f"* networks trained on: {results['device']}",
        f"* Python {m['python']}, PyTorch {m['torch']}, NumPy {m['numpy']}, "
        f"matplotlib {m['matplotlib']}",
        f"* all {len(rows)} notebooks, one after the other: {total / 60:.1f} min",
        *([f"* load average of the machine during the run: {mean_load(rows):.1f}"]
          if mean_load(rows) is not None else []),
        "",
        *table(rows),
        "",
        summary(rows, m.get("cores")),
        "",
        "## Do the conclusions depend on the seed?",
        "",
    ]
    if not claims:
        page += ["No notebook checked its conclusions in this run.", ""]
        return "\n".join(page)
    if len(seeds) > 1:
        rerun = (f"`make bench` ran each of them again with `DEPTHLAB_SEED` set to {others}, "
                 "which shifts every seed the notebook uses for initialization and minibatches "
                 "(the data stay the same). ")
        verdict = ("Every conclusion held at every seed." if every else
                   "**Not every conclusion held at every seed**: see the rows marked FAILS.")
    else:
        rerun = "This run used seed 0 only (`--seeds 1`). "
        verdict = ("Every conclusion held." if every else
                   "**Not every conclusion held**: see the rows marked FAILS.")
    page += [
        f"{len(claims)} notebooks end by checking the claims their text rests on "
        f"(`depthlab.conclusions`). " + rerun + verdict,
        "",
        *robust,
        "",
    ]
    return "\n".join(page)


# ---------------------------------------------------------------- measuring


def _report(rel: str, stats: dict, seed: int) -> str:
    line = f"{rel} (seed {seed}): {stats['seconds']:.1f} s"
    if stats.get("memory") is not None:
        line += f", {stats['memory'] / 2**20:.0f} MiB"
    runs = stats.get("training", [])
    train = sum(r["seconds"] for r in runs)
    if train > 0:
        rate = sum(r["examples"] for r in runs) / train
        line += f", training {train:.1f} s ({rate:,.0f} examples/s)"
    if stats["claims"]:
        held = sum(stats["claims"].values())
        line += f", {held} of {len(stats['claims'])} conclusions hold"
    if stats.get("conclusions_failed"):
        line += f"\n  {stats['conclusions_failed']}"
    if stats.get("error"):
        line += f"\n  ERROR: {stats['error']}"
    return line


def measure(only: list[str], seeds: list[int], timeout: int = execute.CELL_TIMEOUT) -> dict:
    """Execute the notebooks (and those with conclusions again at ``seeds[1:]``)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from depthlab import default_device

    device = default_device()
    rows = []
    for path in notebooks(only):
        rel = str(path.relative_to(ROOT))
        stats = run_notebook(path, timeout=timeout)
        stats["path"] = rel
        rows.append(stats)
        print(_report(rel, stats, 0), flush=True)
    print("\n".join(table(rows)))
    print(summary(rows, os.cpu_count()))

    claims = {r["path"]: {0: r["claims"]} for r in rows if r["claims"]}
    for rel in claims:
        for seed in seeds[1:]:
            stats = run_notebook(ROOT / rel, seed=seed, timeout=timeout)
            claims[rel][seed] = stats["claims"]
            print(_report(rel, stats, seed), flush=True)
    print("\n".join(robustness_table(claims, seeds)[0]))
    name = str(device) + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else "")
    return dict(machine=machine(), device=name, rows=rows, seeds=seeds, claims=claims)


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
                        help="run every notebook with conclusions at seeds 0..N-1 and report "
                             "whether they hold at each (default 3; 1 skips the extra runs)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="DEPTHLAB_DEVICE for the kernels (default auto: CUDA if available)")
    parser.add_argument("--timeout", type=int, default=execute.CELL_TIMEOUT,
                        help=f"seconds one cell may run (default {execute.CELL_TIMEOUT})")
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
        results = measure(args.only, list(range(args.seeds)), args.timeout)
        results_path.parent.mkdir(parents=True, exist_ok=True)
        results_path.write_text(json.dumps(results, indent=1))
        print(f"saved the measurements to {results_path}")
    if args.page:
        Path(args.page).write_text(render(results))
        print(f"wrote {args.page}")
    failed = any(r.get("error") for r in results["rows"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
