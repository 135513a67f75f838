"""The labs as Otter-Grader assignments, for instructors (the book page instructors.md).

    python tools/assignments.py build [LAB ...]         # what `make assignments` runs
    python tools/assignments.py grade-check [LAB ...]   # what `make grade-check` runs

``build`` writes, for each lab (all six by default; ``LAB`` is a prefix such as ``lab3``), under
``_build/assignments/<lab>/``:

* ``source/<lab>.ipynb``: Otter's master ("source") notebook, made from the lab notebook, the
  solutions notebook's answers and the checks: each "Your turn" is one question (1 point) whose
  cell is the lab's stub with the solutions notebook's answer inside ``# BEGIN SOLUTION NO
  PROMPT`` / ``# END SOLUTION`` and ``result = ...`` as the prompt, and whose test calls
  ``dl.check`` (depthlab/book/exercises.py) on the learner's ``result`` right after that cell:
  it passes only when the verdict is "right", and a failure shows the verdict (the hint);
* ``student/<lab>.ipynb``: the student version, written by ``otter assign``: the lab with every
  answer removed, the ``result = ...`` stub and its ``dl.check`` left (run as it is, each
  prints "Not yet"); no Otter cell, so it runs in Colab and Binder with depthlab alone;
* ``autograder/autograder.zip``: the autograder (``otter run``, ``otter grade``, Gradescope),
  and ``autograder/<lab>.ipynb``, the master with the answers in place (for reading: the answers
  are the solutions notebook's and use a few of its helpers);
* ``reference/<lab>.ipynb``: the solutions' answers as a submission: the solutions notebook
  with the lines that put each answer into ``result`` (the stub's form) and a ``dl.check``
  after it, each marked with the question it answers.

``grade-check`` runs the autograder on ``reference/`` (it must give full marks) and on
``student/`` (no marks, and every question's failure shows the check's verdict), executing
each notebook top to bottom as Otter does for a real submission: minutes per lab.
tests/test_assignments.py proves the same in seconds with :func:`questions_only` (Otter's own
``otter_ignore`` tag on every cell no question needs).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "assignments"
LABS = sorted(p.stem for p in (ROOT / "labs").glob("lab*.ipynb"))
POINTS = 1                                     # per question
COURSE_PACKAGE = "depthlab @ git+https://github.com/depthlab-course/residual-connections"
FIRST_LINE = re.compile(r"# Your turn (\d+)\.(\d+):")
CHECK_CALL = re.compile(r"""dl\.check\(\s*["'](lab\d+\.\d+)["']""")


class AssignmentError(Exception):
    """A lab, its solutions notebook or the stubs do not fit together."""


def question_name(exercise: str) -> str:
    """Otter's question name for an exercise id: ``lab1.2`` -> ``lab1_2``."""
    return exercise.replace(".", "_")


def _src(cell) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _code_cell(source: str, **metadata) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata.update(metadata)
    return cell


def _raw_cell(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(source)


# --------------------------------------------------------------------- reading the notebooks

def lab_stubs(lab_nb) -> dict[str, tuple[int, str]]:
    """The lab's "Your turn" cells: exercise id -> (cell index, stub source); each must call
    ``dl.check``."""
    found = {}
    for i, cell in enumerate(lab_nb.cells):
        m = FIRST_LINE.match(_src(cell)) if cell.cell_type == "code" else None
        if not m:
            continue
        ex = f"lab{m[1]}.{m[2]}"
        source = _src(cell)
        if not CHECK_CALL.search(source):
            raise AssignmentError(f"{ex}: the lab's cell has no dl.check stub")
        found[ex] = (i, source.rstrip("\n"))
    return found


def answer_groups(sol_nb) -> dict[str, list[int]]:
    """The solutions notebook's answers: exercise id -> the indices of the cell that starts
    with the exercise's "# Your turn" line and of the code cells after it, up to the next
    "Your turn" or the closing ``dl.conclusions`` cell."""
    groups, current = {}, None
    for i, cell in enumerate(sol_nb.cells):
        m = FIRST_LINE.match(_src(cell)) if cell.cell_type == "code" else None
        if m:
            current = f"lab{m[1]}.{m[2]}"
            groups[current] = [i]
        elif cell.cell_type == "code" and "dl.conclusions(" in _src(cell):
            current = None
        elif current and cell.cell_type == "code":
            groups[current].append(i)
    return groups


def check_cells(sol_nb) -> dict[str, int]:
    """Where each answer of the solutions notebook puts its result into ``result`` and calls
    ``dl.check``: exercise id -> the index of that cell (the last, if several)."""
    where = {}
    for ex, idx in answer_groups(sol_nb).items():
        have = [i for i in idx if re.search(rf"""dl\.check\(\s*["']{re.escape(ex)}["']""",
                                            _src(sol_nb.cells[i]))]
        if not have:
            raise AssignmentError(f"{ex}: the solutions notebook's answer calls no dl.check")
        where[ex] = have[-1]
    return where


# ------------------------------------------------------------------------ the master notebook

# no `name`: Otter would then reject a notebook without its metadata, which Colab may drop
ASSIGNMENT_CONFIG = """\
# ASSIGNMENT CONFIG
requirements: ../../requirements.txt
init_cell: false
check_all_cell: false
export_cell: false
run_tests: false
tests:
  files: false
  ok_format: false
generate:
  show_stdout: true
"""

TEST = '''\
def test_{name}(result):
    import depthlab as dl
    verdict = dl.check("{ex}", result, quiet=True)
    assert verdict, str(verdict)
'''


def solution_block(ex: str, sol_nb, group: list[int]) -> list[str]:
    """The solutions notebook's answer to ``ex`` as lines: its code cells (not the ones the
    book hides, which only glue numbers into the text) without the closing ``dl.check``."""
    lines = []
    for i in group:
        cell = sol_nb.cells[i]
        if "remove-cell" in _tags(cell):
            continue
        for line in _src(cell).rstrip("\n").splitlines():
            if CHECK_CALL.search(line):
                continue
            lines.append(line)
    while lines and FIRST_LINE.match(lines[0]):
        lines.pop(0)
    return lines


def question_cell(ex: str, stub: str, answer: list[str]) -> str:
    """The master's cell for one question: the stub's comments, the answer as a solution block,
    ``result = ...`` as the prompt, then the stub's ``dl.check`` line."""
    stub_lines = stub.splitlines()
    at = next((i for i, l in enumerate(stub_lines) if re.match(r"result\s*=\s*\.\.\.\s*$", l)),
              None)
    if at is None:
        raise AssignmentError(f"{ex}: the stub has no `result = ...` line")
    return "\n".join(stub_lines[:at]
                     + ["# BEGIN SOLUTION NO PROMPT", *answer, "# END SOLUTION",
                        '""" # BEGIN PROMPT', stub_lines[at], '""" # END PROMPT']
                     + stub_lines[at + 1:])


def master_notebook(lab: str) -> nbformat.NotebookNode:
    lab_nb = nbformat.read(ROOT / "labs" / f"{lab}.ipynb", as_version=4)
    sol_nb = nbformat.read(ROOT / "solutions" / f"{lab}_solutions.ipynb", as_version=4)
    check_cells(sol_nb)
    groups = answer_groups(sol_nb)
    questions = lab_stubs(lab_nb)
    missing = sorted(set(questions) ^ set(groups))
    if missing:
        raise AssignmentError(f"{lab}: exercises without a stub or an answer: {missing}")
    by_index = {i: ex for ex, (i, _) in questions.items()}
    cells = [_raw_cell(ASSIGNMENT_CONFIG)]
    for i, cell in enumerate(lab_nb.cells):
        if i not in by_index:
            cells.append(cell)
            continue
        ex = by_index[i]
        name = question_name(ex)
        code = copy.deepcopy(cell)
        code.source = question_cell(ex, questions[ex][1],
                                    solution_block(ex, sol_nb, groups[ex]))
        code.outputs, code.execution_count = [], None
        # the stub raised NotImplementedError; the new one does not
        code.metadata["tags"] = [t for t in _tags(cell) if t != "raises-exception"]
        if not code.metadata["tags"]:
            del code.metadata["tags"]
        cells += [_raw_cell(f"# BEGIN QUESTION\nname: {name}\npoints: {POINTS}\n"
                            "check_cell: false"),
                  _raw_cell("# BEGIN SOLUTION"),
                  code,
                  _raw_cell("# END SOLUTION"),
                  _raw_cell("# BEGIN TESTS"),
                  _code_cell(TEST.format(name=name, ex=ex)),
                  _raw_cell("# END TESTS"),
                  _raw_cell("# END QUESTION")]
    nb = copy.deepcopy(lab_nb)
    nb.cells = cells
    return nb


# ------------------------------------------------------------------------------- the builds

def requirements_file() -> Path:
    """What the autograder installs on top of Otter's own requirements (Docker, Gradescope):
    the course package, which brings torch and the rest of the learner's set."""
    path = OUT / "requirements.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("--extra-index-url https://download.pytorch.org/whl/cpu\n"
                    f"{COURSE_PACKAGE}\n", encoding="utf-8")
    return path


def build(lab: str) -> Path:
    """Master, student version, autograder and reference submission of one lab."""
    from otter.assign import main as otter_assign

    base = OUT / lab
    shutil.rmtree(base, ignore_errors=True)
    (base / "source").mkdir(parents=True)
    requirements_file()
    master = base / "source" / f"{lab}.ipynb"
    nbformat.write(master_notebook(lab), master)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        otter_assign(str(master), str(base / "dist"), no_pdfs=True, no_run_tests=True)
    for part in ("student", "autograder"):
        shutil.move(base / "dist" / part, base / part)
    # one name for the autograder, whatever the day
    (zipped,) = (base / "autograder").glob(f"{lab}-autograder_*.zip")
    zipped.rename(base / "autograder" / "autograder.zip")
    shutil.rmtree(base / "dist")
    # the reference submission: the solutions notebook, each answer's check cell marked
    ref = nbformat.read(ROOT / "solutions" / f"{lab}_solutions.ipynb", as_version=4)
    for ex, i in check_cells(ref).items():
        ref.cells[i].metadata["otter"] = {"tests": [question_name(ex)]}
    (base / "reference").mkdir()
    nbformat.write(ref, base / "reference" / f"{lab}.ipynb")
    return base


# --------------------------------------------------------------------------------- grading

def questions_only(nb) -> nbformat.NotebookNode:
    """A copy of a submission in which Otter skips (its ``otter_ignore`` tag) every code cell
    but the question cells (those that call ``dl.check``), after a first cell that imports
    depthlab: what the tests grade in seconds, since Otter's tests read nothing but
    ``result``. (A submission's own cells, training included, run only in ``grade-check``.)"""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and not CHECK_CALL.search(_src(cell)):
            cell.metadata.setdefault("tags", [])
            if "otter_ignore" not in cell.metadata["tags"]:
                cell.metadata["tags"].append("otter_ignore")
    nb.cells.insert(0, _code_cell("import depthlab as dl"))
    return nb


def literal(value) -> str:
    """Python source that rebuilds ``value`` (dicts, lists, tuples, numbers, strings, NumPy
    arrays and scalars as lists and floats)."""
    import numpy as np

    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + "".join(f"{literal(v)}, " for v in value) + ")"
    if isinstance(value, (list, np.ndarray)):
        return "[" + ", ".join(literal(v) for v in list(value)) + "]"
    if isinstance(value, (bool, str)) or value is None:
        return repr(value)
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    value = float(value)
    return repr(value) if math.isfinite(value) else f'float("{value}")'


def with_answers(student_nb, answers: dict) -> nbformat.NotebookNode:
    """The student version filled in with given results: in each question cell,
    ``result = ...`` becomes ``result = <the answer>``."""
    nb = copy.deepcopy(student_nb)
    for cell in nb.cells:
        m = CHECK_CALL.search(_src(cell)) if cell.cell_type == "code" else None
        if m and m[1] in answers:
            filled = f"result = {literal(answers[m[1]])}"
            cell.source = re.sub(r"(?m)^result\s*=\s*\.\.\.\s*$", lambda _, f=filled: f,
                                 _src(cell))
    return nb


def grade(submission: Path, lab: str, workdir: Path) -> dict:
    """Otter's autograder, without Docker (``otter run``), on one submission: the results
    as Otter's results.json (``tests``: name, score, max_score, output)."""
    from otter.run import main as otter_run

    workdir.mkdir(parents=True, exist_ok=True)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        otter_run(str(submission), autograder=str(OUT / lab / "autograder" / "autograder.zip"),
                  output_dir=str(workdir), no_logo=True)
    return json.loads((workdir / "results.json").read_text(encoding="utf-8"))


def question_results(results: dict) -> list[dict]:
    """Otter's results.json, one entry per question (without the "Public Tests" summary)."""
    return [t for t in results["tests"] if "max_score" in t]


def scores(results: dict) -> tuple[float, float]:
    tests = question_results(results)
    return sum(t.get("score") or 0 for t in tests), sum(t["max_score"] for t in tests)


def grade_check(lab: str) -> list[str]:
    """Full marks on the reference submission and none on the student version, each executed
    top to bottom; the problems found (empty when both hold)."""
    problems = []
    base = OUT / lab
    for kind, want_full in (("reference", True), ("student", False)):
        results = grade(base / kind / f"{lab}.ipynb", lab, base / "graded" / kind)
        got, total = scores(results)
        print(f"{lab} {kind}: {got:g} / {total:g}")
        for t in question_results(results):
            verdict = [line.strip() for line in t.get("output", "").splitlines()
                       if "AssertionError" in line]
            print(f"  {t['name']}: {t.get('score') or 0:g} / {t['max_score']:g}"
                  + (f"  {verdict[0][:160]}" if verdict else ""))
        if want_full and got != total:
            problems.append(f"{lab}: the reference submission got {got:g} of {total:g}")
        if not want_full and (got != 0 or not all("Not yet" in t.get("output", "")
                                                  for t in question_results(results))):
            problems.append(f"{lab}: the blank student version got {got:g} or hid a verdict")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build", "grade-check"])
    parser.add_argument("labs", nargs="*", help="lab name prefixes (default: every lab)")
    args = parser.parse_args(argv)
    labs = [lab for lab in LABS if not args.labs or any(lab.startswith(p) for p in args.labs)]
    try:
        if args.command == "build":
            for lab in labs:
                base = build(lab)
                print(f">> {lab}: {base.relative_to(ROOT)}/"
                      "{source,student,autograder,reference}")
            return 0
        problems = []
        for lab in labs:
            if not (OUT / lab / "autograder" / "autograder.zip").exists():
                build(lab)
            problems += grade_check(lab)
    except AssignmentError as error:
        print(f"!! {error}", file=sys.stderr)
        return 2
    for p in problems:
        print("!!", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
