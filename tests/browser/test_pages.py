"""Every page of the built site, opened from disk in headless Chromium, offline, once: in the
light theme, then switched to the dark theme with the theme's own colour-mode button (as a
reader switches it), each theme running every check of that theme.

Run after the site is built (``make browser`` does both in order). Each page is one test,
``test_page[<page>]``; pytest-xdist runs them in parallel (``-n 2``). The pages are the content
pages and Sphinx's search page and index (index.html only redirects). Loading a page in the dark
theme (the theme a reader chose on another page, from localStorage) is test_keyboard.py's
business, which walks two pages in each theme.

**Light** (the page as most readers get it):

* the light theme is applied; a full-length screenshot, ``_build/screenshots/light/<page>.jpg``;
* on the content pages: every image loaded; math rendered by MathJax with no raw ``$...$`` /
  ``\\(...\\)`` (nor a Markdown table printed as text) left in the prose; every internal link
  points to a file that exists; the page and every file it loaded weigh under 5 MB (written to
  ``_build/screenshots/page_weights.txt``);
* axe-core: its WCAG 2.0, 2.1 and 2.2 level A and AA rules and its best-practice rules, plus
  ``label-content-name-mismatch`` (WCAG 2.5.3, level A; still marked experimental in axe 4.12),
  on the whole page, and its colour rules (below);
* on the content pages, last: every no-kernel twin panel responds to its slider, without an
  error (it moves the sliders).

**Dark**: the button switches the page to the dark theme (with the system's colour scheme set to
dark too: myst-nb's stylesheet follows it), a full-length screenshot in
``_build/screenshots/dark/``, and axe's colour rules (``color-contrast``,
``link-in-text-block``): what the themes change is colour.

In both themes, the page logs no error and reaches for no network (checked before axe, whose
own reading of the stylesheets Chromium refuses on file:// pages).

The order, with two switches of theme: light (screenshot, the content checks), dark
(screenshot, then axe's colour rules), light again (axe's other rules and its colour rules), and
last the twins' sliders.

The colour rules skip MathJax's output: each equation is hundreds of elements whose glyphs take
the colour of the text around them, and that text is checked. They check each
syntax-highlighted token class once per kind of code block, not its thousands of repeats of the
same colour on the same background (``FLATTEN_REPEATED_TOKENS``), and each kind of table row
once per table, not its hundreds of repeats (``MARK_REPEATED_ROWS``: the Running page's tables).

An axe violation whose impact is ``serious`` or ``critical`` fails the test; every violation,
whatever its impact, is written to ``_build/screenshots/axe_report.txt`` for review. Every check
of a visit runs even when an earlier one failed, and the test reports all that failed.

Search, the landing page's navigation: test_site.py; keyboard use: test_keyboard.py; the text
alternatives of the figures: test_alt_text.py. The whole module is skipped, with a message saying
how to install a browser, when there is none, unless REQUIRE_BROWSER=1 (set by .ci/run), which
turns the skip into an error (sitekit.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from sitekit import (
    SHOTS,
    SITE,
    all_pages,
    append_lines,
    offline_page,
    open_page,
    page_id,
    require_chromium,
    site_pages,
)

require_chromium()
axe_playwright = pytest.importorskip("axe_playwright_python.sync_playwright")

MAX_PAGE_BYTES = 5 * 1024 * 1024
SCREENSHOT_TIMEOUT_MS = 180_000
CONTENT = set(site_pages())  # the pages with the offline checks (not search, not genindex)
PAGES = all_pages()
IDS = [page_id(path) for path in PAGES]
WEIGHTS = SHOTS / "page_weights.txt"
AXE_REPORT = SHOTS / "axe_report.txt"

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
# The colour rules skip MathJax's output (see above), the repeats of a syntax-highlighted token
# and the repeats of a table row. A token's contrast is its class's colour on its code block's
# background, the same for every repeat, so the first span of each token class in each kind of
# block keeps its colour and the repeats become plain text of the block (checked too, once per
# block): on a lab page about 30 spans instead of 7,000, two thirds of axe's time. A table row's
# colours are its table's and its own classes', so the first row of each kind in each table is
# checked and its repeats are marked and left out: the Running page's tables have hundreds.
REPEATED_ROW = "dl-axe-repeat"
COLOUR_CONTEXT = {"include": [["html"]], "exclude": [["mjx-container"], [f"[{REPEATED_ROW}]"]]}
AXE_RUNS = {  # theme -> [(axe context, axe options)]
    "light": [({"include": [["html"]]}, ALL_RULES), (COLOUR_CONTEXT, COLOUR)],
    "dark": [(COLOUR_CONTEXT, COLOUR)],
}
FLATTEN_REPEATED_TOKENS = """() => {
    const seen = new Set();
    for (const span of [...document.querySelectorAll('.highlight span')]) {
        const block = span.closest('.highlight').parentElement;
        const key = span.className + '|' + (block ? block.className : '');
        if (seen.has(key)) span.replaceWith(document.createTextNode(span.textContent));
        else seen.add(key);
    }
    return seen.size; }"""
MARK_REPEATED_ROWS = f"""() => {{
    let marked = 0;
    for (const table of document.querySelectorAll('table')) {{
        const seen = new Set();
        for (const row of table.querySelectorAll(':scope > * > tr')) {{
            const key = row.parentElement.tagName + '|' + row.className + '|' +
                [...row.cells].map(c => c.tagName + '.' + c.className + '.' +
                    [...c.querySelectorAll('*')].map(e => e.tagName + '.' + e.className)
                    .join(',')).join('|');
            if (seen.has(key)) {{ row.setAttribute('{REPEATED_ROW}', ''); marked++; }}
            else seen.add(key);
        }}
    }}
    return marked; }}"""
# After a switch of theme, the colours settle (the theme's transitions) before anything is
# measured; an endless animation (a spinner) is not waited for.
COLOURS_SETTLED = """() => Promise.all(document.getAnimations()
    .filter(a => a.effect && a.effect.getTiming().iterations !== Infinity)
    .map(a => a.finished.catch(() => null))).then(() => true)"""


@pytest.fixture(scope="module")
def axe_source():
    return axe_playwright.Axe().axe_script


# ---------------------------------------------------------------- the checks, one per function
# Each takes the open page and its name, and asserts.


def theme_is_applied(page, name, theme):
    applied = page.evaluate("document.documentElement.dataset.theme")
    assert applied == theme, f"{name}: the {theme} theme is not applied ({applied!r})"


def nothing_logged_an_error_or_reached_the_network(page, name, theme):
    assert not page.blocked, f"{name} ({theme}) tried to reach the network: {page.blocked[:3]}"
    assert not page.errors, f"{name} ({theme}) logged errors: {page.errors[:3]}"


def every_image_loaded(page, name):
    broken = page.evaluate("""() => [...document.images]
        .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))""")
    assert not broken, f"{name}: images that did not load: {broken}"


def math_is_rendered(page, name):
    """MathJax output wherever the page has math, and no raw TeX (or Markdown table) left."""
    math_nodes = page.evaluate("document.querySelectorAll('.math').length")
    rendered = page.evaluate("document.querySelectorAll('mjx-container').length")
    if math_nodes:
        assert rendered >= math_nodes, f"{name}: {math_nodes} math nodes, {rendered} rendered"
    prose = page.evaluate("""() => {
        const main = document.querySelector('main') || document.body;
        const copy = main.cloneNode(true);
        copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight, textarea')
            .forEach(e => e.remove());
        return copy.innerText; }""")
    raw = re.findall(r"\$\$|\\\(|\\\[|(?<![\w$])\$[^$\s][^$]{0,80}\$(?![\w$])", prose)
    assert not raw, f"{name}: unrendered math in the text: {raw[:3]}"
    # a Markdown table printed by a code cell, left as text: its delimiter row shows as pipes
    # and dashes (turned into em dashes by the smart-quotes pass)
    pipes = re.findall(r"\|\s*(?:-{3,}|—)\s*\|\s*(?:-{3,}|—)\s*\|", prose)
    assert not pipes, f"{name}: a table left as raw Markdown text: {pipes[:2]}"


def internal_links_resolve(page, name):
    hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
    missing = []
    for href in hrefs:
        url = urlparse(href)
        if url.scheme == "file":
            target = Path(unquote(url.path))
            if not target.exists():
                missing.append(str(target.relative_to(SITE)) if SITE in target.parents else href)
    assert not missing, f"{name}: links to missing pages: {sorted(set(missing))[:5]}"


def shown_frame(twin):
    return twin.evaluate("t => [...t.querySelectorAll('img')].findIndex("
                         "i => i.style.display !== 'none')")


def twins_respond_to_their_sliders(page, name):
    logged = len(page.errors)
    twins = page.locator(".dl-twin")
    for k in range(twins.count()):
        twin = twins.nth(k)
        slider = twin.locator("input[type=range]")
        before = shown_frame(twin)
        label_before = twin.locator("output").inner_text()
        at_max = slider.get_attribute("value") == slider.get_attribute("max")
        slider.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        after = shown_frame(twin)
        assert after != before and after >= 0, f"{name}: twin {k} did not change frame"
        assert twin.locator("output").inner_text() != label_before, f"{name}: twin {k} label"
    assert not page.errors[logged:], f"{name}: errors while moving the twins' sliders: " + (
        f"{page.errors[logged:][:3]}")


def page_weight_is_under_the_limit(page, name):
    """The page plus every file it loaded (before axe, which only reads them again); written to
    page_weights.txt whether or not it fits."""
    files = {Path(unquote(urlparse(u).path)) for u in page.files}
    weight = sum(f.stat().st_size for f in files if f.is_file())
    append_lines(WEIGHTS, [f"{weight:>10d}  {name}"])
    assert weight < MAX_PAGE_BYTES, f"{name} weighs {weight / 1e6:.1f} MB with its assets"


def describe(violation) -> str:
    nodes = violation["nodes"]
    where = "; ".join(" ".join(map(str, n["target"])) for n in nodes[:3])
    more = f" (+{len(nodes) - 3} more)" if len(nodes) > 3 else ""
    why = nodes[0].get("failureSummary", "").replace("\n", " ") if nodes else ""
    return (f"{violation['id']} [{violation['impact']}] {violation['help']}: {where}{more}. "
            f"{why} ({violation['helpUrl'].split('?')[0]})")


def no_serious_accessibility_violations(page, name, theme):
    """axe-core's runs for ``theme`` (axe already loaded); every violation goes to
    axe_report.txt."""
    found = []
    for context, options in AXE_RUNS[theme]:
        # both are idempotent (the second theme's run finds nothing more to do), and what
        # they change is invisible to the other rules: a code block's text, the same, without
        # its colour spans, and an attribute on a repeated table row
        if options is COLOUR:
            page.evaluate(FLATTEN_REPEATED_TOKENS)
            page.evaluate(MARK_REPEATED_ROWS)
        found += page.evaluate("([context, options]) => axe.run(context, options)"
                               ".then(r => r.violations)", [context, options])
    append_lines(AXE_REPORT, [f"{theme:5s} {name}: {describe(v)}" for v in found])
    failing = [describe(v) for v in found if v["impact"] in FAILING_IMPACTS]
    assert not failing, f"{name} ({theme} theme):\n" + "\n".join(failing)


def switch_theme(page, theme):
    """The theme's colour-mode button (it cycles light, dark and auto) pressed until the page is
    in ``theme`` (at most three presses), with the system's colour scheme set to the same."""
    page.emulate_media(color_scheme=theme)
    for _ in range(3):
        if page.evaluate("document.documentElement.dataset.mode") == theme:
            break
        page.evaluate("document.querySelector('.theme-switch-button').click()")
    page.evaluate(COLOURS_SETTLED)


