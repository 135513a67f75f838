"""Structure tests of the book: what nbval and the site build do not check by themselves.

* every notebook was executed top to bottom in a fresh kernel and committed with its outputs;
* no notebook stores an unexpected error, a warning on stderr, or widget state;
* every cell that nbval is told to treat specially says why, in its metadata;
* every notebook starts with the Colab install cell (tools/colab_cell.py);
* every notebook is in ``_toc.yml`` and every toc entry exists;
* every lab has a solution notebook that answers each of its "Your turn" stubs.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import colab_cell  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chapters", "labs", "solutions")
MAX_BYTES = 5 * 1024 * 1024
NBVAL_TAGS = {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}
STUB = re.compile(r"^# Your turn (\S+?):", re.M)


def all_notebooks():
    return sorted(p for d in FOLDERS for p in (ROOT / d).glob("*.ipynb"))


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def source(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code" and source(c).strip()]


def toc_entries():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                entries.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc.get("parts", toc.get("chapters", [])))
    return entries


NOTEBOOKS = all_notebooks()
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found under chapters/, labs/ or solutions/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_executed_in_order_in_a_fresh_kernel(path):
    nb = load(path)
    assert nb["nbformat"] == 4
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3"
    counts = [c.get("execution_count") for c in code_cells(nb)]
    assert counts, "no code cells"
    assert counts == list(range(1, len(counts) + 1)), (
        f"execution counts {counts} are not 1..{len(counts)}: re-run the notebook top to bottom "
        "in a fresh kernel (make execute NB=...) and commit it"
    )
    assert sum(len(c.get("outputs", [])) for c in code_cells(nb)) > 0, "no stored outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_unexpected_errors_warnings_or_widget_state(path):
    nb = load(path)
    assert "widgets" not in nb["metadata"], "widget state is stored in the notebook metadata"
    assert path.stat().st_size < MAX_BYTES, f"{path.stat().st_size} bytes, over {MAX_BYTES}"
    for i, cell in enumerate(code_cells(nb)):
        for out in cell.get("outputs", []):
            if out["output_type"] == "error":
                assert "raises-exception" in tags(cell), f"code cell {i} stored {out['ename']}"
            if out["output_type"] == "stream" and out["name"] == "stderr":
                pytest.fail(f"code cell {i} wrote to stderr (a warning?): {''.join(out['text'])[:200]}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_nbval_markers_give_a_reason_out_of_the_learners_view(path):
    for i, cell in enumerate(code_cells(load(path))):
        if tags(cell) & NBVAL_TAGS:
            reason = cell.get("metadata", {}).get("nbval_reason", "")
            assert isinstance(reason, str) and len(reason.split()) >= 3, (
                f"code cell {i} is tagged {sorted(tags(cell) & NBVAL_TAGS)}; say why in its "
                "metadata, 'nbval_reason': '<why its output varies>'"
            )
        assert not re.search(r"^\s*#.*\bnbval\b", source(cell), re.M | re.I), (
            f"code cell {i} talks about nbval in code a learner reads; keep test plumbing in "
            "the cell metadata"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_first_code_cell_installs_the_course_in_colab_only(path):
    cell = code_cells(load(path))[0]
    assert source(cell) == colab_cell.cell_source(ROOT), (
        "the first code cell must be the Colab install cell; run "
        f"`python tools/colab_cell.py {path.relative_to(ROOT)}` and re-execute the notebook")
    assert "remove-cell" in tags(cell)


def test_the_colab_cell_installs_from_the_configured_repository():
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert f"git+{url.rstrip('/')}" in colab_cell.install_command(ROOT)


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.parent.name in ("chapters", "labs")],
                         ids=[i for i in IDS if not i.startswith("solutions")])
def test_chapters_and_labs_compute_their_figures(path):
    outputs = [o for c in code_cells(load(path)) for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure among the outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_notebook_teaches_from_the_package_code_not_a_copy_of_it(path):
    """A block the package exports is not defined again in a notebook (a second copy, checked
    against the first, is two versions of one idea): a chapter shows the package's own code
    with ``dl.show_source``, and what it stored is the package's code as it is now."""
    import depthlab as dl

    exported = {name for name in dl.__all__ if isinstance(getattr(dl, name), type)}
    for k, cell in enumerate(code_cells(load(path))):
        src = source(cell)
        copies = exported & set(re.findall(r"^class (\w+)\b", src, re.M))
        assert not copies, f"code cell {k} defines {sorted(copies)}, which depthlab exports"
        call = re.fullmatch(r"dl\.show_source\(([\w., ]+)\)\s*", src)
        if "show_source" in src:
            assert call, f"code cell {k}: a dl.show_source call is a cell of its own"
            # each argument is a dotted name under dl: dl.BasicBlock.branch
            objects = [functools.reduce(getattr, name.strip().split(".")[1:], dl)
                       for name in call[1].split(",")]
            stored = ["".join(o["data"]["text/plain"]) for o in cell.get("outputs", [])
                      if "text/plain" in o.get("data", {})]
            assert stored == [repr(dl.show_source(*objects))], (
                f"code cell {k} shows an older version of the code (make execute)")
            # the site's code column holds about 82 characters: longer lines scroll sideways
            widest = max(len(line) for line in repr(dl.show_source(*objects)).splitlines())
            assert widest <= 82, f"code cell {k} shows lines of {widest} characters (<= 82)"


