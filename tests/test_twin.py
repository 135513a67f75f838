"""The no-kernel twin panels (depthlab.book.twin.scrubber): frames, size, text alternatives and the
markup that makes the slider usable by keyboard and screen reader.

What the markup does in a browser (Tab, arrow keys, what a screen reader is told) is tested on a
real page in tests/browser/test_keyboard.py; these tests read the HTML the function returns.
"""

import base64
import io
import re
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

import depthlab as dl  # noqa: E402


def render(v):
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, v])
    return fig


class Elements(HTMLParser):
    """Every start tag of a piece of HTML, as (tag, attributes) in document order."""

    def __init__(self, text):
        super().__init__()
        self.tags = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def all(self, tag):
        return [attrs for t, attrs in self.tags if t == tag]

    def one(self, tag):
        found = self.all(tag)
        assert len(found) == 1, f"expected one <{tag}>, found {len(found)}"
        return found[0]


def test_scrubber_embeds_one_frame_per_value_and_a_slider():
    html = dl.scrubber(render, [1, 2, 3], label="depth", start=2).data
    assert html.count("<img") == 3 and html.count("data:image/png;base64,") == 3
    assert 'type="range"' in html and 'max="2"' in html and 'value="1"' in html
    assert "depth = 2" in html
    with pytest.raises(ValueError, match="at least one"):
        dl.scrubber(render, [])
    with pytest.raises(ValueError, match="not one of the values"):
        dl.scrubber(render, [1, 2], start=5)


def test_scrubber_frames_are_palette_pngs_much_smaller_than_full_colour():
    def busy(v):
        fig, ax = plt.subplots(figsize=(6, 3))
        for k in range(6):
            ax.plot(np.sin(np.linspace(0, 10, 200) * (k + v)), label=f"line {k}")
        ax.legend()
        return fig

    html = dl.scrubber(busy, [1]).data
    frame = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", html)[1])
    image = Image.open(io.BytesIO(frame))
    assert image.mode == "P" and len(image.getcolors()) <= 64
    full = io.BytesIO()
    busy(1).savefig(full, format="png", dpi=96, bbox_inches="tight")
    assert len(frame) < 0.6 * len(full.getvalue())


# ---------------------------------------------------------------- text alternatives


def test_each_frame_is_described_and_says_which_value_it_shows():
    html = dl.scrubber(render, [0.5, 2.0], label="alpha",
                       alt="A line rising from the origin; steeper for larger alpha.").data
    alts = [img["alt"] for img in Elements(html).all("img")]
    assert alts == [
        "A line rising from the origin; steeper for larger alpha. Shown for alpha = 0.5.",
        "A line rising from the origin; steeper for larger alpha. Shown for alpha = 2.0.",
    ]


def test_alt_can_be_a_function_of_the_value_and_is_escaped():
    html = dl.scrubber(render, [1, 3], label="L", fmt=lambda v: f"{v} layers",
                       alt=lambda v: f'Slope {v} "exactly" & no <b>tags</b>').data
    alts = [img["alt"] for img in Elements(html).all("img")]
    assert alts == ['Slope 1 "exactly" & no <b>tags</b>. Shown for L = 1 layers.',
                    'Slope 3 "exactly" & no <b>tags</b>. Shown for L = 3 layers.']
    assert "<b>" not in html  # the description stays text, never markup


def test_without_alt_the_frames_are_labelled_only_by_their_value():
    # the site's alt-text test flags these: a value alone does not describe a figure
    alts = [img["alt"] for img in Elements(dl.scrubber(render, [1, 2], label="L").data).all("img")]
    assert alts == ["L = 1", "L = 2"]


@pytest.mark.parametrize("alt", ["", "   ", 3, ["a", "b"]])
def test_an_alt_that_is_not_a_description_is_refused(alt):
    with pytest.raises(ValueError, match="alt must"):
        dl.scrubber(render, [1, 2], alt=alt)


def test_an_alt_function_returning_nothing_is_refused():
    with pytest.raises(ValueError, match="alt must describe the figure in words"):
        dl.scrubber(render, [1, 2], alt=lambda v: "" if v == 2 else "A line.")


# ---------------------------------------------------------------- keyboard and screen reader


def test_the_slider_is_a_named_native_range_whose_value_is_read_as_words():
    html = dl.scrubber(render, [0.1, 0.3, 1.0], label="alpha", start=0.3, alt="A line.").data
    page = Elements(html)
    slider = page.one("input")
    # a native range input: in the Tab order, moved by arrow keys, Home and End
    assert slider["type"] == "range" and "tabindex" not in slider
    assert (slider["min"], slider["max"], slider["step"], slider["value"]) == ("0", "2", "1", "1")
    assert slider["aria-label"] == "alpha"
    # read as "alpha = 0.3", not as the frame's index "1"
    assert slider["aria-valuetext"] == "alpha = 0.3"
    # the handler keeps aria-valuetext in step with the frame shown
    assert "setAttribute('aria-valuetext'" in slider["oninput"]


