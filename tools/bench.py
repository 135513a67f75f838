"""Measure what running the course costs, and whether its conclusions hold on every machine:
``python tools/bench.py`` (``make bench``).

Every notebook in chapters/, labs/ and solutions/ is executed in a fresh kernel, as nbval does
(with the cell time limit of ``tools/execute.py``), one after the other, at seed 0 and as a
learner runs it (PyTorch's default thread count, the CPU's own kernels). The book page
``running_measured.md``, which the page ``running.md`` includes, gives for each one:

* the wall time of the execution, kernel start included, against its budget (a chapter 30 s,
  a lab 90 s, a solution notebook 60 s, on an idle 2-core machine);
* the time spent training: the bench wraps depthlab's training functions in the kernel before
  the notebook runs (:func:`install_training_meter`), so depthlab itself keeps no log;
* the kernel's peak memory (``resource.getrusage``'s ``ru_maxrss``: KiB on Linux, bytes on
  macOS), against a budget of 2 GiB.

The seconds per notebook also go to ``tests/nbval/durations.json``, from which ``make test``
starts the slowest notebooks first.

Do the conclusions hold on every machine? Every notebook ends with :func:`depthlab.conclusions`,
which glues each check as ``check_<name>`` (its measured value, operator, threshold, and when it
was written) and raises ``ConclusionFailed`` if one does not hold. After the timed pass, every
notebook with checks is executed again in each configuration of a matrix (:data:`CONFIGS`: seeds,
thread counts, PyTorch's kernel set), and the page shows, for every check, its worst value over
all the runs against its threshold, and in which run, so a check that only just holds is visible.
The default matrix is seeds 0-2 on one thread; ``--matrix`` runs seeds 0-4 on one thread and on
two threads with ``ATEN_CPU_CAPABILITY=default`` (PyTorch's scalar kernels, which change the digits
of a trained network the way another CPU does); ``--config`` runs one of the two alone (after a
change only one of them sees). Runs on one thread go two at a time (``--jobs``).
A notebook whose conclusions fail is recorded (which checks failed, and the error), not a reason
to stop; so is a notebook that fails for another reason.

Do the worked solutions pass the labs' exercise checks? Every run also records what each
``dl.check`` printed (:func:`exercise_verdicts`), and the page says whether the solution
notebooks' answers were judged right in every run: each such run tests the ranges those checks
accept.

``--device cpu|cuda|auto`` sets ``DEPTHLAB_DEVICE`` for the kernels (default: auto, i.e. CUDA
when available); the page records which device the notebooks trained on. The measurements are
kept in ``tools/bench_results.json`` (committed, so that the page can be rewritten with
``--render-only``). A run over some notebooks (``make bench BENCH_ARGS="--matrix labs/lab1"``)
replaces what the file held for those notebooks and keeps the others, so a notebook that changed
can be measured again alone; the page names every machine and date its measurements come from.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import inspect
import json
import math
import os
import platform
import re
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
DURATIONS = ROOT / "tests" / "nbval" / "durations.json"

# The configurations a notebook's checks are run in: environment variables for its kernel. The
# timed pass is "learner"; the robustness runs use the others.
LEARNER = "learner"
ONE_THREAD = "1 thread"
OTHER_KERNELS = "2 threads, default kernels"
CONFIGS = {
    LEARNER: {},  # PyTorch's default thread count and the CPU's own kernels
    ONE_THREAD: {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    OTHER_KERNELS: {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
                    "ATEN_CPU_CAPABILITY": "default"},
}
CLOSE = 0.1  # a check whose worst value is within 10 % of its threshold is marked as close


# ---------------------------------------------------------------- in the kernel


def install_training_meter(record):
    """Wrap depthlab's training functions so that every training run is timed into ``record``.

    Each outermost call of ``train``, ``train_many`` or ``train_sequence`` (however it is
    reached: ``dl.train``, ``train_together``, ``train_resnet``...) appends
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


def glued_checks(nb) -> dict[str, dict]:
    """The ``check_<name>`` records a notebook glued with :func:`depthlab.conclusions`."""
    checks = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name", "")
            if name.startswith("check_"):
                text = out["data"]["application/papermill.record/text/plain"]
                # myst-nb glues a str as its repr: a JSON object between quotes
                checks[name.removeprefix("check_")] = json.loads(eval_str(text))
    return checks


