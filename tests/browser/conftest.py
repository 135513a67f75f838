"""One headless Chromium for every browser test (see sitekit.py for the rest)."""

import shutil

import pytest
from sitekit import ARGS, CHROMIUM, SHOTS


@pytest.fixture(scope="session")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    shutil.rmtree(SHOTS, ignore_errors=True)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
