"""Reporting measurements: numbers glued into the book's prose, rounded honestly, summarized.

* :func:`glue` stores a value under a name so that the book's text can show it
  (``{glue:text}`name```). It uses myst-nb's ``glue`` when myst-nb is installed (the book build,
  ``make test``); without it (Colab, a bare Jupyter) it prints ``name = value`` instead, so the
  notebook runs anywhere and the reader still sees the number the text refers to.
* :func:`significant` rounds to a few significant digits, to the nearest value or, for a bound
  quoted in a sentence ("every run ends at or above ..."), in the direction that keeps it true.
* :func:`geometric_mean` averages quantities that vary over orders of magnitude.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import choice, positive_int

DIRECTIONS = ("nearest", "down", "up")


def glue(name: str, value, display: bool = True) -> None:
    """Make ``value`` available to the book's prose under ``name`` (myst-nb's glue).

    ``display=False`` hides it in the notebook; the prose shows it with ``{glue:text}`name```.
    When myst-nb is not installed the value is printed as ``name = value`` (or displayed as
    usual with ``display=True``), so the notebook does not depend on the book's tooling.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            from IPython.display import display as show

            show(value)
        else:
            print(f"{name} = {value}")
        return
    myst_glue(name, value, display=display)


def significant(value, digits: int = 1, direction: str = "nearest"):
    """``value`` rounded to ``digits`` significant digits, as a plain Python number.

    ``direction`` is ``"nearest"``, ``"down"`` (towards minus infinity: a lower bound stays a
    lower bound, as in "every run ends at or above 0.4" for a minimum of 0.48) or ``"up"`` (an
    upper bound stays one). Whole numbers come back as ``int`` so that 20 reads "20", not "20.0".
    """
    digits = positive_int("digits", digits)
    choice("direction", direction, DIRECTIONS)
    if isinstance(value, bool):
        raise ValueError(f"value must be a finite number, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value must be a finite number, got {value!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}")
    if value == 0:
        return 0
    if direction == "nearest":
        rounded = float(f"{value:.{digits - 1}e}")
        return int(rounded) if abs(rounded) >= 1 and rounded.is_integer() else rounded
    exponent = math.floor(math.log10(abs(value))) - digits + 1
    scaled = value / 10.0 ** exponent
    # a tolerance of a few ulps, so that 0.3 rounded down stays 0.3 instead of 0.2999...
    eps = 1e-9 * abs(scaled)
    scaled = math.floor(scaled + eps) if direction == "down" else math.ceil(scaled - eps)
    rounded = float(f"{scaled * 10.0 ** exponent:.{digits - 1}e}")
    return int(rounded) if abs(rounded) >= 1 and rounded.is_integer() else rounded


def geometric_mean(values, axis=None):
    """The geometric mean ``exp(mean(log(values)))`` of positive values.

    ``axis`` as in NumPy (``None``: over everything, returning a float; ``0``: over the first
    axis of a stack of arrays, e.g. one curve per seed, returning an array).
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("values must hold at least one number")
    if not np.all(values > 0):
        raise ValueError("a geometric mean needs values > 0 (take absolute values or drop "
                         "zeros first)")
    out = np.exp(np.mean(np.log(values), axis=axis))
    return float(out) if np.ndim(out) == 0 else out
