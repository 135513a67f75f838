"""One chapter and one lab used with the keyboard alone, and their figures read as a screen
reader gets them (Chromium's accessibility tree, through the DevTools protocol).

On chapters/03_gradient_highway and labs/lab2_ensembles, in both themes:

* Tab walks the whole page: it starts at "Skip to main content" (which takes the focus to the
  article), never lands on something
  invisible, never gets stuck, and every kind of stop (link, button, equation, slider, code
  block, ...) shows where the focus is (the stop's pixels change when it takes the focus);
* the twin slider is in the Tab order and moves with the arrow keys, Home and End, changing the
  frame and the value written next to it;
* every folded block (quiz answers, hints, exercise solutions, folded code) opens with Enter or
  Space and says so (aria-expanded / the details element's open state);
* the figures are in the accessibility tree as images with a name, one per twin panel.

Each walk is written to ``_build/screenshots/keyboard/<page>-<theme>.txt`` (every Tab stop)
and the figures as a screen reader announces them to ``.../<page>-figures.txt``.

Whether the figures' names describe them is test_alt_text.py's business. The twin's slider
announces its value in words (aria-valuetext). Chromium up to at least 150 reports that text in
its accessibility tree; Chromium 156 (Debian bookworm's package in November 2026) reports no
aria-valuetext through the DevTools protocol at all, not even for a plain ``role=slider``. The
tests probe the browser once: where it reports the text, they check the accessibility tree;
where it does not, they check the slider's role and value there and its aria-valuetext in the
page, and say so in the log.
"""

from __future__ import annotations

from collections import Counter

import pytest
from sitekit import SHOTS, SITE, THEMES, offline_page, open_page, require_chromium, write_report

require_chromium()

PAGES = ["chapters/03_gradient_highway.html", "labs/lab2_ensembles.html"]
MAX_STOPS = 2000  # a walk longer than this is a keyboard trap (the pages have a few hundred)
SAMPLES_PER_KIND = 2  # stops of each kind whose focus indicator is checked in pixels

STOP = """e => { const r = e.getBoundingClientRect();
  const cls = String(e.className && e.className.baseVal !== undefined ? e.className.baseVal
                     : e.className || '').split(/\\s+/)
      .filter(c => c && !/^(current|active|toggle-button-hidden|CtxtMenu_Attached_\\d+)$/.test(c));
  return {tag: e.tagName, kind: [e.tagName].concat(cls.slice(0, 2)).join('.'),
          name: Array.from((e.getAttribute('aria-label') || e.innerText
                            || e.getAttribute('title') || '').replace(/\\s+/g, ' ').trim())
                  .slice(0, 60).join(''),  // whole characters: equations are astral-plane text
          x: r.x, y: r.y, w: r.width, h: r.height,
          inMain: !!e.closest('main'), isTwin: !!e.closest('.dl-twin')}; }"""


def keyboard_page(browser, theme, name):
    """``name`` opened in ``theme``, the theme a reader chose on an earlier page (localStorage):
    the only pages the tests load in the dark theme (test_pages.py switches with the button)."""
    page = offline_page(browser, theme=theme)
    open_page(page, SITE / name)
    applied = page.evaluate("document.documentElement.dataset.theme")
    assert applied == theme, f"{name}: opened in the {theme} theme, shown in {applied!r}"
    return page


def walk(page):
    """Press Tab until the focus leaves the page or comes back to the first stop; return every
    stop, with, for the first SAMPLES_PER_KIND stops of each kind, whether taking the focus
    changed its pixels (a visible focus indicator)."""
    stops, sampled = [], Counter()
    for _ in range(MAX_STOPS):
        page.keyboard.press("Tab")
        stop = page.evaluate(f"({STOP})(document.activeElement)")
        if stop["tag"] == "BODY" or (stops and stop["kind"] == stops[0]["kind"]
                                     and stop["name"] == stops[0]["name"]):
            return stops
        if sampled[stop["kind"]] < SAMPLES_PER_KIND and stop["w"] * stop["h"] > 0:
            sampled[stop["kind"]] += 1
            clip = {"x": max(stop["x"] - 8, 0), "y": max(stop["y"] - 8, 0),
                    "width": stop["w"] + 16, "height": stop["h"] + 16}
            focused = page.screenshot(clip=clip)
            handle = page.evaluate_handle("document.activeElement")
            handle.evaluate("e => e.blur()")
            unfocused = page.screenshot(clip=clip)
            handle.evaluate("e => e.focus()")  # Tab goes on from here
            stop["focus_visible"] = focused != unfocused
        stops.append(stop)
    raise AssertionError(f"Tab did not leave the page after {MAX_STOPS} stops: a keyboard trap?")


