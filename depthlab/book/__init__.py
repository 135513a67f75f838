"""The book's machinery: what makes a notebook a page of the course, not what it teaches.

* :mod:`~depthlab.book.report`: :func:`glue` (numbers into the prose), :func:`significant`
  (rounding that keeps a sentence true), :func:`geometric_mean`, :func:`markdown_table`,
  :func:`show_source` (the package's code shown in a page);
* :mod:`~depthlab.book.claims`: :func:`conclusions`, the checked claims every notebook
  ends with, and :class:`ConclusionFailed`;
* :mod:`~depthlab.book.twin`: interactive panels (:func:`panel`) and their no-kernel twins
  (:func:`scrubber`);
* :mod:`~depthlab.book.experiments`: a notebook's :func:`setup`, :func:`steps_to`, and the
  labs' fair comparison of arms at their best learning rates (:func:`best_rates`,
  :func:`rate_table`).

Nothing in the core imports this package.
"""

from .claims import ConclusionFailed, conclusions
from .exercises import check
from .experiments import best_rates, rate_table, setup, steps_to
from .report import geometric_mean, glue, markdown_table, show_source, significant
from .twin import panel, scrubber

__all__ = ["best_rates", "check", "ConclusionFailed", "conclusions", "geometric_mean", "glue",
           "markdown_table", "panel", "rate_table", "scrubber", "setup", "show_source",
           "significant",
           "steps_to"]