# what dl.check prints first after "[labN.M] ", and the status it stands for
_VERDICTS = {"Right": "right", "Hint": "hint", "Not yet": "not yet", "Wrong form": "form"}
_VERDICT_LINE = re.compile(r"^\[(lab\d+\.\d+)\] (" + "|".join(_VERDICTS) + ")\\b", re.M)


def exercise_verdicts(nb) -> dict[str, str]:
    """What every ``dl.check`` in ``nb`` said, read from the cells' printed output:
    ``{exercise: status}`` (``right``, ``hint``, ``not yet`` or ``form``; the last call wins)."""
    verdicts = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            for exercise, said in _VERDICT_LINE.findall(_stdout(cell)):
                verdicts[exercise] = _VERDICTS[said]
    return verdicts


def eval_str(text: str) -> str:
    """The string that a Python string literal (a repr) stands for."""
    import ast

    return ast.literal_eval(text.strip())


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def _load() -> float | None:
    """The 1-minute load average (runnable processes), or None where the OS has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def run_notebook(path: Path, seed: int = 0, timeout: int = execute.CELL_TIMEOUT,
                 env: dict | None = None) -> dict:
    """Execute ``path`` in a fresh kernel (nothing is written back) and measure it.

    ``seed`` is passed to the kernel as ``DEPTHLAB_SEED`` (see :mod:`depthlab.seeds`), with
    ``env`` (more environment variables, e.g. one of :data:`CONFIGS`). Returns ``seconds``,
    ``memory`` (bytes, or None where it cannot be read), ``training`` (seconds and examples of
    each training run), ``checks`` (the glued ``check_*`` records), ``exercises`` (what each
    ``dl.check`` said), ``conclusions_failed`` (the ``ConclusionFailed`` message, or None) and
    ``error`` (why the notebook stopped early, or None).
    """
    nb = nbformat.read(path, as_version=4)
    # executed as one notebook, never written back: the meter first, the probe last
    setup, probe = nbformat.v4.new_code_cell(_SETUP), nbformat.v4.new_code_cell(_PROBE)
    nb.cells = [setup, *nb.cells, probe]
    client = None
    # as the stored outputs were made: every dl.panel as its no-kernel twin
    kernel_env = {**os.environ, **(env or {}), "DEPTHLAB_SEED": str(seed), "DEPTHLAB_TWINS": "1"}
    stats = dict(memory=None, training=[], conclusions_failed=None, error=None,
                 load=_load())
    start = time.perf_counter()
    try:
        with execute.running_kernel(nb, path, timeout=timeout, env=kernel_env) as client:
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
    if stats["load"] is not None:  # the machine's load while the notebook ran: start and end
        stats["load"] = (stats["load"] + _load()) / 2
    stats["checks"] = glued_checks(nb)
    stats["exercises"] = exercise_verdicts(nb)
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


def _cpus(entries: list[dict]) -> list[str]:
    """The CPUs that ``entries`` were measured on, in a fixed order (entries saved before the
    CPU was recorded per entry have none)."""
    return sorted({e.get("cpu") or "" for e in entries})


def _on(entries: list[dict], cpu: str) -> list[dict]:
    return [e for e in entries if (e.get("cpu") or "") == cpu]


def _time_cell(r: dict) -> str:
    """``41 s (55 % training)``: a notebook's time and the share of it spent training."""
    text = f"{r['seconds']:.0f}{NBSP}s"
    if r.get("training"):
        text += f" ({100 * training_seconds(r) / r['seconds']:.0f}{NBSP}% training)"
    return text


def table(rows: list[dict]) -> list[str]:
    """Markdown lines: one row per notebook with its measurements and ok/over; where the
    notebooks were timed on several CPUs, a time column per CPU and the budgets each missed
    there."""
    cpus = _cpus(rows)
    if len(cpus) > 1:
        lines = ["| notebook | " + " | ".join(f"time, {c}" for c in cpus)
                 + " | peak memory | status |", "|---|" + "---:|" * (len(cpus) + 1) + "---|"]
        for path in dict.fromkeys(r["path"] for r in rows):
            mine = {r.get("cpu") or "": r for r in rows if r["path"] == path}
            times = [_time_cell(mine[c]) if c in mine else "-" for c in cpus]
            memory = max((r["memory"] for r in mine.values() if r.get("memory") is not None),
                         default=None)
            over = [f"{', '.join(over_budget(mine[c]))} ({c})" for c in cpus
                    if c in mine and over_budget(mine[c])]
            memory_text = "-" if memory is None else f"{memory / 2**20:.0f}{NBSP}MiB"
            lines.append(f"| {_name(path)} | {' | '.join(times)} | {memory_text} | "
                         f"{'ok' if not over else 'over: ' + '; '.join(over)} |")
        return lines
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


