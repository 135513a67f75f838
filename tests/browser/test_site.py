"""Browser tests of the built site: every page, opened from disk in headless Chromium, offline.

Run after the site is built (``make browser`` does both in order). For every HTML page of
``_build/html`` they assert: no console errors; every image loaded; math rendered by MathJax with
no raw ``$...$`` / ``\\(...\\)`` left in the text; every internal link points to a file that exists;
every no-kernel twin panel responds to its slider; the page and its assets weigh under 5 MB. They
also check that search works offline, and save a screenshot of every page in the light and the
dark theme under ``_build/screenshots/`` for review, with a page-weight table in
``_build/screenshots/page_weights.txt``.

The whole module is skipped, with a message saying how to install it, when Chromium is missing,
unless REQUIRE_BROWSER=1 (set by .ci/run), which turns the skip into an error.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
MAX_PAGE_BYTES = 5 * 1024 * 1024
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

if CHROMIUM is None and os.environ.get("REQUIRE_BROWSER") == "1":
    raise RuntimeError("REQUIRE_BROWSER=1 but Chromium is not installed (apt-get install chromium)")
if CHROMIUM is None:
    pytest.skip("browser tests need Chromium: install Debian's package with "
                "`sudo apt-get install chromium` (CI's .ci/run does this)", allow_module_level=True)

playwright = pytest.importorskip("playwright.sync_api")


def site_pages():
    if not (SITE / "index.html").exists():
        return []
    # index.html only redirects to intro.html; search has its own test below
    skip = {"genindex.html", "search.html", "index.html"}
    return sorted(p for p in SITE.rglob("*.html")
                  if p.name not in skip and "_static" not in p.parts and "_sources" not in p.parts)


PAGES = site_pages()
IDS = [str(p.relative_to(SITE)) for p in PAGES]


@pytest.fixture(scope="module")
def browser():
    shutil.rmtree(SHOTS, ignore_errors=True)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def offline_page(browser, theme="light"):
    """A page whose every non-file request is aborted, recording errors and loaded bytes."""
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  color_scheme="dark" if theme == "dark" else "light")
    context.add_init_script(f"localStorage.setItem('mode', '{theme}');"
                            f"localStorage.setItem('theme', '{theme}');")
    blocked = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.errors, page.blocked, page.files = [], blocked, set()
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("requestfailed", lambda r: page.errors.append(f"failed to load {r.url}")
            if not r.url.startswith("data:") else None)
    page.on("request", lambda r: page.files.add(r.url) if r.url.startswith("file:") else None)
    return page


def open_page(page, path: Path):
    page.goto(path.as_uri(), wait_until="load")
    # MathJax typesets asynchronously: wait for its first typesetting pass to finish
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                  " ? MathJax.startup.promise.then(() => true) : true")


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

    # 7. screenshots for review, light and dark
    shot = SHOTS / "light" / (name.replace("/", "__") + ".png")
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    page.context.close()

    dark = offline_page(browser, theme="dark")
    open_page(dark, path)
    assert dark.evaluate("document.documentElement.dataset.theme") == "dark"
    assert not dark.errors, f"{name} (dark theme) logged errors: {dark.errors[:3]}"
    shot = SHOTS / "dark" / (name.replace("/", "__") + ".png")
    shot.parent.mkdir(parents=True, exist_ok=True)
    dark.screenshot(path=str(shot), full_page=True)
    dark.context.close()


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