def test_no_helper_is_copied_between_notebooks():
    """A function or class defined with the same code (comments and layout aside) in two
    notebooks is one helper written twice: a helper that two notebooks need goes in depthlab
    (a solutions notebook must run alone: in Colab only the package is installed), and the
    notebook that teaches it shows it with dl.show_source."""
    where = {}
    for path in NOTEBOOKS:
        for cell in code_cells(load(path)):
            try:
                tree = ast.parse(source(cell))
            except SyntaxError:  # a cell with IPython syntax defines no helper
                continue
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    where.setdefault((node.name, ast.dump(node)), set()).add(path.stem)
    copied = {name: sorted(paths) for (name, _), paths in where.items() if len(paths) > 1}
    assert not copied, f"copied between notebooks: {copied}; put them in depthlab"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_each_panel_is_one_call_showing_one_figure(path):
    """A panel is one ``dl.panel`` cell: the live slider in a learner's kernel, the twin in the
    stored outputs (depthlab/book/twin.py). A second cell drawing the same figure (a
    ``dl.scrubber`` call, an ``ipywidgets`` panel hidden from the site) shows it twice in
    Jupyter and Colab."""
    for k, cell in enumerate(code_cells(load(path))):
        src = source(cell)
        assert "dl.scrubber(" not in src, f"code cell {k}: call dl.panel, which shows the twin"
        assert not ("remove-output" in tags(cell) and "interact" in src), (
            f"code cell {k}: a widget hidden from the site; give it to dl.panel(..., live=...)")
        if "dl.panel(" in src:
            twins = [o for o in cell.get("outputs", []) if "dl-twin" in
                     "".join(o.get("data", {}).get("text/html", ""))]
            assert len(twins) == 1 and len(cell["outputs"]) == 1, (
                f"code cell {k}: a dl.panel cell stores exactly its twin (make execute)")


def test_every_notebook_is_in_the_toc_and_every_entry_exists():
    entries = toc_entries()
    for path in NOTEBOOKS:
        stem = str(path.relative_to(ROOT).with_suffix(""))
        assert stem in entries, f"{stem} is not listed in _toc.yml"
    for entry in entries:
        assert any((ROOT / entry).with_suffix(s).exists() for s in (".ipynb", ".md")), (
            f"_toc.yml lists {entry}, which does not exist"
        )
    assert len(entries) == len(set(entries)), "an entry is listed twice in _toc.yml"


def solution_for(lab: Path) -> Path:
    return ROOT / "solutions" / f"{lab.stem}_solutions.ipynb"


def printed(cell) -> str:
    return "".join("".join(out.get("text", "")) for out in cell.get("outputs", []))