def test_the_value_shown_is_an_output_for_the_slider_and_not_announced_twice():
    page = Elements(dl.scrubber(render, [1, 2], label="L", alt="A line.").data)
    slider, output = page.one("input"), page.one("output")
    assert output["for"] == slider["id"]
    assert output["aria-live"] == "off"


def test_the_panel_is_a_labelled_group_and_ids_are_unique_per_panel():
    first = Elements(dl.scrubber(render, [1, 2], label="depth L", alt="A line.").data)
    second = Elements(dl.scrubber(render, [1, 2], label="depth L", alt="A line.").data)
    group = first.all("div")[0]
    assert group["class"] == "dl-twin" and group["role"] == "group"
    assert "depth L" in group["aria-label"]
    assert group["id"] != second.all("div")[0]["id"]
    assert first.one("input")["id"] != second.one("input")["id"]


def test_exactly_one_frame_is_shown_at_first():
    page = Elements(dl.scrubber(render, [1, 2, 3], start=3, alt="A line.").data)
    shown = ["display:block" in img["style"] for img in page.all("img")]
    assert shown == [False, False, True]


# ---------------------------------------------------------------- one call, one figure shown
# dl.panel shows the live slider in a kernel and the twin where the book's outputs are stored
# (DEPTHLAB_TWINS=1), never both.


@pytest.fixture
def shown(monkeypatch):
    """What dl.panel displays and which widget it asks ipywidgets for, recorded."""
    import IPython.display
    import ipywidgets

    record = {"displayed": [], "interact": []}
    monkeypatch.setattr(IPython.display, "display", lambda *objs: record["displayed"].extend(objs))
    monkeypatch.setattr(ipywidgets, "interact",
                        lambda f, **widgets: record["interact"].append((f, widgets)))
    return record


def test_panel_shows_only_the_twin_where_the_outputs_are_stored(monkeypatch, shown):
    monkeypatch.setenv("DEPTHLAB_TWINS", "1")
    assert dl.panel(render, [0.1, 0.5, 1.0], label="alpha", start=0.5, alt="A line.") is None
    assert shown["interact"] == []
    (twin,) = shown["displayed"]
    page = Elements(twin.data)
    assert len(page.all("img")) == 3 and page.one("input")["value"] == "1"
    assert page.all("img")[1]["alt"] == "A line. Shown for alpha = 0.5."


@pytest.mark.parametrize("setting", [None, "0"])
def test_panel_shows_only_the_live_slider_in_a_kernel(monkeypatch, shown, setting):
    if setting is None:
        monkeypatch.delenv("DEPTHLAB_TWINS", raising=False)
    else:
        monkeypatch.setenv("DEPTHLAB_TWINS", setting)
    dl.panel(render, [0.1, 0.5], label="alpha", start=0.5, fmt=lambda v: f"{v:.1f}",
             alt="A line.")
    assert shown["displayed"] == []
    ((show, widgets),) = shown["interact"]
    slider = widgets["v"]
    assert slider.description == "alpha" and slider.value == 0.5
    assert list(slider.options) == [("0.1", 0.1), ("0.5", 0.5)]
    show(0.1)  # the slider's callback draws render(0.1), and closes it
    assert len(shown["displayed"]) == 1 and not plt.get_fignums()


def test_a_live_widget_replaces_the_slider_in_a_kernel_and_never_the_twin(monkeypatch, shown):
    calls = []
    monkeypatch.delenv("DEPTHLAB_TWINS", raising=False)
    dl.panel(render, [1, 2], alt="A line.", live=lambda: calls.append("live"))
    assert calls == ["live"] and shown["interact"] == [] and shown["displayed"] == []
    monkeypatch.setenv("DEPTHLAB_TWINS", "1")
    dl.panel(render, [1, 2], alt="A line.", live=lambda: calls.append("live"))
    assert calls == ["live"] and len(shown["displayed"]) == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"start": 3}, "start=3 is not one of the values"),
    ({"alt": 42}, "alt must be a string or a function"),
    ({"live": "widget"}, "live must be a function"),
])
def test_panel_refuses_bad_arguments_in_both_front_ends(monkeypatch, shown, kwargs, message):
    for setting in ("1", "0"):
        monkeypatch.setenv("DEPTHLAB_TWINS", setting)
        with pytest.raises(ValueError, match=message):
            dl.panel(render, [1, 2], **kwargs)
    assert shown == {"displayed": [], "interact": []}
