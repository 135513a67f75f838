"""`make test`'s nbval comparison catches what it must and lets through what differs by machine.

`make nbval` runs nbval with tests/nbval/portable.cfg, which masks numbers and other values that
come out of a run before the committed and the new outputs are compared. These tests run that
same nbval, on small notebooks, in a subprocess:

* a notebook whose numbers (printed, in a table, glued) or glued words differ from the committed
  ones passes, as a notebook executed on another CPU must;
* a changed sentence, a missing or an extra output, an exception, and a check of
  ``depthlab.conclusions`` that fails make nbval fail.

A reference notebook is executed once with nbclient, which stores its outputs; each case then
changes the code (or the stored outputs) and asks nbval whether the run still matches.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import execute  # noqa: E402  (make execute's kernel start, tried again if the kernel dies)

SANITIZER = ROOT / "tests" / "nbval" / "portable.cfg"

# The reference notebook: a sentence with trained numbers in it, a table, glued values and a
# checked conclusion, as the course's notebooks have them. Only the cases about the check import
# depthlab (and with it PyTorch, a few seconds per kernel); the others print their table by hand.
CELLS = {
    "setup": "from myst_nb import glue\nloss, steps = 0.1234, 42",
    "sentence": 'print(f"final loss {loss:.3f} after {steps} steps; it trains")',
    # a rate table: the best arm's number in bold, as dl.rate_table marks the best rate
    "table": ('best = "plain"\nrows = [["plain", f"{loss:.2g}", "never"], ["residual", '
              'f"{loss / 7:.2g}", str(steps)]]\nfor row in rows:\n    bold = "**" if row[0] == '
              'best else ""\n    print(f"{row[0]:<10}{bold + row[1] + bold:>12}{row[2]:>8}")'),
    "glue": 'glue("best", "learned alpha", display=False)\nglue("loss", round(loss, 2), '
            "display=False)",
    # a NumPy array, printed: [0.1  0.25 0.3 ] on one machine, [0.1 0.5 0.3] on another
    "array": "import numpy as np\nprint(np.array([0.1, 0.25, 0.3]))",
    # steps to a target, and the rate that reached it first; "never" when none did
    "reached": ('steps=None\nprint("pre-LN:", "never" if steps is None else f"{steps} (lr 0.003)"'
                ', "steps to 0.1")'),
    # a rate table's row that no rate scored on one machine ("none scored") and did on another
    "scored": ('median = None\nbest = "0.01" if median else "none (tie-break 0.01)"\n'
               'print("| alpha=1 |", "**60**" if median else "never", "| never |", best, "|")'),
}
CHECK = 'import depthlab as dl\ndl.conclusions({"loss_is_small": (loss, "<", 0.5)})'


def notebook(cells: dict[str, str]):
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(src) for src in cells.values()],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})  # fmt: skip


def executed(cells: dict[str, str], folder: Path):
    nb = notebook(cells)
    with execute.running_kernel(nb, folder / "reference.ipynb", timeout=120) as client:
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    return nb


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The reference notebooks, executed: their outputs are the 'committed' ones. The second
    ends with a check."""
    folder = tmp_path_factory.mktemp("reference")
    return executed(CELLS, folder), executed({**CELLS, "check": CHECK}, folder)


def variant(reference, cell: str, source: str | None = None, outputs=None):
    """The reference with one cell's code (or its stored outputs) changed."""
    nb = copy.deepcopy(reference)
    index = list(CELLS).index(cell) if cell in CELLS else len(nb.cells) - 1
    if source is not None:
        nb.cells[index].source = source
    if outputs is not None:
        nb.cells[index].outputs = outputs(nb.cells[index].outputs)
    return nb


def extra_display(outputs):
    # the committed cell showed one more thing than the code now shows
    return outputs + [nbformat.v4.new_output("display_data", data={"text/plain": "Figure"})]