@pytest.mark.parametrize("lab", sorted((ROOT / "labs").glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_every_lab_stub_is_checked_and_answered_in_its_solution(lab):
    """A "Your turn" cell starts with '# Your turn <id>:', leaves ``result = ...`` for the
    learner and ends with ``dl.check("lab<id>", result)``, which prints "Not yet" as committed;
    the solutions notebook answers it in a cell with the same first line (and the code cells
    after it), whose check says the answer is right."""
    from depthlab.book.exercises import EXERCISES

    solution = solution_for(lab)
    assert solution.exists(), f"{lab.name} has no solution notebook {solution.name}"
    number = re.match(r"lab(\d+)_", lab.name)[1]
    stubs = {}
    for cell in code_cells(load(lab)):
        found = STUB.search(source(cell))
        if not found:
            assert "raise NotImplementedError" not in source(cell), (
                f"a stub in {lab.name} does not start with '# Your turn <id>:'")
            continue
        name = found[1]
        call = f'dl.check("lab{name}", result)'
        assert f"lab{name}" in EXERCISES, f"stub {name} of {lab.name} has no check in dl.check"
        assert "raise NotImplementedError" not in source(cell), (
            f"stub {name} raises: leave result = ... and end with {call}")
        assert "\nresult = ..." in source(cell) and source(cell).rstrip().endswith(call), (
            f"stub {name} must set result = ... and end with {call}")
        assert "raises-exception" not in tags(cell), f"stub {name} runs without error: untag it"
        assert "Not yet" in printed(cell), f"stub {name} does not show dl.check's 'Not yet'"
        stubs[name] = cell
    assert stubs, f"{lab.name} has no 'Your turn' exercise stubs"
    ids = {ex for ex in EXERCISES if ex.startswith(f"lab{number}.")}
    assert {f"lab{name}" for name in stubs} == ids, (
        f"dl.check knows {sorted(ids)}; {lab.name} has stubs {sorted(stubs)}")
    # an answer is the cell headed '# Your turn <id>:' and the code cells after it, up to the next
    answers: dict[str, list] = {}
    current = None
    for cell in code_cells(load(solution)):
        found = STUB.search(source(cell))
        if found:
            current = answers.setdefault(found[1], [])
        if current is not None:
            current.append(cell)
    for name in stubs:
        assert name in answers, f"stub '{name}' of {lab.name} has no answer in {solution.name}"
        cells = answers[name]
        assert "result = ..." not in source(cells[0]), (
            f"the answer to '{name}' in {solution.name} is still a stub")
        checked = [c for c in cells if f'dl.check("lab{name}"' in source(c)]
        assert checked, f"the answer to '{name}' in {solution.name} does not call dl.check"
        assert f"[lab{name}] Right:" in printed(checked[0]), (
            f"the answer to '{name}' in {solution.name} does not show dl.check's 'Right': "
            "execute the notebook, or the check rejects the solution's own answer")


def test_readme_names_the_commands_that_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make book" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


HEADING = re.compile(r"^#{1,4} .*?Exercise (\S+?):", re.M)


def chapter_exercises(chapter: Path) -> list[str]:
    labels = []
    for cell in load(chapter)["cells"]:
        if cell["cell_type"] == "markdown":
            text = source(cell)
            for block in re.split(r"^(?=:::+\{exercise\})", text, flags=re.M)[1:]:
                found = re.search(r"^:label:\s*(\S+)", block, re.M)
                assert found, f"an exercise in {chapter.name} has no :label:"
                labels.append(found[1])
    return labels


@pytest.mark.parametrize("chapter", sorted((ROOT / "chapters").glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_every_chapter_exercise_has_an_executed_answer_in_its_solution_notebook(chapter):
    labels = chapter_exercises(chapter)
    if not labels:
        pytest.skip(f"{chapter.name} sets no exercises")
    number = chapter.name[:2]
    solution = ROOT / "solutions" / f"ch{number}_solutions.ipynb"
    assert solution.exists(), f"{chapter.name} sets exercises but {solution.name} is missing"
    nb = load(solution)
    headed = {}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for label in HEADING.findall(source(cell)):
                headed[label] = i
    for label in labels:
        assert label in headed, (f"{solution.name} has no section headed 'Exercise {label}: ...'")
        following = nb["cells"][headed[label] + 1:]
        answer = []
        for cell in following:
            if cell["cell_type"] == "markdown" and HEADING.search(source(cell)):
                break
            if cell["cell_type"] == "code" and source(cell).strip():
                answer.append(cell)
        assert answer, f"exercise {label} has no code under its heading in {solution.name}"
        assert any(cell.get("outputs") for cell in answer), (
            f"the code answering {label} in {solution.name} shows no output")


CROSS_GLUE = re.compile(r"\{glue:text\}`([^`]*?\.ipynb)::([^`]*)`")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_glued_numbers_read_as_numbers_in_the_page(path):
    # a NumPy scalar glued as is reads "np.float64(0.67)" in the page: glue float(x) instead
    problems = []
    for cell in load(path)["cells"]:
        for output in cell.get("outputs", []):
            book = output.get("metadata", {}).get("scrapbook")
            if book:
                text = output.get("data", {}).get(book.get("mime_prefix", "") + "text/plain", "")
                if re.match(r"np\.\w+\(", text):
                    problems.append(f"{book['name']} = {text}")
    assert not problems, f"{path.name} glues NumPy scalars: " + ", ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_glue_from_another_notebook_names_a_key_it_glues_and_a_format(path):
    # myst-nb splits `{glue:text}` at its last colon, so 'other.ipynb::key' without ':format'
    # is read as the key 'other.ipynb:' (a build warning); the key must exist over there
    for cell in load(path)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for target, rest in CROSS_GLUE.findall(source(cell)):
            key, _, fmt = rest.partition(":")
            assert fmt, f"{path.name}: {{glue:text}}`{target}::{rest}` needs a format, e.g. ':s'"
            other = (path.parent / target).resolve()
            assert other.exists(), f"{path.name} glues from {target}, which does not exist"
            names = {o["metadata"]["scrapbook"]["name"]
                     for c in load(other)["cells"] for o in c.get("outputs", [])
                     if "scrapbook" in o.get("metadata", {})}
            assert key in names, f"{path.name} quotes {key!r}, which {other.name} does not glue"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_markdown_outputs_carry_no_dollar_math(path):
    # myst-nb renders a cell's text/markdown output as GitHub-flavoured Markdown (_config.yml),
    # without dollarmath: a '$x$' in a table header reaches the reader as raw TeX (write *x*,
    # or Unicode, there instead)
    problems = []
    for index, cell in enumerate(load(path)["cells"]):
        for output in cell.get("outputs", []):
            text = "".join(output.get("data", {}).get("text/markdown", ""))
            problems += [f"cell {index}: {m}" for m in re.findall(r"\$[^$\n]+\$", text)]
    assert not problems, f"{path.name} shows unrendered math: " + ", ".join(problems[:3])


MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_glued_value_inside_math(path):
    # a {glue:text} role inside $...$ is never filled in: MathJax prints the role's own text
    problems = []
    for index, cell in enumerate(load(path)["cells"]):
        if cell["cell_type"] == "markdown":
            problems += [f"cell {index}: {m[:60]}" for m in MATH.findall(source(cell))
                         if "{glue" in m]
    assert not problems, (f"{path.name} glues inside math (glue outside it, or glue a formatted "
                          "string): " + ", ".join(problems[:3]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_bookkeeping_cells_are_folded_in_jupyter_too(path):
    # remove-cell hides a glue cell on the site only; in JupyterLab the cell's source is folded
    # by jupyter.source_hidden, so that a learner reads the experiment, not the bookkeeping
    open_ = [index for index, cell in enumerate(load(path)["cells"])
             if cell["cell_type"] == "code"
             and "remove-cell" in cell["metadata"].get("tags", [])
             and "%pip" not in source(cell)  # the Colab install cell stays readable
             and not cell["metadata"].get("jupyter", {}).get("source_hidden")]
    assert not open_, f"{path.name}: remove-cell cells {open_} need jupyter.source_hidden"
