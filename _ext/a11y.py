"""Accessibility fixes of the built pages that need the page's HTML, not CSS or a script.

Bibliographies. docutils 0.21's HTML writer wraps citations in ``<div role="list">`` and gives
each one ``role="doc-biblioentry"``, a DPUB-ARIA role deprecated in DPUB-ARIA 1.1 (see
w3c/dpub-aria#22). axe-core 4.12 no longer counts it as a list item, so it reports the list on
the References page as a list with no items (``aria-required-children``, critical, WCAG 1.3.1;
also ``aria-deprecated-role`` and ``aria-allowed-role``). Each citation becomes a plain
``role="listitem"``, which is what DPUB-ARIA 1.1 recommends in its place.

Folded code cells. myst-nb 1.4 (``hide-input`` and friends) writes
``<summary aria-label="Toggle hidden content">`` around a visible "Show code cell source", so
the name a screen reader says is not the text a sighted user sees or a voice-control user
speaks (axe: ``label-content-name-mismatch``, WCAG 2.5.3). Without the aria-label the summary
is named by its visible text, "Show code cell source" or "Hide code cell source".

The rest of the book's accessibility fixes are in ``_static/a11y.css``, ``_static/a11y.js``
and ``_templates/``; the README's Accessibility section lists them all.
"""

# (what docutils / myst-nb write, what the book writes instead)
REPLACEMENTS = [
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
]


def fix_page(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body:
        return
    for theirs, ours in REPLACEMENTS:
        body = body.replace(theirs, ours)
    context["body"] = body


def setup(app):
    app.connect("html-page-context", fix_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
