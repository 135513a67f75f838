"""One headless Chromium per test process for every browser test (see sitekit.py for the rest).

The tests run in parallel with pytest-xdist (``make browser``: ``-n 2``), each worker with its
own browser. Report files are shared: every worker appends whole lines to them (sitekit's
``append_lines``), and the main process, once every worker is done, sorts them into the order of
the pages, so that the reports read the same however the tests were spread over the workers.
"""

import re
import shutil

import pytest
from sitekit import ARGS, CHROMIUM, SHOTS, THEMES, all_pages, page_id, site_pages, write_report

DATA_URL = re.compile(r"data:[^\"')]+")


def is_main_process(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    # fresh screenshots and reports each run; only in the main process, so that pytest-xdist's
    # workers (-n 2) never delete each other's files
    if is_main_process(session.config):
        shutil.rmtree(SHOTS, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Longest tests first (the keyboard walks, then the pages by size, largest first), so that
    with -n 2 no worker is left running a long test alone at the end. Only the order changes."""
    # what takes a page long is its number of elements (axe, screenshots): its HTML's length,
    # less the twin panels' frames (data: URLs), follows it closely
    sizes = {page_id(p): len(DATA_URL.sub("", p.read_text(encoding="utf-8", errors="replace")))
             for p in all_pages()}

    def cost(item):
        name = getattr(item, "originalname", "")
        if name == "test_tab_reaches_everything_visibly_in_order":
            return float("inf")
        callspec = getattr(item, "callspec", None)
        path = callspec.params.get("path") if callspec else None
        if name == "test_page" and path is not None:
            return sizes.get(page_id(path), 0)
        return 0

    items.sort(key=cost, reverse=True)  # stable: equal costs keep their order


def _sort_report(path, key):
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines()
        write_report(path, "".join(f"{line}\n" for line in sorted(lines, key=key)))


def pytest_sessionfinish(session):
    if not is_main_process(session.config):
        return
    order = {page_id(p): k for k, p in enumerate(all_pages())}
    content = {page_id(p): k for k, p in enumerate(site_pages())}
    last = len(order)

    def weight_key(line):  # "   1234567  chapters/01_depth_problem.html"
        parts = line.split(None, 1)
        return content.get(parts[1] if len(parts) == 2 else "", last)

    def axe_key(line):  # "light chapters/01_depth_problem.html: rule [impact] ..."
        theme, _, rest = line.partition(" ")
        name = rest.strip().split(": ", 1)[0]
        return (THEMES.index(theme) if theme in THEMES else len(THEMES), order.get(name, last))

    _sort_report(SHOTS / "page_weights.txt", weight_key)
    _sort_report(SHOTS / "axe_report.txt", axe_key)


@pytest.fixture(scope="session")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
