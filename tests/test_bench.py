"""Tests of tools/bench.py (``make bench``): what it measures, how it copes with a notebook whose
conclusions fail, and the page it writes."""

import json
import sys
from pathlib import Path

import nbformat
import pytest

import depthlab as dl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import bench  # noqa: E402

NBSP = "\u00a0"


def _glue_output(name, value):
    return nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": repr(value)},
        metadata={"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}})


def record(measured, op, threshold, written="before the data"):
    holds = {"<": measured < threshold, ">": measured > threshold}[op]
    return dict(measured=measured, op=op, threshold=threshold, holds=holds, written=written)


def test_bench_reads_only_the_glued_checks():
    cell = nbformat.v4.new_code_cell("")
    a, b = record(0.2, "<", 0.5), record(3.0, ">", 4.0, "after a trial")
    cell.outputs = [_glue_output("check_a", json.dumps(a)), _glue_output("check_b", json.dumps(b)),
                    _glue_output("loss", 0.25)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert bench.glued_checks(nb) == {"a": a, "b": b}


def run(seed, config, **checks):
    return dict(path="labs/x.ipynb", seed=seed, config=config, checks=checks)


def test_the_worst_value_of_a_check_is_the_one_nearest_to_failing():
    assert bench.worst([record(0.2, "<", 0.5), record(0.4, "<", 0.5)])["measured"] == 0.4
    assert bench.worst([record(12, ">", 10), record(30, ">", 10)])["measured"] == 12
    assert bench.worst([record(0.6, "<", 0.5), record(0.1, "<", 0.5)])["holds"] is False
    assert bench.margin(record(12, ">", 10)) == pytest.approx(0.2)
    assert bench.margin(record(0.6, "<", 0.5)) == pytest.approx(-0.2)


def test_robustness_shows_every_check_at_its_worst_and_counts_the_runs_it_held_in():
    runs = [run(0, "1 thread", a=record(0.2, "<", 0.5), b=record(30, ">", 10)),
            run(1, "1 thread", a=record(0.46, "<", 0.5), b=record(8, ">", 10)),
            run(1, "2 threads, default kernels", a=record(0.3, "<", 0.5))]
    rows, every = bench.robustness(runs)
    assert not every
    lines = bench.robustness_table(rows)
    assert "| x | `a` | < 0.5 | 0.46 (close) | seed 1, 1 thread | 3 of 3 |" in lines
    assert "| x | `b` | > 10 | 8 | seed 1, 1 thread | **1 of 3** |" in lines  # and missing once
    rows, every = bench.robustness([run(0, "1 thread", a=record(0.2, "<", 0.5, "after a run"))])
    assert every and "`a` (after a run)" in bench.robustness_table(rows)[-1]
    # a refuted prediction: its record is the complement of the prediction, and says so
    refuted = dict(record(0.08, ">", 0.02), verdict="refuted")
    rows, every = bench.robustness([run(0, "1 thread", c=refuted)])
    assert every and "`c` (refuted prediction) | > 0.02 | 0.08" in bench.robustness_table(rows)[-1]


def test_a_run_over_some_notebooks_replaces_only_theirs(tmp_path):
    old = dict(rows=[dict(path="labs/lab1_fifty_layers.ipynb", seconds=50),
                     dict(path="labs/lab5_degradation.ipynb", seconds=60)],
               runs=[run(0, "1 thread", a=record(0.2, "<", 0.5)),
                     dict(run(1, "1 thread"), path="labs/lab5_degradation.ipynb")],
               configs=["1 thread"], seeds=[0, 1])
    new = dict(rows=[dict(path="labs/lab1_fifty_layers.ipynb", seconds=40)],
               runs=[dict(run(0, "1 thread"), path="labs/lab1_fifty_layers.ipynb")],
               configs=["1 thread", "2 threads, default kernels"], seeds=[0], machine={},
               device="cpu")
    merged = bench.merge(old, new)
    assert [(r["path"], r["seconds"]) for r in merged["rows"]] == [
        ("labs/lab1_fifty_layers.ipynb", 40), ("labs/lab5_degradation.ipynb", 60)]
    assert sorted(r["path"] for r in merged["runs"]) == [
        "labs/lab1_fifty_layers.ipynb", "labs/lab5_degradation.ipynb", "labs/x.ipynb"]
    assert merged["configs"] == ["1 thread", "2 threads, default kernels"]


def test_a_timed_pass_alone_keeps_the_earlier_runs_of_the_checks_it_still_makes():
    lab = "labs/lab1_fifty_layers.ipynb"
    old = dict(rows=[dict(path=lab, seconds=50)],
               runs=[dict(run(0, "learner", a=record(0.2, "<", 0.5), b=record(3, ">", 1)),
                          path=lab),
                     dict(run(1, "1 thread", a=record(0.3, "<", 0.5), b=record(2, ">", 1),
                              c=record(9, ">", 1)), path=lab)],
               configs=["1 thread"], seeds=[1])
    # d compares two arms: its threshold is measured, different in every run
    old["runs"][0]["checks"]["d"] = record(5, ">", 2)
    old["runs"][1]["checks"]["d"] = record(6, ">", 3)
    # the notebook now checks a with the same threshold, b with another, d against its other
    # arm (4 this time), and c no more
    new = dict(rows=[dict(path=lab, seconds=40)],
               runs=[dict(run(0, "learner", a=record(0.1, "<", 0.5), b=record(3, ">", 2),
                              d=record(7, ">", 4)), path=lab)],
               configs=[], seeds=[], machine={}, device="cpu")
    merged = bench.merge(old, new, keep_unchanged_checks=True)
    by_run = {(r["seed"], r["config"]): r["checks"] for r in merged["runs"]}
    assert set(by_run) == {(0, "learner"), (1, "1 thread")}
    assert by_run[(0, "learner")]["a"]["measured"] == 0.1  # the fresh timed run, not the old
    assert set(by_run[(1, "1 thread")]) == {"a", "d"}
    assert merged["seeds"] == [1] and merged["configs"] == ["1 thread"]
    # without the option, a measured notebook loses every earlier run
    assert {(r["seed"], r["config"]) for r in bench.merge(old, new)["runs"]} == {(0, "learner")}


def test_a_run_on_another_cpu_keeps_what_the_first_cpu_measured_of_the_same_checks():
    lab = "labs/lab1_fifty_layers.ipynb"
    amd = dict(machine=dict(cpu="AMD"), device="cpu",
               rows=[dict(path=lab, seconds=90, cpu="AMD")],
               runs=[dict(run(1, "1 thread", a=record(0.3, "<", 0.5), c=record(9, ">", 1)),
                          path=lab, cpu="AMD")],
               configs=["1 thread"], seeds=[1])
    # the same notebook on an Intel CPU: a with the same threshold, c no more
    intel = dict(machine=dict(cpu="Intel"), device="cpu",
                 rows=[dict(path=lab, seconds=40, cpu="Intel")],
                 runs=[dict(run(1, "1 thread", a=record(0.4, "<", 0.5)), path=lab, cpu="Intel")],
                 configs=["1 thread"], seeds=[1])
    merged = bench.merge(amd, intel)
    assert sorted((r["cpu"], r["seconds"]) for r in merged["rows"]) == [("AMD", 90), ("Intel", 40)]
    by_cpu = {r["cpu"]: r["checks"] for r in merged["runs"]}
    assert set(by_cpu) == {"AMD", "Intel"} and set(by_cpu["AMD"]) == {"a"}  # c: dropped since
    # the worst value over both CPUs, and the CPU it came from
    rows, every = bench.robustness(merged["runs"])
    assert every and "| x | `a` | < 0.5 | 0.4 | seed 1, 1 thread, Intel | 2 of 2 |" in (
        bench.robustness_table([dict(r, path="labs/x.ipynb") for r in rows]))
    # a check written since the AMD runs is counted over the Intel runs only
    newer = dict(run(1, "1 thread", a=record(0.4, "<", 0.5), n=record(2, ">", 1)), cpu="Intel",
                 path=lab)
    rows, _ = bench.robustness([r for r in merged["runs"] if r["cpu"] == "AMD"] + [newer])
    assert {r["name"]: (r["held"], r["runs"]) for r in rows} == {"a": (2, 2), "n": (1, 1)}
    # measured again on the same CPU, a notebook loses what it had there, not elsewhere
    again = bench.merge(merged, dict(intel, rows=[dict(path=lab, seconds=41, cpu="Intel")]))
    assert sorted((r["cpu"], r["seconds"]) for r in again["rows"]) == [("AMD", 90),
                                                                        ("Intel", 41)]
    assert sorted(r["cpu"] for r in again["runs"]) == ["AMD", "Intel"]
    # a run without the timed pass keeps the last time measured on that CPU
    untimed = bench.merge(again, dict(intel, rows=[]))
    assert sorted((r["cpu"], r["seconds"]) for r in untimed["rows"]) == [("AMD", 90),
                                                                          ("Intel", 41)]


def test_the_page_times_each_notebook_on_every_cpu_it_ran_on():
    rows = [dict(path="labs/lab9.ipynb", seconds=120.0, cpu="AMD EPYC", memory=2**29,
                 training=[dict(seconds=60.0, examples=1)]),
            dict(path="labs/lab9.ipynb", seconds=60.0, cpu="Intel Xeon", memory=2**28,
                 training=[dict(seconds=30.0, examples=1)]),
            dict(path="chapters/01_x.ipynb", seconds=20.0, cpu="Intel Xeon", training=[])]
    lines = bench.table(rows)
    assert lines[0] == "| notebook | time, AMD EPYC | time, Intel Xeon | peak memory | status |"
    assert lines[2] == (f"| lab9 | 120{NBSP}s (50{NBSP}% training) | 60{NBSP}s (50{NBSP}% "
                        f"training) | 512{NBSP}MiB | over: time (AMD EPYC) |")
    assert lines[3] == f"| 01_x | - | 20{NBSP}s | - | ok |"
    text = bench.summary(rows, 2)
    assert text.startswith("On the AMD EPYC: 1 of 1 notebooks missed a budget")
    assert "On the Intel Xeon: All 2 notebooks ran within their time and memory budgets." in text
    assert bench._totals_lines(rows) == [
        "* all 1 notebooks, one after the other on the AMD EPYC: 2.0 min",
        "* all 2 notebooks, one after the other on the Intel Xeon: 1.3 min"]


def test_the_training_meter_times_each_outermost_training_call_once():
    X, y = dl.two_spirals(64, seed=0)
    runs = []
    remove = bench.install_training_meter(runs)
    try:
        dl.train(dl.DeepMLP(2, 8, seed=0), X, y, steps=5, batch_size=16, device="cpu")
        # train_together reaches train_many through depthlab.fast.sweep: one run, two models
        dl.train_together({"a": dl.DeepMLP(2, 8, seed=0), "b": dl.DeepMLP(2, 8, seed=1)},
                          X, y, steps=3, device="cpu")
    finally:
        remove()
    assert [r["examples"] for r in runs] == [5 * 16, 2 * 3 * 64]
    assert all(r["seconds"] > 0 for r in runs)
    dl.train(dl.DeepMLP(2, 8, seed=0), X, y, steps=2, device="cpu")
    assert len(runs) == 2  # removed: depthlab is itself again
    assert not hasattr(dl.train, "unmetered") and not hasattr(dl.fast.sweep.train_many, "unmetered")


def test_a_notebook_whose_conclusions_fail_is_measured_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports the depthlab under test
    monkeypatch.setenv("DEPTHLAB_DEVICE", "cpu")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in [
        "import depthlab as dl\nX, y = dl.two_spirals(64)\n"
        "h = dl.train(dl.DeepMLP(2, 8, seed=dl.lab_seed()), X, y, steps=4, device='cpu')",
        "dl.conclusions({'fits': (h.loss[-1], '<', 100.0), 'perfect': (h.loss[-1], '<', 0.0)})",
        "print('after the conclusions')",
    ]])
    path = tmp_path / "lab9_demo.ipynb"
    nbformat.write(nb, path)
    stats = bench.run_notebook(path, seed=1, env={"OMP_NUM_THREADS": "1"})
    assert stats["error"] is None
    assert {name: c["holds"] for name, c in stats["checks"].items()} == {
        "fits": True, "perfect": False}
    assert "perfect" in stats["conclusions_failed"] and "fits" not in stats["conclusions_failed"]
    assert stats["memory"] > 50 * 2**20  # a kernel that imported PyTorch
    assert [r["examples"] for r in stats["training"]] == [4 * 64]
    assert 0 < stats["training"][0]["seconds"] < stats["seconds"]
    assert stats["load"] >= 0
    assert nbformat.read(path, as_version=4) == nb  # nothing written back


