"""Every figure in the built site has a text alternative that describes it (no browser needed).

Reads the HTML of every page of the built site and checks the ``alt`` of every image inside the
article: notebook figures (myst-nb writes the cell's ``mystnb.image.alt`` there, and the image's
own path when there is none), frames of the no-kernel twin panels, and images in the prose.
What makes an alt text useless is ``sitekit.alt_text_problem``. Images outside the article (the
theme's logos) are axe's business (test_axe.py: image-alt).
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from sitekit import SITE, alt_text_problem, page_id, site_pages

PAGES = site_pages()


class ArticleImages(HTMLParser):
    """The alt text of every <img> inside <article>, and whether it is a twin panel's frame."""

    def __init__(self, text):
        super().__init__()
        self.stack, self.images = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "img":
            if any(t == "article" for t, _ in self.stack):
                in_twin = any("dl-twin" in c for _, c in self.stack)
                self.images.append((attrs.get("alt"), in_twin))
            return
        if tag in {"br", "hr", "input", "meta", "link", "source", "wbr", "area", "col"}:
            return
        self.stack.append((tag, classes))

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                del self.stack[k:]
                return


def test_the_site_was_built():
    assert PAGES, f"no pages under {SITE}: build the site first (make build)"


def test_the_parser_finds_figures_and_twin_frames():
    html = ('<div><article><div class="cell_output"><img alt="x.png" src="x.png"><br>'
            '<div class="dl-twin"><input type="range"><img alt="a = 1"></div></div></article>'
            '<img alt="logo outside"></div>')
    assert ArticleImages(html).images == [("x.png", False), ("a = 1", True)]


@pytest.mark.parametrize("path", PAGES, ids=[page_id(p) for p in PAGES])
def test_every_figure_is_described(path):
    images = ArticleImages(path.read_text(encoding="utf-8")).images
    problems = [f"{'twin frame' if twin else 'figure'} {k}: {alt_text_problem(alt)}"
                for k, (alt, twin) in enumerate(images) if alt_text_problem(alt)]
    assert not problems, f"{page_id(path)}:\n" + "\n".join(problems)