CASES = {
    # name: (the change to the reference, whether nbval must pass)
    "same": (lambda ref: ref, True),
    "other_digits": (lambda ref: variant(
        ref, "setup", "import depthlab as dl\nfrom depthlab import glue\n"
                      "loss, steps = 0.4567, 317"), True),
    "other_glued_words": (lambda ref: variant(
        ref, "glue", 'glue("best", "ReZero", display=False)\n'
                     'glue("loss", 0.03, display=False)'), True),
    # NumPy pads an array's numbers to the widest one, inside the brackets too
    "other_array_padding": (lambda ref: variant(
        ref, "array", CELLS["array"].replace("0.25", "0.5")), True),
    # a target one machine reaches (at some rate) and another does not
    "other_target_reached": (lambda ref: variant(
        ref, "reached", CELLS["reached"].replace("steps=None", "steps=60")), True),
    "other_best_rate": (lambda ref: variant(
        ref, "table", CELLS["table"].replace('best = "plain"', 'best = "residual"')), True),
    "other_row_scored": (lambda ref: variant(
        ref, "scored", CELLS["scored"].replace("median = None", "median = 60")), True),
    "changed_sentence": (lambda ref: variant(
        ref, "sentence", 'print(f"final loss {loss:.3f} after {steps} steps; it diverges")'),
        False),
    "missing_output": (lambda ref: variant(ref, "sentence", "message = 'it trains'"), False),
    "missing_display": (lambda ref: variant(ref, "sentence", outputs=extra_display), False),
    "extra_output": (lambda ref: variant(
        ref, "glue", CELLS["glue"] + '\nprint("one more line")'), False),
    "exception": (lambda ref: variant(ref, "table", "raise RuntimeError('broken')"), False),
}
# the same, on the reference that ends with a check
CHECK_CASES = {
    "check_holds": (lambda ref: ref, True),
    "failed_check": (lambda ref: variant(ref, "check", CHECK.replace('"<"', '">"')), False),
}
ALL = {**CASES, **CHECK_CASES}


@pytest.fixture(scope="module")
def verdicts(reference, tmp_path_factory):
    """Run nbval once over one notebook per case; whether each notebook passed."""
    folder = tmp_path_factory.mktemp("cases")
    plain, checked = reference
    for cases, ref in ((CASES, plain), (CHECK_CASES, checked)):
        for name, (change, _) in cases.items():
            nbformat.write(change(ref), folder / f"{name}.ipynb")
    report = folder / "report.xml"
    # as the Makefile runs it, with the plugin that starts a kernel again when it dies starting
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DEPTHLAB_DEVICE": "cpu",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests" / "nbval"),
                                                      os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-kernel-name", "python3", "-p", "kernels",
         "--nbval-sanitize-with", str(SANITIZER), "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
         f"--junitxml={report}", "--rootdir", str(folder), str(folder)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert report.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    passed, seen = {}, set()
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("classname", "").removesuffix(".ipynb")  # one per notebook cell
        seen.add(name)
        broken = case.find("failure") is not None or case.find("error") is not None
        passed[name] = passed.get(name, True) and not broken
    assert seen == set(ALL), f"nbval did not run every case: {sorted(set(ALL) - seen)}"
    return passed, result.stdout


@pytest.mark.parametrize("case", list(ALL))
def test_the_portable_comparison(verdicts, case):
    passed, log = verdicts
    must_pass = ALL[case][1]
    assert passed[case] == must_pass, (
        f"nbval {'failed' if must_pass else 'passed'} on the case {case!r}, where it must "
        f"{'pass' if must_pass else 'fail'}:\n{log[-4000:]}"
    )


def test_the_sanitizer_is_the_one_the_makefile_uses():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    nbval = makefile.split("\nnbval: setup", 1)[1].split("\n\n", 1)[0]
    assert "--nbval-sanitize-with tests/nbval/portable.cfg" in nbval
    strict = makefile.split("\nnbval-strict: setup", 1)[1].split("\n\n", 1)[0]
    assert "sanitize" not in strict, "make nbval-strict must compare every digit"
    test = next(line for line in makefile.splitlines() if line.startswith("test:"))
    assert " nbval " in f" {test} " and "nbval-strict" not in test
