"""What the browser tests share: where the built site is, its pages, the browser, an offline
page, report files that parallel workers can share, and what makes a text alternative useless.

The site is ``_build/html`` (``make build``); ``BOOK_HTML`` points the tests at a site built
elsewhere (``jupyter-book build . --path-output DIR`` builds into ``DIR/_build/html``), so a
check need not overwrite a shared ``_build/``. Screenshots and reports go next to it, in
``screenshots/``.

The browser is the first of: ``$CHROMIUM`` (a path or a command name), ``chromium``,
``chromium-browser`` or ``google-chrome`` on ``PATH``, and Google Chrome where macOS installs it
(``find_browser``; .ci/run looks in the same order and exports what it found as ``CHROMIUM``).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
SHOTS = SITE.parent / "screenshots"
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
MACOS_CHROME = "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
THEMES = ("light", "dark")


def find_browser(environ=None, macos_chrome: str = MACOS_CHROME) -> tuple[str | None, str]:
    """The browser to test with, and where it came from (or, when there is none, why).

    ``$CHROMIUM`` wins when set; a value that is not an executable is not replaced by another
    browser (you asked for that one). Then ``chromium``, ``chromium-browser`` and
    ``google-chrome`` on ``PATH``, then macOS's Google Chrome (GitHub's macOS runners have it).
    """
    environ = os.environ if environ is None else environ
    path = environ.get("PATH", os.defpath)
    chosen = environ.get("CHROMIUM", "").strip()
    if chosen:
        found = shutil.which(chosen, path=path)
        return (found, "$CHROMIUM") if found else (None, f"CHROMIUM={chosen} is not an executable")
    for name in BROWSER_NAMES:
        found = shutil.which(name, path=path)
        if found:
            return found, f"{name} on PATH"
    if os.path.isfile(macos_chrome) and os.access(macos_chrome, os.X_OK):
        return macos_chrome, "Google Chrome (macOS)"
    return None, (f"no {', '.join(BROWSER_NAMES)} on PATH, no {macos_chrome}, and CHROMIUM "
                  "is not set")


CHROMIUM, CHROMIUM_FROM = find_browser()


def install_hint() -> str:
    if sys.platform == "darwin":
        return ("install Google Chrome (https://www.google.com/chrome/) or point CHROMIUM at a "
                "Chrome or Chromium executable")
    return ("install Debian's package with `sudo apt-get install chromium`, or point CHROMIUM "
            "at a Chrome or Chromium executable (CI's .ci/run does this)")


def require_chromium():
    """Skip the calling test module, with how to install Chromium, when it is missing; an error
    instead where REQUIRE_BROWSER=1 (set by .ci/run), so CI can never skip these tests."""
    if CHROMIUM is None and os.environ.get("REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"REQUIRE_BROWSER=1 but there is no browser to test with "
                           f"({CHROMIUM_FROM}): {install_hint()}")
    if CHROMIUM is None:
        pytest.skip(f"browser tests need Chromium or Google Chrome ({CHROMIUM_FROM}): "
                    f"{install_hint()}", allow_module_level=True)


# ---------------------------------------------------------------- report files

def append_lines(path: Path, lines) -> None:
    """Append ``lines`` to the report ``path``, each with one write(2) to a file opened with
    O_APPEND: lines that pytest-xdist's workers write at the same time land whole, one after
    the other, never inside each other (conftest.py sorts the reports when the run ends)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for line in lines:
            os.write(fd, (" ".join(str(line).splitlines()) + "\n").encode("utf-8", "replace"))
    finally:
        os.close(fd)


def write_report(path: Path, text: str) -> None:
    """Write a whole report file at once (a temporary file renamed over it): a reader, or a
    worker writing the same file, never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", errors="replace")
    os.replace(tmp, path)


def site_pages() -> list[Path]:
    """Every content page of the built site (index.html only redirects; search has its own
    test; genindex is Sphinx's empty index)."""
    if not (SITE / "index.html").exists():
        return []
    skip = {"genindex.html", "search.html", "index.html"}
    return sorted(p for p in SITE.rglob("*.html")
                  if p.name not in skip and "_static" not in p.parts and "_sources" not in p.parts)


def all_pages() -> list[Path]:
    """Every page a reader can open: the content pages, and Sphinx's search page and index."""
    extra = [SITE / "search.html", SITE / "genindex.html"]
    return site_pages() + [p for p in extra if p.exists()]


def page_id(path: Path) -> str:
    return str(path.relative_to(SITE))


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


# ---------------------------------------------------------------- text alternatives

# What matplotlib and Jupyter put where a description should be, and words that name a kind of
# picture without saying what it shows.
_GENERIC = {"image", "figure", "plot", "chart", "graph", "picture", "output", "png",
            "a plot", "a figure", "an image", "a chart", "a graph", "the figure", "the plot"}
_PATH = re.compile(r"(^|[\s/\\])[\w.-]+\.(png|jpe?g|gif|svg|webp|pdf)\b|^(data:|\.{0,2}/|_images)",
                   re.IGNORECASE)
_HASH = re.compile(r"\b[0-9a-f]{16,}\b", re.IGNORECASE)
MIN_WORDS = 5


def alt_text_problem(alt) -> str | None:
    """Why ``alt`` cannot stand in for a course figure, or None when it can.

    A figure's text alternative says what it shows and what the reader should see in it; these
    are the ways it fails that a machine can tell: missing or empty, a file name or path (what
    myst-nb writes when a cell has no alt text), a content hash, matplotlib's
    "<Figure size 640x480 with 1 Axes>", a word like "plot", a twin frame's parameter value
    alone ("alpha = 0.3"), or fewer than MIN_WORDS words.
    """
    if alt is None or not str(alt).strip():
        return "no alt text"
    text = " ".join(str(alt).split())
    if _PATH.search(text):
        return f"alt text is a file name or path: {text[:80]!r}"
    if _HASH.search(text):
        return f"alt text contains a hash: {text[:80]!r}"
    if text.lower().lstrip("<").startswith("figure size"):
        return f"alt text is matplotlib's description of the object: {text[:80]!r}"
    if text.lower().strip(" .") in _GENERIC:
        return f"alt text names a kind of picture, not what it shows: {text!r}"
    if len(text.split()) < MIN_WORDS:
        if "=" in text:  # a twin frame labelled only by its value, "alpha = 0.3"
            return f"alt text is only a parameter value: {text!r}"
        return f"alt text too short to say what the figure shows: {text!r}"
    return None