def test_a_notebook_that_fails_otherwise_is_recorded_with_its_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    stats = bench.run_notebook(path)
    assert stats["error"].startswith("a cell raised ZeroDivisionError")
    assert stats["seconds"] > 0 and stats["checks"] == {}


def saved_results(tmp_path, **row):
    deep_wins = record(0.2, "<", 0.3)
    rows = [dict(path="labs/lab9_demo.ipynb", seconds=120.0, memory=2**29,
                 training=[dict(seconds=30.0, examples=1000), dict(seconds=18.0, examples=10)],
                 checks={"deep_wins": deep_wins}, conclusions_failed=None, error=None, **row),
            dict(path="chapters/01_x.ipynb", seconds=12.0, memory=3 * 2**28, training=[],
                 checks={}, conclusions_failed=None, error=None)]
    runs = [dict(path="labs/lab9_demo.ipynb", seed=0, config="learner",
                 checks={"deep_wins": deep_wins}),
            dict(path="labs/lab9_demo.ipynb", seed=1, config="1 thread",
                 checks={"deep_wins": record(0.4, "<", 0.3)})]
    results = dict(machine=bench.machine(), device="cpu", rows=rows, runs=runs, seeds=[0, 1],
                   configs=["1 thread"])
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps(results))  # JSON turns the seed keys into strings
    return saved


