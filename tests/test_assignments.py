"""The labs as Otter-Grader assignments (tools/assignments.py, the page instructors.md).

Builds every lab's assignment into a temporary folder (``otter assign``: the student version and
the autograder from one master notebook) and proves:

* the student version holds no line of the answers (only the lab and the stubs), and each stub,
  run as it is, prints the check's "Not yet";
* the reference submission (the solutions notebook) marks each answer's check cell with its
  question;
* every lab's autograder tests, run by Otter's test-file code in this process, give one point
  for the solution notebook's answer and none for ``...`` or a typical mistake, whose report
  shows the check's "Not yet" or hint;
* the autograder (``otter run``, no Docker) gives Lab 1 full marks when every ``result`` holds
  the solution notebook's answer (read from its stored outputs, as tests/test_exercises.py does),
  and no marks to the blank student version, each question's output showing the check's verdict.

The two gradings skip, with Otter's own ``otter_ignore`` tag, every cell the questions do not
need (the tests read nothing but ``result``), so the test costs seconds, not the minutes a lab's
training takes; ``make grade-check`` grades every lab's reference submission and blank student
version top to bottom, as Otter grades a real submission.
"""

import contextlib
import importlib.util
import io
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

import depthlab as dl
from depthlab.book.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import assignments  # noqa: E402

pytest.importorskip("otter", reason="otter-grader is in requirements-dev.txt")

GRADED_LAB = "lab1_fifty_layers"
# Otter 7.0 itself calls a pandas API that pandas 3 deprecates
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.drop")


def _code(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def _exercises(lab: str) -> list[str]:
    number = re.match(r"lab(\d+)_", lab)[1]
    return sorted(ex for ex in EXERCISES if ex.startswith(f"lab{number}."))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    old, assignments.OUT = assignments.OUT, out
    try:
        for lab in assignments.LABS:
            assignments.build(lab)
        yield out
    finally:
        assignments.OUT = old


def _read(built, lab, part):
    return nbformat.read(built / lab / part / f"{lab}.ipynb", as_version=4)


def test_every_lab_has_an_assignment_with_one_question_per_exercise(built):
    assert len(assignments.LABS) == 6
    names = []
    for lab in assignments.LABS:
        with zipfile.ZipFile(built / lab / "autograder" / "autograder.zip") as z:
            tests = sorted(Path(n).stem for n in z.namelist() if n.startswith("tests/"))
        assert tests == [assignments.question_name(ex) for ex in _exercises(lab)], lab
        names += tests
    assert len(names) == len(EXERCISES) == 16


@pytest.mark.parametrize("lab", assignments.LABS)
def test_student_version_has_no_answer_and_its_stubs_say_not_yet(built, lab):
    source = _read(built, lab, "source")
    student = _read(built, lab, "student")
    lab_nb = nbformat.read(ROOT / "labs" / f"{lab}.ipynb", as_version=4)
    lab_lines = {line.strip() for src in _code(lab_nb) for line in src.splitlines()}
    student_lines = {line.strip() for src in _code(student) for line in src.splitlines()}
    # the answers' own lines (those the lab does not share): in the master, not in the student's
    answer_lines = set()
    for src in _code(source):
        block = re.search(r"# BEGIN SOLUTION NO PROMPT\n(.*?)\n# END SOLUTION", src, re.S)
        if block:
            answer_lines |= {line.strip() for line in block[1].splitlines()
                             if line.strip() and not line.strip().startswith("#")}
    answer_lines -= lab_lines
    assert answer_lines, "the master holds the answers"
    assert not answer_lines & student_lines
    assert not any("SOLUTION" in line or "PROMPT" in line for line in student_lines)
    # each question cell is the stub: run as it is, it prints "Not yet"
    stubs = [src for src in _code(student) if assignments.CHECK_CALL.search(src)]
    assert [assignments.CHECK_CALL.search(s)[1] for s in stubs] == _exercises(lab)
    for src in stubs:
        ex = assignments.CHECK_CALL.search(src)[1]
        assert re.search(r"(?m)^result = \.\.\.$", src), ex
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(src, ex, "exec"), {"dl": dl})  # noqa: S102 (our own stub)
        assert out.getvalue().startswith(f"[{ex}] Not yet: "), out.getvalue()


