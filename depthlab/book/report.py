"""Reporting measurements: numbers glued into the book's prose, rounded honestly, tabulated.

* :func:`glue` stores a value under a name so that the book's text can show it
  (``{glue:text}`name```). It uses myst-nb's ``glue`` when myst-nb is installed (the book build,
  ``make test``); without it (Colab, a bare Jupyter) it prints ``name = value`` instead, so the
  notebook runs anywhere and the reader still sees the number the text refers to.
* :func:`significant` rounds to a few significant digits, to the nearest value or, for a bound
  quoted in a sentence ("every run ends at or above ..."), in the direction that keeps it true.
* :func:`geometric_mean` averages quantities that vary over orders of magnitude;
* :func:`markdown_table` shows a table as Markdown (a real table in Jupyter and on the site);
* :func:`show_source` shows the package's own code in a page, so that a chapter teaches from the
  code the experiments run instead of a second copy.
"""

from __future__ import annotations

import inspect
import math
import textwrap
from collections.abc import Sequence

import numpy as np

from .._checks import choice, positive_int

DIRECTIONS = ("nearest", "down", "up")


def glue(name: str, value, display: bool = True) -> None:
    """Make ``value`` available to the book's prose under ``name`` (myst-nb's glue).

    ``display=False`` hides it in the notebook; the prose shows it with ``{glue:text}`name```.
    When myst-nb is not installed the value is printed as ``name = value`` (or displayed as
    usual with ``display=True``), so the notebook does not depend on the book's tooling.

    Introduced in Chapter 1 (chapters/01_depth_problem).
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

    Introduced in Chapter 1 (chapters/01_depth_problem).
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

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("values must hold at least one number")
    if not np.all(values > 0):
        raise ValueError("a geometric mean needs values > 0 (take absolute values or drop "
                         "zeros first)")
    out = np.exp(np.mean(np.log(values), axis=axis))
    return float(out) if np.ndim(out) == 0 else out


def markdown_table(header: Sequence, rows: Sequence[Sequence]):
    """Show a table as Markdown (rendered as a real table in Jupyter and on the site).

    ``header`` is the list of column titles and ``rows`` a list of rows with one cell per column;
    cells are turned into text with ``str`` (format numbers before passing them). Returns an
    ``IPython.display.Markdown`` object: leave it last in a cell, or ``display`` it.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    from IPython.display import Markdown

    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column")
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for i, row in enumerate(rows):
        cells = [str(c).replace("|", "\\|") for c in row]
        if len(cells) != len(header):
            raise ValueError(f"row {i} has {len(cells)} cells, the header has {len(header)}")
        lines.append("| " + " | ".join(cells) + " |")
    return Markdown("\n".join(lines))


class Source:
    """Code to show: highlighted as Markdown in Jupyter, Colab and on the site, and the code
    itself as plain text (what nbval compares, so a stored copy cannot go stale unnoticed)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.text}\n```"

    def __repr__(self) -> str:
        return self.text


def show_source(*objects) -> Source:
    """Show the source code of functions, methods or classes, one after the other.

    A chapter that teaches a block reads the package's own code with it, the code every
    experiment runs, rather than a copy written for the page. Each is shown under a comment
    naming its file and, for a method, the class that defines it. Returns a :class:`Source`:
    leave it last in a cell.

    Introduced in Lab 1 (labs/lab1_fifty_layers); Chapters 6 to 8 and Lab 2 use it too.
    """
    if not objects:
        raise ValueError("show_source needs at least one function, method or class")
    parts = []
    for obj in objects:
        try:
            code = textwrap.dedent(inspect.getsource(obj)).rstrip()
        except (TypeError, OSError):
            raise ValueError(f"show_source shows functions, methods and classes written in "
                             f"Python, got {obj!r}") from None
        # where it is: the file, and the class that defines a method
        where = f"{obj.__module__.replace('.', '/')}.py: {obj.__qualname__}"
        parts.append(f"# {where}\n{code}")
    return Source("\n\n".join(parts))
