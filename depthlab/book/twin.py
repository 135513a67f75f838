"""Interactive panels that also work on the static site.

Each interactive figure in the course is a function ``render(value) -> matplotlib Figure`` over
one parameter. The same function feeds two front ends, so they cannot drift apart:

* in a live kernel (JupyterLab, Binder, Colab), an ipywidgets slider that redraws the figure;
* on the static site, the *no-kernel twin* (:func:`scrubber`): every frame is rendered in
  advance, small, and embedded in the page with an HTML range slider and a few lines of inline
  JavaScript, so the built HTML site stays interactive without Python, a kernel or a network.

A notebook calls :func:`panel` once, and it shows one of the two: the slider where a learner
runs the notebook, the twin where ``DEPTHLAB_TWINS=1``. ``make execute`` sets it to store the
outputs the book is built from, and ``make test`` and ``make bench`` set it to run what is
stored. A learner never sees the same figure twice.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import os
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
from PIL import Image

_ids = itertools.count()
TWINS = "DEPTHLAB_TWINS"  # "1": panel() shows the no-kernel twin (set where outputs are stored)


def _check_values(values: Sequence) -> list:
    values = list(values)
    if not values:
        raise ValueError("values must list at least one parameter value to show")
    return values


# Colours kept per frame. Line plots use a handful of colours plus their anti-aliasing, and a
# 64-colour palette is indistinguishable from the full image at a third to a quarter of the bytes;
# every frame of every twin is embedded in the page, so this is what keeps pages light.
PALETTE_COLORS = 64


def _png(fig, dpi: int) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    buf.seek(0)
    image = Image.open(buf).convert("RGB")
    small = io.BytesIO()
    image.quantize(colors=PALETTE_COLORS, method=Image.Quantize.MEDIANCUT).save(
        small, format="PNG", optimize=True)
    return base64.b64encode(small.getvalue()).decode("ascii")


def _alt_texts(alt, values, labels) -> list[str]:
    """One text alternative per frame: the figure's description, then the parameter value."""
    if alt is None:
        return labels
    if callable(alt):
        texts = [alt(v) for v in values]
    elif isinstance(alt, str):
        texts = [alt] * len(values)
    else:
        raise ValueError(f"alt must be a string or a function of the value, got {alt!r}")
    for text in texts:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("alt must describe the figure in words (a non-empty string)")
    return [f"{text.strip().rstrip('.')}. Shown for {label}." for text, label in
            zip(texts, labels)]


def scrubber(render: Callable, values: Sequence, *, label: str = "value", start=None,
             fmt: Callable = str, dpi: int = 96, alt=None):
    """A slider over pre-rendered frames ``render(v)`` for ``v`` in ``values``, as HTML.

    Parameters
    ----------
    render:
        Function of one parameter returning a matplotlib Figure (it is closed after rendering).
    values:
        The parameter values, in slider order.
    label:
        Name of the parameter, shown next to the slider.
    start:
        The value shown first (default: the first one).
    fmt:
        Turns a value into the text shown next to the slider.
    dpi:
        Resolution of the frames. Every frame is embedded in the page (as a 64-colour PNG), so
        the number of frames times their size is what the page weighs.
    alt:
        What the figure shows, for readers who cannot see it: a string, or a function of the
        value returning one. Each frame's text alternative is this description followed by the
        parameter value.

    The panel works without a mouse: the slider is a native range input, reached with Tab and
    moved with the arrow keys (Home and End jump to the ends). Screen readers announce its value
    as the text shown next to it (``aria-valuetext``, e.g. "alpha = 0.3"), not as the frame's
    index, and the whole panel is a labelled group.

    Returns an ``IPython.display.HTML`` object; display it (or leave it last in a cell).

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    from IPython.display import HTML

    values = _check_values(values)
    if start is not None and start not in values:
        raise ValueError(f"start={start!r} is not one of the values {values!r}")
    first = 0 if start is None else values.index(start)
    uid = f"dltwin{next(_ids)}"
    labels = [f"{label} = {fmt(v)}" for v in values]
    alts = _alt_texts(alt, values, labels)
    frames = "".join(
        f'<img alt="{html.escape(text)}" src="data:image/png;base64,{_png(render(v), dpi)}" '
        f'style="max-width:100%;display:{"block" if i == first else "none"}">'
        for i, (v, text) in enumerate(zip(values, alts))
    )
    # One handler, inline, so the twin works wherever the HTML is shown (the book, JupyterLab,
    # nbviewer) with no script of the site's. It shows frame i, writes its label next to the
    # slider and gives the same words to screen readers as the slider's value.
    on_input = (
        "var r=this.closest('.dl-twin'),i=+this.value,t=JSON.parse(r.dataset.labels)[i];"
        "r.querySelectorAll('img').forEach(function(m,k){m.style.display=k===i?'block':'none'});"
        "r.querySelector('output').textContent=t;this.setAttribute('aria-valuetext',t);"
    )
    # The <output> is not a live region (aria-live="off"): the focused slider already announces
    # its new aria-valuetext, and a second, live copy would make screen readers say it twice.
    return HTML(
        f'<div class="dl-twin" id="{uid}" role="group" '
        f'aria-label="{html.escape(f"Figure for each value of {label}, chosen with a slider")}" '
        f'data-labels="{html.escape(json.dumps(labels))}">'
        f'<label class="dl-twin-controls" '
        f'style="display:flex;gap:0.8em;align-items:center;font-family:sans-serif">'
        f'<input type="range" id="{uid}-slider" min="0" max="{len(values) - 1}" step="1" '
        f'value="{first}" aria-label="{html.escape(label)}" '
        f'aria-valuetext="{html.escape(labels[first])}" oninput="{html.escape(on_input)}" '
        f'style="flex:1">'
        f'<output for="{uid}-slider" aria-live="off">{html.escape(labels[first])}</output>'
        f"</label>{frames}</div>"
    )


def panel(render: Callable, values: Sequence, *, label: str = "value", start=None,
          fmt: Callable = str, alt=None, dpi: int = 96, live: Callable | None = None) -> None:
    """Show ``render(v)`` with a slider over ``values``: a live ipywidgets slider in a kernel,
    or, where ``DEPTHLAB_TWINS=1`` (the notebook executed for the book), its no-kernel twin.

    Takes the parameters of :func:`scrubber` (``alt`` and ``dpi`` serve the twin only), and:

    live:
        For a panel whose live version explores more than the twin's frames (more sliders, or
        training on demand): a function of no arguments that displays that widget, called in a
        kernel instead of the slider over ``values``. The twin still shows ``values``.

    Displays the panel and returns nothing.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    from IPython.display import display

    values = _check_values(values)
    if start is not None and start not in values:
        raise ValueError(f"start={start!r} is not one of the values {values!r}")
    if not (alt is None or callable(alt) or isinstance(alt, str)):
        raise ValueError(f"alt must be a string or a function of the value, got {alt!r}")
    if live is not None and not callable(live):
        raise ValueError(f"live must be a function that displays a widget, or None, got "
                         f"{live!r}")
    if os.environ.get(TWINS) == "1":
        display(scrubber(render, values, label=label, start=start, fmt=fmt, dpi=dpi, alt=alt))
        return
    if live is not None:
        live()
        return
    import ipywidgets as widgets

    def show(v):
        display(render(v))
        plt.close("all")

    slider = widgets.SelectionSlider(options=[(fmt(v), v) for v in values],
                                     value=values[0] if start is None else start,
                                     description=label, continuous_update=False)
    widgets.interact(show, v=slider)