def test_the_page_renders_from_saved_measurements(tmp_path):
    page = tmp_path / "running.md"
    saved = saved_results(tmp_path)
    assert bench.main(["--render-only", "--results", str(saved), "--page", str(page)]) == 1
    text = page.read_text()
    # over its 90 s budget; 48 s of its 120 s were training
    row = "| lab9_demo | 120 s | 48 s (40 %) | 512 MiB | over: time |"
    assert row.replace(" s", NBSP + "s").replace(" %", NBSP + "%").replace(
        " MiB", NBSP + "MiB") in text
    assert "| 01_x | 12" + NBSP + "s | - | 768" + NBSP + "MiB | ok |" in text
    assert "| lab9_demo | `deep_wins` | < 0.3 | 0.4 | seed 1, 1 thread | **1 of 2** |" in text
    assert "Not every check held in every run" in text
    assert "*1 thread* (`OMP_NUM_THREADS=1`, `MKL_NUM_THREADS=1`)" in text
    assert "GFLOP" not in text
    # the prose comes from the numbers
    assert "1 of 2 notebooks missed a budget or did not run cleanly: lab9_demo" in text
    assert "The slowest lab took 120 s (lab9_demo, budget 90 s)." in text
    assert "Training networks took 36 % of the 2.2 min" in text
    assert "No notebook needed more than 768 MiB of memory (01_x)." in text
    assert "busy with other work" not in text  # no load recorded: nothing said about it


