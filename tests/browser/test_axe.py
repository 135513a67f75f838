"""axe-core on every page of the built site, in the light and in the dark theme, offline.

axe-core (shipped inside the pinned ``axe-playwright-python``) runs its WCAG 2.0, 2.1 and 2.2
level A and AA rules and its best-practice rules, plus ``label-content-name-mismatch`` (WCAG
2.5.3, level A; still marked experimental in axe 4.12). A test fails on any violation whose
impact is ``serious`` or ``critical``; ``moderate`` and ``minor`` ones are written, with every
other violation, to ``_build/screenshots/axe_report.txt`` for review. The page is checked as a
reader gets it: JavaScript run, MathJax typeset, the network blocked, in each colour theme.

What the themes change is colour, so the dark theme runs the colour rules (``color-contrast``,
``link-in-text-block``) and the light theme runs everything. The colour rules skip MathJax's
output: each equation is hundreds of elements (most of axe's time on a chapter) whose glyphs
take the colour of the text around them, and that text is checked.

Each test also saves the page's full-length screenshot in its theme under
``_build/screenshots/<theme>/``, and checks that the dark theme really is applied and logs no
error (the light theme's errors are checked by test_site.py).
"""

from __future__ import annotations

import pytest
from sitekit import (
    SHOTS,
    SITE,
    THEMES,
    offline_page,
    open_page,
    page_id,
    require_chromium,
    site_pages,
)

require_chromium()
axe_playwright = pytest.importorskip("axe_playwright_python.sync_playwright")

# every page: the content pages, and Sphinx's search page and index (index.html only redirects)
PAGES = site_pages() + [p for p in (SITE / "search.html", SITE / "genindex.html") if p.exists()]
FAILING_IMPACTS = {"serious", "critical"}
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
ALL_RULES = {
    "resultTypes": ["violations"],
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa",
                                          "wcag22aa", "best-practice"]},
    "rules": {"label-content-name-mismatch": {"enabled": True},
              **{rule: {"enabled": False} for rule in COLOUR_RULES}},
}
COLOUR = {"resultTypes": ["violations"], "runOnly": {"type": "rule", "values": COLOUR_RULES}}
RUNS = {  # theme -> [(axe context, axe options)]
    "light": [({"include": [["html"]]}, ALL_RULES),
              ({"include": [["html"]], "exclude": [["mjx-container"]]}, COLOUR)],
    "dark": [({"include": [["html"]], "exclude": [["mjx-container"]]}, COLOUR)],
}
CASES = [(theme, path) for theme in THEMES for path in PAGES]
IDS = [f"{theme}-{page_id(path)}" for theme, path in CASES]


@pytest.fixture(scope="module")
def axe_source():
    return axe_playwright.Axe().axe_script


def violations(page, axe_source, theme):
    page.evaluate(axe_source)
    found = []
    for context, options in RUNS[theme]:
        found += page.evaluate("([context, options]) => axe.run(context, options)"
                               ".then(r => r.violations)", [context, options])
    return found


def describe(violation) -> str:
    nodes = violation["nodes"]
    where = "; ".join(" ".join(map(str, n["target"])) for n in nodes[:3])
    more = f" (+{len(nodes) - 3} more)" if len(nodes) > 3 else ""
    why = nodes[0].get("failureSummary", "").replace("\n", " ") if nodes else ""
    return (f"{violation['id']} [{violation['impact']}] {violation['help']}: {where}{more}. "
            f"{why} ({violation['helpUrl'].split('?')[0]})")


@pytest.mark.parametrize(("theme", "path"), CASES, ids=IDS)
def test_no_serious_accessibility_violations(browser, axe_source, theme, path):
    name = page_id(path)
    page = offline_page(browser, theme=theme)
    open_page(page, path)
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    if theme == "dark":
        assert not page.errors, f"{name} (dark theme) logged errors: {page.errors[:3]}"

    shot = SHOTS / theme / (name.replace("/", "__") + ".png")
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)

    found = violations(page, axe_source, theme)
    page.context.close()
    with open(SHOTS / "axe_report.txt", "a") as report:
        for v in found:
            report.write(f"{theme:5s} {name}: {describe(v)}\n")
    failing = [describe(v) for v in found if v["impact"] in FAILING_IMPACTS]
    assert not failing, f"{name} ({theme} theme):\n" + "\n".join(failing)
