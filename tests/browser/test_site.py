"""Browser tests of the built site as a whole, opened from disk in headless Chromium, offline:
search works without a network, and the landing page's navigation reaches every chapter.

Every page on its own (errors, images, math, links, twin panels, weight, axe, screenshots, in
both themes) is test_pages.py's business; keyboard use is test_keyboard.py's.

The whole module is skipped, with a message saying how to install a browser, when there is none,
unless REQUIRE_BROWSER=1 (set by .ci/run), which turns the skip into an error (sitekit.py).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from sitekit import ROOT, SITE, offline_page, require_chromium

require_chromium()


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