def test_the_page_says_when_the_machine_was_busy(tmp_path):
    saved = saved_results(tmp_path, load=9.0)
    results = json.loads(saved.read_text())
    results["machine"]["cores"] = 2
    results["rows"][1]["load"] = 7.0
    saved.write_text(json.dumps(results))
    page = tmp_path / "running.md"
    bench.main(["--render-only", "--results", str(saved), "--page", str(page)])
    text = page.read_text()
    assert "* load average of the machine during the run: 8.0" in text
    assert "busy with other work during this run (load average 8.0 on 2 cores)" in text


def test_failed_conclusions_and_errors_show_in_the_status(tmp_path):
    page = tmp_path / "running.md"
    saved = saved_results(tmp_path)
    results = json.loads(saved.read_text())
    results["rows"][0]["conclusions_failed"] = "these conclusions do not hold: deep_wins"
    results["rows"][1]["error"] = "a cell raised KeyError"
    saved.write_text(json.dumps(results))
    assert bench.main(["--render-only", "--results", str(saved), "--page", str(page)]) == 1
    text = page.read_text()
    assert "| over: conclusions, time |" in text and "| over: error |" in text
    assert "2 of 2 notebooks missed" in text


def test_render_only_without_saved_measurements_says_what_to_do(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--render-only", "--results", str(tmp_path / "none.json")])
    assert "run `make bench` first" in capsys.readouterr().err


def test_the_page_renders_from_the_matrix_alone(tmp_path):
    """`--no-timing`: no timed rows, only the checks over seeds; the page still shows them."""
    run = dict(path="labs/lab9.ipynb", seed=1, config=bench.ONE_THREAD, error=None, seconds=3.0,
               conclusions_failed=False, cpu="cpu", date="2026-11-26", device="cpu",
               checks={"grows": dict(measured=5.0, op=">", threshold=2.0, holds=True,
                                     written="before the data")})
    results = dict(machine=dict(cpu="cpu", cores=2, date="2026-11-26", python="3.11",
                                torch="2", numpy="2", matplotlib="3"),
                   device="cpu", rows=[], runs=[run], seeds=[1], configs=[bench.ONE_THREAD])
    page = bench.render(results)
    assert "has not timed the notebooks" in page
    assert "grows" in page and "Every check held in every run." in page
    assert "seed 0 on one thread" in page


def test_the_page_says_which_seeds_each_configuration_ran():
    """Seeds 1-4 on one thread and seed 0 with the other kernels: the page must not say that
    every seed ran in every configuration."""
    def run(seed, config):
        return dict(path="labs/lab9.ipynb", seed=seed, config=config, error=None, seconds=3.0,
                    conclusions_failed=False, cpu="cpu", date="2026-11-26", device="cpu",
                    checks={"grows": dict(measured=5.0, op=">", threshold=2.0, holds=True,
                                          written="before the data")})
    results = dict(machine=dict(cpu="cpu", cores=2, date="2026-11-26", python="3.11",
                                torch="2", numpy="2", matplotlib="3"),
                   device="cpu", rows=[],
                   runs=[run(s, bench.ONE_THREAD) for s in (1, 2, 3, 4)]
                   + [run(0, bench.OTHER_KERNELS)],
                   seeds=[0, 1, 2, 3, 4], configs=[bench.ONE_THREAD, bench.OTHER_KERNELS])
    page = bench.render(results)
    assert "at seeds 1, 2, 3 and 4 in *1 thread*" in page
    assert "at seed 0 in *2 threads, default kernels*" in page
    assert "in each of these configurations" not in page
    assert "the other notebooks have not been run" in page  # one of the course's 29
    same = dict(results, runs=[run(s, c) for s in (1, 2) for c in results["configs"]])
    assert "at seeds 1 and 2 in each of these configurations: *1 thread*" in bench.render(same)
    # a notebook run at more seeds does not speak for the others
    other = dict(run(0, bench.ONE_THREAD), path="labs/lab8.ipynb")
    wider = dict(results, runs=results["runs"] + [other] + [
        dict(run(s, bench.ONE_THREAD), path="labs/lab8.ipynb") for s in (1, 2, 3, 4)])
    page = bench.render(wider)
    assert "at seeds 1, 2, 3 and 4 in *1 thread*" in page and "at more seeds" in page


def test_the_bench_reads_what_every_exercise_check_said():
    cells = [nbformat.v4.new_code_cell("") for _ in range(3)]
    cells[0].outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text="a table\n[lab5.1] Right: the 20-layer networks at chance\n")]
    cells[1].outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text="[lab5.2] Hint: train for 1,200 steps, not 400.\n")]
    cells[2].outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text="[lab6.1] Not yet: fill in the exercise\n"
                                      "[lab6.2] Wrong form: a dict. Expected ...\n"
                                      "see [lab6.3] Right: (not at the start of a line)\n")]
    nb = nbformat.v4.new_notebook(cells=cells)
    assert bench.exercise_verdicts(nb) == {"lab5.1": "right", "lab5.2": "hint",
                                           "lab6.1": "not yet", "lab6.2": "form"}


