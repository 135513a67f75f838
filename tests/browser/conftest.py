"""One headless Chromium per test process for every browser test (see sitekit.py for the rest)."""

import shutil

import pytest
from sitekit import ARGS, CHROMIUM, SHOTS


def pytest_sessionstart(session):
    # fresh screenshots and reports each run; only in the main process, so that pytest-xdist's
    # workers (-n 2) never delete each other's files
    if not hasattr(session.config, "workerinput"):
        shutil.rmtree(SHOTS, ignore_errors=True)


@pytest.fixture(scope="session")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