def log(name, lines):
    write_report(SHOTS / "keyboard" / name, "\n".join(lines) + "\n")


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("name", PAGES)
def test_tab_reaches_everything_visibly_in_order(browser, name, theme):
    page = keyboard_page(browser, theme, name)
    assert page.evaluate("document.querySelectorAll('[tabindex]:not([tabindex=\"0\"])"
                         ":not([tabindex=\"-1\"])').length") == 0, "a positive tabindex"
    stops = walk(page)
    log(f"{name.replace('/', '__')}-{theme}.txt",
        [f"{k:4d} {s['kind'][:40]:40s} {s['name']}" for k, s in enumerate(stops)])

    assert stops[0]["name"] == "Skip to main content", stops[0]
    invisible = [s for s in stops if s["w"] * s["h"] == 0]
    assert not invisible, f"{name}: Tab lands on things that cannot be seen: {invisible[:3]}"
    no_ring = sorted({s["kind"] for s in stops if s.get("focus_visible") is False})
    assert not no_ring, f"{name} ({theme}): focus not visible on {no_ring}"
    in_order = [s["kind"] for s in stops if s["inMain"]]
    assert any(s["isTwin"] and s["tag"] == "INPUT" for s in stops), f"{name}: twin not reached"
    folds = page.locator("main .admonition-title > .toggle-button, main details > summary")
    assert in_order.count("BUTTON.toggle-button") + in_order.count("SUMMARY") == folds.count()
    page.context.close()


@pytest.mark.parametrize("name", PAGES)
def test_skip_link_takes_the_focus_to_the_article(browser, name):
    page = keyboard_page(browser, "light", name)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.innerText.trim()") == "Skip to main content"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("!!document.activeElement.closest('main')"), (
        "after the skip link, Tab should go on inside the article")
    page.context.close()


def shown_frame(twin):
    return twin.evaluate("t => [...t.querySelectorAll('img')].findIndex("
                         "i => i.style.display !== 'none')")


@pytest.mark.parametrize("name", PAGES)
def test_twin_slider_moves_with_arrow_keys_home_and_end(browser, name):
    page = keyboard_page(browser, "light", name)
    twin = page.locator(".dl-twin").first
    slider, output = twin.locator("input[type=range]"), twin.locator("output")
    last = int(slider.get_attribute("max"))
    for _ in range(MAX_STOPS):  # reach it with Tab, as a keyboard user does
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('.dl-twin') !== null"):
            break
    labels = twin.evaluate("t => JSON.parse(t.dataset.labels)")
    page.keyboard.press("Home")
    assert shown_frame(twin) == 0 and output.inner_text() == labels[0]
    page.keyboard.press("ArrowRight")
    assert shown_frame(twin) == 1 and output.inner_text() == labels[1]
    page.keyboard.press("End")
    assert shown_frame(twin) == last and output.inner_text() == labels[last]
    page.keyboard.press("ArrowLeft")
    assert shown_frame(twin) == last - 1 and output.inner_text() == labels[last - 1]
    page.context.close()


def ax_nodes(page, selector):
    """What assistive technology gets for each element matching ``selector`` (Chromium's
    accessibility tree, through the DevTools protocol); None for an element it does not get."""
    cdp = page.context.new_cdp_session(page)
    count = page.locator(selector).count()
    nodes = []
    for k in range(count):
        expression = f"document.querySelectorAll({selector!r})[{k}]"
        element = cdp.send("Runtime.evaluate", {"expression": expression})["result"]
        tree = cdp.send("Accessibility.getPartialAXTree",
                        {"objectId": element["objectId"], "fetchRelatives": False})["nodes"]
        node = tree[0] if tree else None
        nodes.append(None if node is None or node.get("ignored") else node)
    cdp.detach()
    return nodes


def ax_property(node, name):
    for p in node.get("properties", []):
        if p["name"] == name:
            return p["value"].get("value")
    return None


@pytest.fixture(scope="module")
def reports_valuetext(browser):
    """Whether this Chromium puts aria-valuetext into its accessibility tree (see the top)."""
    page = offline_page(browser)
    page.set_content("<div role=slider tabindex=0 aria-label=probe aria-valuemin=0 "
                     "aria-valuemax=2 aria-valuenow=1 aria-valuetext='one of two'></div>")
    (node,) = ax_nodes(page, "[role=slider]")
    reported = ax_property(node, "valuetext") == "one of two"
    if not reported:
        log("valuetext.txt", ["this Chromium reports no aria-valuetext in its accessibility tree:",
                              "the sliders' spoken value was checked in the page instead"])
    page.context.close()
    return reported