def worst(records: list[dict]) -> dict:
    """The worst of one check's records over several runs: the one nearest to failing.

    For ``<`` and ``<=`` that is the largest measured value, for ``>`` and ``>=`` the smallest;
    for ``==`` one that differs from the threshold, if any. A record that did not hold is worse
    than any that did.
    """
    def badness(record):
        value, threshold = _number(record["measured"]), _number(record["threshold"])
        if math.isnan(value):
            return (1, math.inf)
        sign = {"<": 1, "<=": 1, ">": -1, ">=": -1}.get(record["op"])
        return (0 if record["holds"] else 1,
                abs(value - threshold) if sign is None else sign * value)

    return max(records, key=badness)


def _number(value) -> float:
    return float(value)  # also "nan", "inf", "-inf", as depthlab writes them


def margin(record: dict) -> float | None:
    """How far the measured value is from the threshold, as a fraction of the threshold (None
    for ``==`` or a threshold of 0); negative where the check fails."""
    value, threshold = _number(record["measured"]), _number(record["threshold"])
    if record["op"] == "==" or threshold == 0 or not math.isfinite(value):
        return None
    sign = 1 if record["op"] in (">", ">=") else -1
    return sign * (value - threshold) / abs(threshold)


def _fmt(value) -> str:
    value = _number(value)
    return f"{value:.3g}" if math.isfinite(value) else str(value)


def robustness(runs: list[dict]) -> tuple[list[dict], bool]:
    """One summary per (notebook, check) over all ``runs``: its worst record, in which run,
    how many runs it held in, and whether it is missing from some."""
    by_check: dict[tuple[str, str], list] = {}
    paths_runs: dict[str, list] = {}
    for run in runs:
        paths_runs.setdefault(run["path"], []).append(run)
        for name, record in run.get("checks", {}).items():
            by_check.setdefault((run["path"], name), []).append((record, run))
    rows, every = [], True
    for (path, name), found in by_check.items():
        bad = worst([record for record, _ in found])
        where = next(run for record, run in found if record is bad)
        held = sum(record["holds"] for record, _ in found)
        # a check missing from a run counts against it, except on a CPU where it never ran
        # (a check written since that CPU's runs)
        ran_on = {run.get("cpu") for _, run in found}
        total = sum(run.get("cpu") in ran_on for run in paths_runs[path])
        every &= held == total
        rows.append(dict(path=path, name=name, worst=bad, where=where, held=held, runs=total,
                         cpus=_cpus(paths_runs[path])))
    return rows, every


def robustness_table(rows: list[dict]) -> list[str]:
    """Markdown lines: every check, its threshold and its worst value over the runs."""
    lines = ["| notebook | check | threshold | worst value | in the run | held |",
             "|---|---|---|---|---|---|"]
    several = any(len(r.get("cpus", [])) > 1 for r in rows)  # then each row names its CPU
    for r in rows:
        w = r["worst"]
        where = f"seed {r['where']['seed']}, {r['where']['config']}"
        if several and r["where"].get("cpu"):
            where += f", {r['where']['cpu']}"
        m = margin(w)
        close = " (close)" if m is not None and 0 <= m < CLOSE else ""
        held = f"{r['held']} of {r['runs']}"
        if r["held"] < r["runs"]:
            held = f"**{held}**"
        notes = [] if w.get("written", "before the data") == "before the data" else [w["written"]]
        if w.get("verdict") == "refuted":  # its row is the opposite of what it predicted
            notes.append("refuted prediction")
        written = f" ({', '.join(notes)})" if notes else ""
        lines.append(f"| {_name(r['path'])} | `{r['name']}`{written} | {w['op']} "
                     f"{_fmt(w['threshold'])} | {_fmt(w['measured'])}{close} | {where} | "
                     f"{held} |")
    return lines


