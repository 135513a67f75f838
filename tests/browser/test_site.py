"""Browser tests of the built site: every page, opened from disk in headless Chromium, offline.

Run after the site is built (``make browser`` does both in order). For every HTML page of
``_build/html`` they assert: no console errors; every image loaded; math rendered by MathJax with
no raw ``$...$`` / ``\\(...\\)`` left in the text; every internal link points to a file that exists;
every no-kernel twin panel responds to its slider; the page and its assets weigh under 5 MB. They
also check that search works offline, and write a page-weight table to
``_build/screenshots/page_weights.txt``. Each page in the light and the dark theme, its
accessibility and its screenshots are in test_axe.py; keyboard use in test_keyboard.py.

The whole module is skipped, with a message saying how to install it, when Chromium is missing,
unless REQUIRE_BROWSER=1 (set by .ci/run), which turns the skip into an error (sitekit.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from sitekit import (
    ROOT,
    SHOTS,
    SITE,
    offline_page,
    open_page,
    page_id,
    require_chromium,
    site_pages,
)

require_chromium()

MAX_PAGE_BYTES = 5 * 1024 * 1024
PAGES = site_pages()
IDS = [page_id(p) for p in PAGES]


def test_the_site_was_built():
    assert PAGES, f"no pages under {SITE}: build the site first (make build)"


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_page_offline(browser, path):
    page = offline_page(browser)
    open_page(page, path)
    name = str(path.relative_to(SITE))

    # 1. no console errors, no request that needed the network
    assert not page.blocked, f"{name} tried to reach the network: {page.blocked[:3]}"
    assert not page.errors, f"{name} logged errors: {page.errors[:3]}"

    # 2. every image loaded
    broken = page.evaluate("""() => [...document.images]
        .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80))""")
    assert not broken, f"{name}: images that did not load: {broken}"

    # 3. math rendered: MathJax output present wherever the page has math, no raw TeX left
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

    # 4. internal links resolve to files that exist
    hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
    missing = []
    for href in hrefs:
        url = urlparse(href)
        if url.scheme == "file":
            target = Path(unquote(url.path))
            if not target.exists():
                missing.append(str(target.relative_to(SITE)) if SITE in target.parents else href)
    assert not missing, f"{name}: links to missing pages: {sorted(set(missing))[:5]}"

    # 5. every no-kernel twin responds to its slider
    twins = page.locator(".dl-twin")
    for k in range(twins.count()):
        twin = twins.nth(k)
        slider = twin.locator("input[type=range]")
        before = twin.evaluate("t => [...t.querySelectorAll('img')].findIndex("
                               "i => i.style.display !== 'none')")
        label_before = twin.locator("output").inner_text()
        at_max = slider.get_attribute("value") == slider.get_attribute("max")
        slider.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        after = twin.evaluate("t => [...t.querySelectorAll('img')].findIndex("
                              "i => i.style.display !== 'none')")
        assert after != before and after >= 0, f"{name}: twin {k} did not change frame"
        assert twin.locator("output").inner_text() != label_before, f"{name}: twin {k} label"

    # 6. page weight: the page plus every file it loaded
    files = {Path(unquote(urlparse(u).path)) for u in page.files}
    weight = sum(f.stat().st_size for f in files if f.is_file())
    assert weight < MAX_PAGE_BYTES, f"{name} weighs {weight / 1e6:.1f} MB with its assets"
    SHOTS.mkdir(parents=True, exist_ok=True)
    with open(SHOTS / "page_weights.txt", "a") as log:
        log.write(f"{weight:>10d}  {name}\n")
    page.context.close()


def test_search_works_offline(browser):
    page = offline_page(browser)
    page.goto((SITE / "search.html").as_uri() + "?q=gradient", wait_until="load")
    page.wait_for_selector("#search-results li, .search li", timeout=20000)
    results = page.locator("#search-results li, .search li").count()
    assert results > 0, "search for 'gradient' found nothing"
    assert not page.blocked and not page.errors, (page.blocked, page.errors)
    page.context.close()


def test_navigation_reaches_every_chapter_from_the_landing_page(browser):
    page = offline_page(browser)
    page.goto((SITE / "index.html").as_uri())  # redirects to the landing page
    page.wait_for_url("**/intro.html")
    nav = page.evaluate("[...document.querySelectorAll('nav.bd-docs-nav a')].map(a => a.href)")
    targets = {Path(unquote(urlparse(h).path)).name for h in nav if h.startswith("file:")}
    for chapter in (ROOT / "chapters").glob("*.ipynb"):
        assert chapter.stem + ".html" in targets, f"{chapter.stem} is not in the navigation"
    page.context.close()
