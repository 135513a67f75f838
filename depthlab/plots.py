"""One figure style for the whole course.

Call :func:`use_style` once at the top of a notebook. Figures get a white background (so they
stay legible on the site's dark theme too), a light grid and the course's colours, which always
mean the same thing: :data:`COLORS` maps ``"plain"``, ``"residual"``, ``"default"``, ``"he"``,
``"pre"``, ``"post"``, ``"rezero"``... to one colour each.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

# Colour-blind-safe palette (Okabe & Ito); the same meaning in every chapter.
COLORS = {
    "plain": "#D55E00",      # vermillion
    "residual": "#0072B2",   # blue
    "default": "#E69F00",    # orange
    "he": "#009E73",         # green
    "orthogonal": "#CC79A7", # purple
    "pre": "#0072B2",
    "post": "#D55E00",
    "rezero": "#009E73",
    "learned": "#CC79A7",
    "gray": "#777777",
}

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100, "savefig.dpi": 100,
    "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
    "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False,
    "axes.titlesize": 11, "axes.labelsize": 10,
    "legend.fontsize": 9, "legend.frameon": False,
    "xtick.labelsize": 9, "ytick.labelsize": 9,
    "lines.linewidth": 1.8,
    "image.cmap": "viridis",
}


def use_style() -> None:
    """Apply the course's figure style to every later figure in this process.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    mpl.rcParams.update(STYLE)


def color(name: str) -> str:
    """The course colour for ``name`` (see :data:`COLORS`).

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    if name not in COLORS:
        raise ValueError(f"unknown colour name {name!r}; known: {', '.join(COLORS)}")
    return COLORS[name]


def layer_heatmap(ax, values: np.ndarray, *, label: str = "gradient norm", log: bool = True,
                  xlabel: str = "training step", ylabel: str = "layer"):
    """Draw a (steps x layers) array as a layer-by-step heatmap, layer 1 at the bottom.

    With ``log=True`` the colour is ``log10`` of the values (non-positive values are masked).
    Returns the colour bar.

    Introduced in Lab 1 (labs/lab1_fifty_layers).
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"layer_heatmap expects a 2-D (steps, layers) array, got {values.shape}")
    shown = values.T
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            shown = np.where(shown > 0, np.log10(shown), np.nan)
        label = f"log10 {label}"
    im = ax.imshow(shown, aspect="auto", origin="lower", interpolation="nearest",
                   extent=(0, values.shape[0], 0.5, values.shape[1] + 0.5))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    return plt.colorbar(im, ax=ax, label=label)