def save_screenshot(page, name, theme):
    shot = SHOTS / theme / (name.replace("/", "__") + ".jpg")
    shot.parent.mkdir(parents=True, exist_ok=True)
    # a long page takes seconds to paint whole; on a busy machine (two workers, or notebooks
    # running beside the tests) Playwright's default 30 s has run out. JPEG, not PNG: a shot is
    # for a person to look at, and Chromium encodes a page-long JPEG in about half the time
    page.screenshot(path=str(shot), full_page=True, type="jpeg", quality=85,
                    timeout=SCREENSHOT_TIMEOUT_MS)


# ---------------------------------------------------------------- one visit per page


def test_the_site_was_built():
    assert PAGES, f"no pages under {SITE}: build the site first (make build)"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_page(browser, axe_source, path):
    name = page_id(path)
    page = offline_page(browser, theme="light")
    failed = []

    def check(function, *args):
        try:
            function(page, name, *args)
        except AssertionError as error:
            failed.append(f"[{function.__name__}] {error}")

    def show(theme):  # the page in ``theme``, as it looks, before anything moves
        check(theme_is_applied, theme)
        save_screenshot(page, name, theme)

    content = path in CONTENT
    try:
        open_page(page, path)
        show("light")
        if content:
            check(every_image_loaded)
            check(math_is_rendered)
            check(internal_links_resolve)
            check(page_weight_is_under_the_limit)
        switch_theme(page, "dark")
        show("dark")
        # before axe, which reads the stylesheets again with XMLHttpRequest: from file:// pages
        # Chromium refuses that and logs errors that a reader never causes
        check(nothing_logged_an_error_or_reached_the_network, "light and dark")
        page.evaluate(axe_source)
        check(no_serious_accessibility_violations, "dark")  # the colour rules, while dark
        switch_theme(page, "light")  # the second and last switch
        check(theme_is_applied, "light")
        check(no_serious_accessibility_violations, "light")  # every rule
        if content:
            check(twins_respond_to_their_sliders)  # moves the sliders: after the shots and axe
    finally:
        page.context.close()
    assert not failed, f"{name}: {len(failed)} check(s) failed:\n" + "\n".join(failed)
