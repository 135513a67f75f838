"""Static accessibility checks of the notebooks (no build, no browser): every figure carries a
text alternative in its cell's metadata, for myst-nb to write into the page's <img alt>.

The convention (README, "Accessibility"): one figure per code cell, and the cell's metadata
``{"mystnb": {"image": {"alt": "..."}}}`` says what the figure shows and what the reader should
see in it. No-kernel twin panels get theirs from ``dl.scrubber(..., alt=...)``. What counts as
a useless alt text (a path, a hash, "plot", a bare parameter value, ...) is decided by
``alt_text_problem`` in tests/browser/sitekit.py, which the built-site test uses too.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from sitekit import alt_text_problem  # noqa: E402

NOTEBOOKS = sorted(p for d in ("chapters", "labs", "solutions") for p in (ROOT / d).glob("*.ipynb"))
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]
FIGURE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


def code_cells(path):
    nb = nbformat.read(path, as_version=4)
    return [(k, c) for k, c in enumerate(nb.cells) if c.cell_type == "code"]


def figures(cell) -> int:
    return sum(1 for o in cell.get("outputs", []) if any(t in o.get("data", {})
                                                         for t in FIGURE_TYPES))


def twin_outputs(cell) -> list[str]:
    return [o["data"]["text/html"] for o in cell.get("outputs", [])
            if 'class="dl-twin"' in str(o.get("data", {}).get("text/html", ""))]


class Tags(HTMLParser):
    def __init__(self, text):
        super().__init__()
        self.tags = []
        self.feed("".join(text) if isinstance(text, list) else text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_there_are_notebooks_to_check():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_one_figure_per_code_cell(path):
    # the cell's one alt text would otherwise describe two different figures
    crowded = [k for k, cell in code_cells(path) if figures(cell) > 1]
    assert not crowded, f"{path.name}: cells {crowded} show more than one figure; split them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_figure_has_alt_text_in_its_cell_metadata(path):
    problems = []
    for k, cell in code_cells(path):
        if figures(cell):
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
            problem = alt_text_problem(alt)
            if problem:
                first_line = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
                problems.append(f"cell {k} ({first_line!r}): {problem}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_twin_frame_is_described_and_its_slider_speaks_its_value(path):
    problems = []
    for k, cell in code_cells(path):
        for html in twin_outputs(cell):
            tags = Tags(html).tags
            for n, (_, img) in enumerate(t for t in tags if t[0] == "img"):
                problem = alt_text_problem(img.get("alt"))
                if problem:
                    problems.append(f"cell {k}, frame {n}: {problem} (dl.scrubber(..., alt=...))")
            sliders = [a for t, a in tags if t == "input"]
            if not all("aria-valuetext" in s for s in sliders):
                problems.append(f"cell {k}: twin made by an older depthlab.book.twin.scrubber "
                                "(no aria-valuetext): re-execute the notebook")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_images_in_the_prose_have_alt_text(path):
    nb = nbformat.read(path, as_version=4)
    problems = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for alt in re.findall(r"!\[([^\]]*)\]\(", cell.source):
            if alt_text_problem(alt):
                problems.append(f"cell {k}: ![{alt}](...): {alt_text_problem(alt)}")
        for tag, attrs in Tags(cell.source).tags:
            if tag == "img" and alt_text_problem(attrs.get("alt")):
                problems.append(f"cell {k}: <img>: {alt_text_problem(attrs.get('alt'))}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


# ---------------------------------------------------------------- the book's own fixes


def test_the_page_fixes_replace_deprecated_roles_and_mismatched_names():
    sys.path.insert(0, str(ROOT / "_ext"))
    import a11y

    body = ('<div role="list" class="citation-list"><div class="citation" role="doc-biblioentry">'
            '</div></div><details class="hide"><summary aria-label="Toggle hidden content">'
            '<p class="collapsed">Show code cell source</p></summary></details>')
    context = {"body": body}
    a11y.fix_page(None, "references", "page.html", context, None)
    assert 'role="doc-biblioentry"' not in context["body"]
    assert context["body"].count('role="listitem"') == 1
    assert "<summary>" in context["body"] and "Toggle hidden content" not in context["body"]


def test_the_sidebar_is_the_themes_own_with_the_title_in_a_landmark():
    # _config.yml lists the left sidebar's components to wrap the title (sidebar-brand.html);
    # a theme upgrade that changes its default list must be seen here, not lost silently
    import configparser

    import sphinx_book_theme
    import yaml

    theme = configparser.ConfigParser()
    theme.read(Path(sphinx_book_theme.__file__).parent / "theme" / "sphinx_book_theme"
               / "theme.conf")
    default = [s.strip() for s in theme["theme"]["sidebars"].split(",")]
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    ours = config["sphinx"]["config"]["html_sidebars"]["**"]
    assert [s.replace("sidebar-brand.html", "navbar-logo.html") for s in ours] == default
    assert 'include "navbar-logo.html"' in (ROOT / "_templates" / "sidebar-brand.html").read_text()