def test_the_page_says_whether_the_solutions_pass_their_exercise_checks():
    runs = [dict(path="solutions/lab5_x_solutions.ipynb", seed=s, config="1 thread", checks={},
                 exercises={"lab5.1": "right", "lab5.2": "right" if s else "hint"})
            for s in range(3)]
    runs.append(dict(path="labs/lab5_x.ipynb", seed=0, config="1 thread", checks={},
                     exercises={"lab5.1": "not yet"}))   # a lab's empty stub is not counted
    lines = bench.exercise_section(runs)
    assert "**it did not say Right 1 time**:" in lines[2]
    assert lines[4] == "* lab5_x_solutions, lab5.2: hint (seed 0, 1 thread)"
    for run in runs:
        run["exercises"] = {e: "right" for e in run["exercises"]}
    assert bench.exercise_section(runs[:3])[2].endswith("it said *Right* every time.")
    assert bench.exercise_section([]) == []


def test_the_page_says_which_seeds_ran_where_no_seed_is_common_to_a_configuration():
    runs = [dict(path="labs/a.ipynb", seed=0, config=bench.OTHER_KERNELS),
            dict(path="labs/b.ipynb", seed=1, config=bench.OTHER_KERNELS),
            dict(path="labs/b.ipynb", seed=2, config=bench.OTHER_KERNELS),
            dict(path="labs/a.ipynb", seed=1, config=bench.ONE_THREAD),
            dict(path="labs/b.ipynb", seed=1, config=bench.ONE_THREAD)]
    text = bench._seeds_text(runs, {"configs": [bench.ONE_THREAD, bench.OTHER_KERNELS]})
    assert "at seed 1 in *1 thread*" in text
    assert "at seeds 0, 1 and 2 in *2 threads, default kernels*" in text
    assert "not every notebook at every one of those seeds" in text


def test_config_runs_the_checks_in_one_configuration_alone(tmp_path, monkeypatch):
    asked = {}

    def measure(only, seeds, configs, jobs, timeout, timed):
        asked.update(seeds=seeds, configs=configs, timed=timed)
        return dict(machine="m", device="cpu", rows=[], runs=[], seeds=seeds, configs=configs)

    monkeypatch.setattr(bench, "measure", measure)
    args = ["--results", str(tmp_path / "r.json"), "--page", "", "--no-timing"]
    assert bench.main(args + ["--config", "other-kernels", "--seeds", "5", "lab6"]) == 0
    assert asked == dict(seeds=[0, 1, 2, 3, 4], configs=[bench.OTHER_KERNELS], timed=False)
    with pytest.raises(SystemExit):
        bench.main(args + ["--config", "one-thread", "--matrix"])