@pytest.mark.parametrize("lab", assignments.LABS)
def test_reference_submission_marks_each_answer(built, lab):
    ref = _read(built, lab, "reference")
    marked = {}
    for cell in ref.cells:
        questions = cell.get("metadata", {}).get("otter", {}).get("tests")
        if questions:
            (name,) = questions
            marked[name] = cell.source
    assert sorted(marked) == [assignments.question_name(ex) for ex in _exercises(lab)]
    for name, src in marked.items():
        assert f'dl.check("{name.replace("_", ".")}", result)' in src


def _solution_answers() -> dict:
    """The solutions notebooks' answers, read from their stored outputs by
    tests/test_exercises.py (nothing is trained)."""
    module = sys.modules.get("test_exercises")
    if module is None:
        spec = importlib.util.spec_from_file_location(
            "test_exercises", ROOT / "tests" / "test_exercises.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return {ex: answer() for ex, answer in module.SOLUTION.items()}


def _grade(built, tmp_path, nb, lab, name) -> list[dict]:
    path = tmp_path / name / f"{lab}.ipynb"
    path.parent.mkdir()
    nbformat.write(assignments.questions_only(nb), path)
    results = assignments.grade(path, lab, tmp_path / name / "results")
    return assignments.question_results(results)


def test_autograder_gives_full_marks_to_the_solutions_answers(built, tmp_path):
    lab = GRADED_LAB
    answers = {ex: a for ex, a in _solution_answers().items() if ex in _exercises(lab)}
    filled = assignments.with_answers(_read(built, lab, "student"), answers)
    tests = _grade(built, tmp_path, filled, lab, "solutions")
    assert sorted(t["name"] for t in tests) == [assignments.question_name(ex)
                                               for ex in _exercises(lab)]
    assert all(t["score"] == t["max_score"] == 1 for t in tests), tests


def test_autograder_gives_no_marks_to_the_blank_student_version(built, tmp_path):
    lab = GRADED_LAB
    tests = _grade(built, tmp_path, _read(built, lab, "student"), lab, "blank")
    assert len(tests) == len(_exercises(lab))
    for t in tests:
        ex = t["name"].replace("_", ".")
        assert t["score"] == 0, t
        # the learner sees the check's verdict: what to fill in, in which form
        assert f"[{ex}] Not yet" in t["output"] and "result = " in t["output"], t


def test_instructors_page_says_what_each_check_accepts():
    page = " ".join((ROOT / "instructors.md").read_text(encoding="utf-8").split())
    for ex, exercise in EXERCISES.items():
        entry = f"**{ex}** ({exercise.title}): {' '.join(exercise.accepts.split())}."
        assert entry in page, ex


def test_each_autograder_test_scores_what_the_check_says(built, tmp_path):
    """Every lab's autograder tests, run in-process by Otter's own test-file code: one point for
    the solution notebook's answer, none for ``...`` (the report shows "Not yet") and none for a
    typical mistake (the report shows the check's hint)."""
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    answers = _solution_answers()
    for lab in assignments.LABS:
        with zipfile.ZipFile(built / lab / "autograder" / "autograder.zip") as z:
            z.extractall(tmp_path / lab)
        for ex in _exercises(lab):
            path = tmp_path / lab / "tests" / f"{assignments.question_name(ex)}.py"
            test = create_test_file(str(path), NBMetadataConfig())
            test.run({"result": answers[ex]})
            assert test.score == 1, test.summary()
            test.run({"result": ...})
            assert test.score == 0 and f"[{ex}] Not yet" in test.summary()
    # lab1.2, entries counted after the gradient was cleared: none below tiny on any seed
    test = create_test_file(str(tmp_path / GRADED_LAB / "tests" / "lab1_2.py"), NBMetadataConfig())
    test.run({"result": [0, 0, 0]})
    assert test.score == 0 and "[lab1.2] Hint: " in test.summary()