def spoken_value(page, selector, reports_valuetext):
    """The value a screen reader speaks for the slider ``selector``, in words."""
    (node,) = ax_nodes(page, selector)[:1]
    assert node["role"]["value"] == "slider"
    if reports_valuetext:
        return ax_property(node, "valuetext")
    # the tree still carries the slider's number, which must be the one the page shows
    assert node["value"]["value"] == float(page.locator(selector).first.input_value())
    return page.locator(selector).first.get_attribute("aria-valuetext")


@pytest.mark.parametrize("name", PAGES)
def test_twin_slider_speaks_its_value_in_words(browser, name, reports_valuetext):
    page = keyboard_page(browser, "light", name)
    twin = page.locator(".dl-twin").first
    labels = twin.evaluate("t => JSON.parse(t.dataset.labels)")
    twin.locator("input[type=range]").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert spoken_value(page, ".dl-twin input[type=range]", reports_valuetext) == labels[1]
    page.context.close()


@pytest.mark.parametrize("name", PAGES)
def test_folded_blocks_open_with_enter_and_space(browser, name):
    page = keyboard_page(browser, "light", name)
    buttons = page.locator("main .admonition-title > .toggle-button")
    assert buttons.count() > 0
    for k in range(buttons.count()):
        button = buttons.nth(k)
        key = "Enter" if k % 2 == 0 else " "
        fold = button.evaluate_handle("b => b.closest('.admonition')")
        assert button.get_attribute("aria-expanded") == "false"
        button.focus()
        page.keyboard.press(key)
        assert button.get_attribute("aria-expanded") == "true", f"fold {k} did not open"
        body_visible = fold.evaluate("f => [...f.children].filter(c => !c.matches"
                                     "('.admonition-title')).every(c => c.offsetHeight > 0)")
        assert body_visible, f"fold {k} ({button.get_attribute('aria-label')}) opened but hidden"
        page.keyboard.press(key)
        assert button.get_attribute("aria-expanded") == "false", f"fold {k} did not close"
    summaries = page.locator("main details > summary")
    for k in range(summaries.count()):
        summaries.nth(k).focus()
        page.keyboard.press("Enter" if k % 2 == 0 else " ")
        assert summaries.nth(k).evaluate("s => s.parentElement.open"), f"details {k}"
    page.context.close()


@pytest.mark.parametrize("name", PAGES)
def test_figures_are_images_with_names_in_the_accessibility_tree(browser, name):
    page = keyboard_page(browser, "light", name)
    # the figures: the notebooks' images (../_images/...) and the twins' frames (data: URLs)
    figures = "main img[src*='_images/'], main .dl-twin img"
    shown = page.evaluate(f"[...document.querySelectorAll({figures!r})]"
                          ".map(i => i.offsetParent !== null)")
    nodes = ax_nodes(page, figures)
    announced = [n is not None for n in nodes]
    # every figure on screen is announced, as an image; a twin's hidden frames are not
    assert announced == shown, f"{name}: announced {announced}, on screen {shown}"
    names = [n["name"]["value"] for n in nodes if n is not None]
    assert all(n["role"]["value"] == "image" for n in nodes if n is not None)
    log(name.replace("/", "__") + "-figures.txt", [f"image: {n}" for n in names])
    assert names and all(n.strip() for n in names), f"{name}: a figure without a name"
    page.context.close()


def test_a_twin_made_by_the_current_scrubber_is_operable_and_speaks(browser, reports_valuetext):
    """The same checks on a twin fresh from depthlab.book.twin.scrubber, whatever the notebooks hold:
    reached by Tab, moved by the keys, its value and its frame announced in words."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import depthlab as dl

    def render(v):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.plot([0, 1], [0, v])
        return fig

    html = dl.scrubber(render, [0.1, 0.3, 1.0], label="alpha",
                       alt=lambda v: f"A straight line from 0 rising to {v}").data
    page = offline_page(browser)
    page.set_content(f"<main><h1>Twin</h1><a href='#'>before</a>{html}</main>")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.type") == "range"
    page.keyboard.press("ArrowRight")
    group, image, slider = (ax_nodes(page, s)[0] for s in
                            (".dl-twin", ".dl-twin img[style*='block']", ".dl-twin input"))
    assert group["role"]["value"] == "group" and "alpha" in group["name"]["value"]
    assert slider["role"]["value"] == "slider" and slider["name"]["value"] == "alpha"
    assert spoken_value(page, ".dl-twin input", reports_valuetext) == "alpha = 0.3"
    assert image["name"]["value"] == "A straight line from 0 rising to 0.3. Shown for alpha = 0.3."
    page.keyboard.press("End")
    assert spoken_value(page, ".dl-twin input", reports_valuetext) == "alpha = 1.0"
    assert [n is not None for n in ax_nodes(page, ".dl-twin img")] == [False, False, True]
    page.context.close()