def machine() -> dict:
    """What the page says about the machine and the software."""
    import matplotlib
    import numpy
    import torch

    return dict(date=dt.date.today().isoformat(), cpu=execute.cpu_name(), cores=os.cpu_count(),
                threads=torch.get_num_threads(), python=platform.python_version(),
                torch=torch.__version__, numpy=numpy.__version__,
                matplotlib=matplotlib.__version__)


def _list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _count(n: int, noun: str) -> str:
    """``3 notebooks``, ``1 notebook``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def mean_load(rows: list[dict]) -> float | None:
    loads = [r["load"] for r in rows if r.get("load") is not None]
    return sum(loads) / len(loads) if loads else None


def summary(rows: list[dict], cores: int | None = None) -> str:
    """The paragraph under the table, written from the measurements: one per CPU where the
    notebooks were timed on several."""
    cpus = _cpus(rows)
    if len(cpus) > 1:
        return "\n\n".join(f"On the {cpu}: " + _summary(_on(rows, cpu), cores) for cpu in cpus)
    return _summary(rows, cores)


def _summary(rows: list[dict], cores: int | None = None) -> str:
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


def _config_text(name: str) -> str:
    env = CONFIGS.get(name, {})
    settings = ", ".join(f"`{k}={v}`" for k, v in env.items()) or "no variable set"
    return f"*{name}* ({settings})"


def _configs_text(results: dict) -> str:
    parts = [_config_text(name) for name in results.get("configs", [])]
    return _list(parts) if parts else "none"


def _seeds_text(matrix: list[dict], results: dict) -> str:
    """"at seeds 1, 2, 3 and 4 in each of these configurations: ...", or, where the
    configurations were run at different seeds, the seeds of each: the seeds that every
    notebook run in a configuration ran there, with a note where some ran more (their rows
    count their runs)."""
    by_notebook: dict = {}  # config -> notebook -> seeds
    for r in matrix:
        by_notebook.setdefault(r["config"], {}).setdefault(r["path"], set()).add(r["seed"])
    seeds = {c: set.intersection(*paths.values()) for c, paths in by_notebook.items()}
    more = any(ran != seeds[c] for c, paths in by_notebook.items() for ran in paths.values())
    note = (" (some notebooks at more seeds: the last column counts each check's runs)"
            if more else "")
    # notebooks run in one configuration at seeds that no seed is common to: their union
    if any(not s for s in seeds.values()):
        seeds = {c: s or set.union(*by_notebook[c].values()) for c, s in seeds.items()}
        note = (" (not every notebook at every one of those seeds: the last column counts "
                "each check's runs)")
    if len({frozenset(s) for s in seeds.values()}) <= 1:
        every = sorted(set().union(*seeds.values())) if seeds else []
        return (f"at seeds {_list([str(s) for s in every])} in each of these configurations: "
                f"{_configs_text(results)}{note}")
    order = [c for c in results.get("configs", []) if c in seeds] + sorted(
        set(seeds) - set(results.get("configs", [])))
    return _list([f"at {'seed' if len(seeds[c]) == 1 else 'seeds'} "
                  f"{_list([str(s) for s in sorted(seeds[c])])} in {_config_text(c)}"
                  for c in order]) + note


def _provenance_lines(results: dict) -> list[str]:
    """Dates, CPUs and devices of the measurements (several where notebooks were measured
    again alone, on another day or machine)."""
    m = results["machine"]
    entries = results["rows"] + results.get("runs", [])
    dates = sorted({e.get("date") or m["date"] for e in entries})
    cpus = sorted({e.get("cpu") or m["cpu"] for e in entries})
    devices = sorted({e.get("device") or results["device"] for e in entries})
    return [f"* date: {dates[0]}" if len(dates) == 1 else
            f"* dates: {dates[0]} to {dates[-1]}",
            f"* CPU: {_list(cpus)}, {m['cores']} cores",
            f"* networks trained on: {_list(devices)}"]


def _totals_lines(rows: list[dict]) -> list[str]:
    """How long the notebooks took one after the other, and how busy the machine was: for
    each CPU they were timed on."""
    lines = []
    cpus = _cpus(rows)
    for cpu in cpus:
        mine = _on(rows, cpu)
        on = f" on the {cpu}" if len(cpus) > 1 else ""
        total = sum(r["seconds"] for r in mine)
        lines.append(f"* all {len(mine)} notebooks, one after the other{on}: {total / 60:.1f} min")
        if mean_load(mine) is not None:
            lines.append(f"* load average of the machine during the run{on}: "
                         f"{mean_load(mine):.1f}")
    return lines


def render(results: dict) -> str:
    """The book page for the measurements in ``results`` (what :func:`measure` returns)."""
    m, rows = results["machine"], results["rows"]
    checked, every = robustness(results.get("runs", []))
    page = [
        "<!-- Written by `make bench` (tools/bench.py) from tools/bench_results.json; do not edit:",
        "     running.md includes it. -->",
        "",
        "## Time and memory",
        "",
    ]
    if not rows:
        page += ["`make bench` has not timed the notebooks since they were last changed (its "
                 "timed pass was skipped with `--no-timing`).", "",
                 *_provenance_lines(results), ""]
    else:
        page += [
            "What executing each notebook cost when `make bench` last ran. It executes every "
            "notebook in a fresh kernel, as the tests do, at seed 0 and as a learner runs it "
            "(PyTorch's default thread count), and compares the time with a budget: a chapter in "
            "30 s, a lab in 90 s, a solution notebook in 60 s, and at most 2 GiB of memory. "
            "\"Of which training\" is the time spent inside depthlab's training functions.",
            "",
            *_provenance_lines(results),
            f"* Python {m['python']}, PyTorch {m['torch']}, NumPy {m['numpy']}, "
            f"matplotlib {m['matplotlib']}",
            *_totals_lines(rows),
            "",
            *table(rows),
            "",
            summary(rows, m.get("cores")),
            "",
        ]
    page += [
        "## Do the conclusions hold on every machine?",
        "",
    ]
    if not checked:
        page += ["No notebook checked its conclusions in this run.", ""]
        return "\n".join(page)
    notebooks_checked = len({r["path"] for r in checked})
    runs = results.get("runs", [])
    matrix = [r for r in runs if r["config"] != LEARNER]  # beyond the timed pass
    in_matrix = sorted({_name(r["path"]) for r in matrix})
    timed_only = sorted({_name(r["path"]) for r in checked} - set(in_matrix)) if matrix else []
    verdict = ("Every check held in every run." if every else
               "**Not every check held in every run**: see the rows in bold.")
    close = sum(1 for r in checked if (m_ := margin(r["worst"])) is not None and 0 <= m_ < CLOSE)
    page += [
        "Every notebook ends by checking the claims its text rests on "
        f"(`depthlab.conclusions`). The results below cover "
        f"{_count(notebooks_checked, 'notebook')} ({_list(sorted({_name(r['path']) for r in checked}))}), "
        f"{_count(len(checked), 'check')} in all"
        + ("; the other notebooks have not been run by `make bench` since they last changed. "
           if notebooks_checked < len(notebooks([])) else ". ")
        + (f"Besides the timed run above (*{LEARNER}*, seed 0), " if rows else
           "Besides the run that stored their outputs (seed 0 on one thread, which every "
           "`make test` repeats), ")
        + ("`make bench` executed each of them " if not timed_only else
           f"`make bench` executed {_count(len(in_matrix), 'notebook')} ({_list(in_matrix)}) ")
        + _seeds_text(matrix or runs, results)
        + (f"; the other {_count(len(timed_only), 'notebook')} only in the timed run, since "
           "they last changed" if timed_only else "")
        + ". `DEPTHLAB_SEED` shifts every seed a notebook uses for "
        "initialization and minibatches (the data stay the same); the thread count and "
        "PyTorch's kernel set change the order in which numbers are added, and so the digits "
        "of a trained network, the way another CPU does. " + verdict,
        "",
        "For every check, the table shows its worst value over all those runs (the one "
        "nearest to failing) against its threshold, and the run it came from. "
        + (f"{_count(close, 'check')} came within {CLOSE:.0%} of the threshold (marked "
           "*close*): they hold, with little to spare. " if close else "")
        + "A check written after a trial run or after the run itself says so next to its name. "
        "A prediction that the text reports as refuted is marked *refuted prediction*: its row "
        "is the opposite of what it predicted, and it holds where the prediction failed.",
        "",
        *robustness_table(checked),
        "",
        *exercise_section(runs),
    ]
    return "\n".join(page)


def exercise_section(runs: list[dict]) -> list[str]:
    """Markdown lines: did every worked solution pass the labs' own exercise checks
    (``dl.check``) in every run that recorded them?"""
    solved = [r for r in runs if r.get("exercises") and r["path"].startswith("solutions/")]
    if not solved:
        return []
    names = sorted({_name(r["path"]) for r in solved})
    missed = sorted({(_name(r["path"]), exercise, status, f"seed {r['seed']}, {r['config']}")
                     for r in solved for exercise, status in r["exercises"].items()
                     if status != "right"})
    exercises = sorted({e for r in solved for e in r["exercises"]})
    lines = [
        "## Do the worked solutions pass the labs' exercise checks?",
        "",
        "The labs' \"Your turn\" cells end with `dl.check`, which tells a learner whether the "
        "result is right; the worked solutions call it on their own answers, so each run of "
        "them tests the ranges it accepts. "
        f"{_count(len(solved), 'run')} of {_count(len(names), 'solution notebook')} "
        f"({_list(names)}) recorded what it said, for {_count(len(exercises), 'exercise')} "
        f"({_list(exercises)}): "
        + ("it said *Right* every time." if not missed else
           f"**it did not say Right {_count(len(missed), 'time')}**:"),
        "",
    ]
    lines += [f"* {name}, {exercise}: {status} ({where})"
              for name, exercise, status, where in missed]
    return lines + ([""] if missed else [])


# ---------------------------------------------------------------- measuring


def _report(rel: str, stats: dict, seed: int, config: str = LEARNER) -> str:
    line = f"{rel} (seed {seed}, {config}): {stats['seconds']:.1f} s"
    if stats.get("memory") is not None:
        line += f", {stats['memory'] / 2**20:.0f} MiB"
    runs = stats.get("training", [])
    train = sum(r["seconds"] for r in runs)
    if train > 0:
        rate = sum(r["examples"] for r in runs) / train
        line += f", training {train:.1f} s ({rate:,.0f} examples/s)"
    if stats["checks"]:
        held = sum(c["holds"] for c in stats["checks"].values())
        line += f", {held} of {len(stats['checks'])} conclusions hold"
    if stats.get("conclusions_failed"):
        line += f"\n  {stats['conclusions_failed']}"
    if stats.get("error"):
        line += f"\n  ERROR: {stats['error']}"
    return line


def _threads(config: str) -> int:
    return int(CONFIGS[config].get("OMP_NUM_THREADS", os.cpu_count() or 1))


def _run_one(args):
    path, seed, timeout, config = args
    return run_notebook(Path(path), seed=seed, timeout=timeout, env=CONFIGS[config])


def run_matrix(paths: list[str], seeds: list[int], configs: list[str], jobs: int,
               timeout: int) -> list[dict]:
    """Execute every notebook of ``paths`` at every seed in every configuration; return one
    record per run. Configurations on one thread run ``jobs`` notebooks at a time (separate
    processes, each with its own kernel); with more threads, as many as the cores allow."""
    runs = []
    for config in configs:
        work = [(str(ROOT / p), seed, timeout, config) for seed in seeds for p in paths]
        at_once = max(1, min(jobs, (os.cpu_count() or 1) // _threads(config)))
        with concurrent.futures.ProcessPoolExecutor(max_workers=at_once) as pool:
            for (path, seed, _, _), stats in zip(work, pool.map(_run_one, work)):
                rel = str(Path(path).relative_to(ROOT))
                runs.append(dict(path=rel, seed=seed, config=config, checks=stats["checks"],
                                 exercises=stats["exercises"],
                                 conclusions_failed=stats["conclusions_failed"],
                                 error=stats["error"], seconds=stats["seconds"]))
                print(_report(rel, stats, seed, config), flush=True)
    return runs


def measure(only: list[str], seeds: list[int], configs: list[str], jobs: int = 2,
            timeout: int = execute.CELL_TIMEOUT, timed: bool = True) -> dict:
    """The timed pass (seed 0, as a learner runs it) over the notebooks, then the notebooks
    with checks at ``seeds`` in each of ``configs``."""
    import torch

    sys.path.insert(0, str(ROOT))
    from depthlab import default_device

    device = default_device()
    rows, runs = [], []
    for path in notebooks(only) if timed else []:
        rel = str(path.relative_to(ROOT))
        stats = run_notebook(path, timeout=timeout, env=CONFIGS[LEARNER])
        stats["path"] = rel
        rows.append(stats)
        runs.append(dict(path=rel, seed=0, config=LEARNER, checks=stats["checks"],
                         exercises=stats["exercises"],
                         conclusions_failed=stats["conclusions_failed"], error=stats["error"],
                         seconds=stats["seconds"]))
        print(_report(rel, stats, 0), flush=True)
    if rows:
        print("\n".join(table(rows)))
        print(summary(rows, os.cpu_count()))
    checked = [r["path"] for r in rows if r["checks"]] if timed else [
        str(p.relative_to(ROOT)) for p in notebooks(only)]
    runs += run_matrix(checked, seeds, configs, jobs, timeout)
    summaries, every = robustness(runs)
    print("\n".join(robustness_table(summaries)))
    print("every check held in every run" if every else "NOT every check held in every run")
    name = str(device) + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else "")
    here = machine()
    for entry in rows + runs:
        entry.update(cpu=here["cpu"], date=here["date"], device=name)
    return dict(machine=here, device=name, rows=rows, runs=runs, seeds=seeds, configs=configs)


def merge(old: dict | None, new: dict, keep_unchanged_checks: bool = False) -> dict:
    """``new`` measurements over ``old`` ones: every notebook measured in ``new`` loses what it
    had in ``old`` on the same CPU (it may have changed since): its time where ``new`` times it,
    its runs; the other notebooks keep theirs.

    What a notebook measured in ``new`` had on *another* CPU stays: its timed rows, and its
    runs with only the checks that its fresh runs still make (below), so that the page shows
    each check over every CPU it ran on. With ``keep_unchanged_checks`` (a partial run: the timed
    pass alone, ``--timing-only``, or the seeds alone, ``--no-timing``), the same holds for its
    earlier runs on the same CPU at other seeds and configurations.

    A check is kept from an earlier run if the fresh runs still make it with the same operator
    and, where the earlier runs all had one threshold (a constant of the claim), the same
    threshold: a check dropped or rewritten since is not shown with values measured against
    another claim. A threshold that varied between the earlier runs is itself measured (one arm
    against another) and is kept."""
    if not old:
        return new
    here = new.get("machine", {}).get("cpu")
    before = old.get("machine", {}).get("cpu")
    for entry in old.get("rows", []) + old.get("runs", []):
        entry.setdefault("cpu", before)  # saved before each entry recorded its CPU
    for entry in new["rows"] + new["runs"]:
        entry.setdefault("cpu", here)
    fresh = {e["path"] for e in new["rows"] + new["runs"]}
    fresh_cpu = {(e["path"], e["cpu"]) for e in new["rows"] + new["runs"]}
    # a run without the timed pass (--no-timing) keeps the notebook's last time on this CPU
    timed = {(r["path"], r["cpu"]) for r in new["rows"]}
    rows = [r for r in old.get("rows", []) if (r["path"], r["cpu"]) not in timed] + new["rows"]
    runs = [r for r in old.get("runs", []) if r["path"] not in fresh] + new["runs"]
    claims = {(r["path"], name): (c["op"], c["threshold"])
              for r in new["runs"] for name, c in r.get("checks", {}).items()}
    taken = {(r["path"], r["seed"], r["config"], r["cpu"]) for r in new["runs"]}
    earlier: dict = {}  # (path, check) -> the thresholds it had in the earlier runs
    for r in old.get("runs", []):
        for name, c in r.get("checks", {}).items():
            earlier.setdefault((r["path"], name), set()).add(c["threshold"])

    def unchanged(path, name, check):
        claim = claims.get((path, name))
        return claim is not None and claim[0] == check["op"] and (
            claim[1] == check["threshold"] or len(earlier[path, name]) > 1)

    for r in old.get("runs", []):
        if r["path"] not in fresh or (r["path"], r["seed"], r["config"], r["cpu"]) in taken:
            continue
        if (r["path"], r["cpu"]) in fresh_cpu and not keep_unchanged_checks:
            continue
        checks = {name: c for name, c in r.get("checks", {}).items()
                  if unchanged(r["path"], name, c)}
        if checks:
            runs.append(dict(r, checks=checks))
    order = {str(p.relative_to(ROOT)): k for k, p in enumerate(notebooks([]))}
    rows.sort(key=lambda r: (order.get(r["path"], len(order)), r["cpu"] or ""))
    configs = list(dict.fromkeys(old.get("configs", []) + new["configs"]))
    seeds = sorted(set(old.get("seeds", [])) | set(new["seeds"]))
    return dict(new, rows=rows, runs=runs, configs=configs, seeds=seeds)


def write_durations(rows: list[dict], path: Path = DURATIONS) -> None:
    """Record each notebook's seconds for the order in which `make test` starts them."""
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    known.update({r["path"]: round(r["seconds"]) for r in rows if not r.get("error")})
    path.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run only notebooks whose path contains these")
    parser.add_argument("--page", default=str(ROOT / "running_measured.md"),
                        help="where to write the measurements for the book's Running page "
                             "(default: running_measured.md, which running.md includes)")
    parser.add_argument("--results", default=str(ROOT / "tools" / "bench_results.json"),
                        help="where the measurements are kept (default: "
                             "tools/bench_results.json); a run merges into it")
    parser.add_argument("--render-only", action="store_true",
                        help="do not execute anything: rewrite the page from --results")
    parser.add_argument("--seeds", type=int, default=3,
                        help="check the conclusions at seeds 0..N-1 (default 3; with "
                             "--matrix, 5)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="start the seeds there (for example 1, where the stored outputs "
                             "already are seed 0's one-thread run)")
    parser.add_argument("--matrix", action="store_true",
                        help=f"the whole matrix: seeds 0-4 (unless --seeds says otherwise), "
                             f"{ONE_THREAD!r} and {OTHER_KERNELS!r}")
    parser.add_argument("--config", choices=["one-thread", "other-kernels"],
                        help=f"check the conclusions in this configuration alone: "
                             f"{ONE_THREAD!r} or {OTHER_KERNELS!r} (after a change that only "
                             f"one of them sees)")
    parser.add_argument("--no-timing", action="store_true",
                        help="skip the timed pass: only check the conclusions")
    parser.add_argument("--timing-only", action="store_true",
                        help="only the timed pass (seed 0, as a learner runs it); earlier runs "
                             "at other seeds and configurations keep the checks that are "
                             "unchanged")
    parser.add_argument("--jobs", type=int, default=2,
                        help="notebooks run at once in the one-thread runs (default 2)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="DEPTHLAB_DEVICE for the kernels (default auto: CUDA if available)")
    parser.add_argument("--timeout", type=int, default=execute.CELL_TIMEOUT,
                        help=f"seconds one cell may run (default {execute.CELL_TIMEOUT})")
    args = parser.parse_args(argv)
    seeds_given = any(a == "--seeds" or a.startswith("--seeds=") for a in (argv or sys.argv))
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.timing_only and (args.no_timing or args.matrix or args.config):
        parser.error("--timing-only runs the timed pass alone: not with --no-timing, --matrix "
                     "or --config")
    if args.matrix and args.config:
        parser.error("--matrix runs both configurations: not with --config")
    results_path = Path(args.results)
    if args.render_only:
        if not results_path.exists():
            parser.error(f"--render-only needs saved results, and {results_path} does not "
                         f"exist: run `make bench` first")
        results = json.loads(results_path.read_text())
    else:
        os.environ["DEPTHLAB_DEVICE"] = args.device
        count = args.seeds if seeds_given or not args.matrix else 5
        seeds = list(range(args.first_seed, args.first_seed + count))
        configs = [ONE_THREAD, OTHER_KERNELS] if args.matrix else [ONE_THREAD]
        if args.config:
            configs = [{"one-thread": ONE_THREAD, "other-kernels": OTHER_KERNELS}[args.config]]
        if args.timing_only:
            seeds, configs = [], []
        new = measure(args.only, seeds, configs, args.jobs, args.timeout,
                      timed=not args.no_timing)
        old = json.loads(results_path.read_text()) if results_path.exists() else None
        results = merge(old, new, keep_unchanged_checks=args.timing_only or args.no_timing)
        results_path.parent.mkdir(parents=True, exist_ok=True)
        results_path.write_text(json.dumps(results, separators=(",", ":")) + "\n")
        print(f"saved the measurements to {results_path}")
        if new["rows"]:
            write_durations(new["rows"])
    if args.page and (results["rows"] or results.get("runs")):
        Path(args.page).write_text(render(results))
        print(f"wrote {args.page}")
    # a notebook that did not run, or a check that failed in any run, is a failure of make bench
    failed = any(r.get("error") for r in results["rows"]) or any(
        r.get("error") or not all(c["holds"] for c in r.get("checks", {}).values())
        for r in results.get("runs", []))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
