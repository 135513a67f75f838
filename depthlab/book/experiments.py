"""What every lab does around its experiment: start, score a run, compare arms at their best rate.

* :func:`setup` is a notebook's first line of code after the imports: the course's figure
  style, the device and the seed (``DEPTHLAB_DEVICE``, ``DEPTHLAB_SEED``), and optionally one
  PyTorch thread.
* :func:`steps_to` scores a training curve: the first step whose loss is below a target
  (``math.inf`` when it never gets there).
* :func:`best_rates` and :func:`rate_table` compare arms fairly (the labs' rule): each arm at its
  own best learning rate from a sweep, by the median over seeds, with the whole sweep one table
  away. Used by Labs 1-6 and their solutions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .._checks import choice, finite_float, positive_int
from ..plots import use_style
from ..seeds import default_device, lab_seed
from .report import markdown_table

# PyTorch's own thread count (one per core, or OMP_NUM_THREADS), read before setup() changes it
_TORCH_THREADS = torch.get_num_threads()


def setup(threads: int | None = None) -> tuple[torch.device, int]:
    """Start a notebook: the course's figure style; return ``(device, seed)``.

    ``device`` is :func:`depthlab.default_device` (CUDA when available, unless
    ``DEPTHLAB_DEVICE`` says otherwise) and ``seed`` is :func:`depthlab.lab_seed` (0 unless
    ``DEPTHLAB_SEED`` says otherwise), to be added to every seed the notebook uses. ``threads``
    caps PyTorch's CPU threads: ``min(threads, PyTorch's default)``, so it never adds threads
    where ``OMP_NUM_THREADS`` asked for fewer (``None`` leaves the default). Labs 1, 3, 4 and 6
    ask for two (a step of their small networks takes about two thirds of its one-thread time).
    Every chapter and lab starts with it.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    if threads is not None:
        torch.set_num_threads(min(positive_int("threads", threads), _TORCH_THREADS))
    use_style()
    return default_device(), lab_seed()


def steps_to(losses: Sequence[float], target: float) -> float:
    """The first step whose loss is below ``target``; ``math.inf`` if no step gets there.

    A training curve's score in the labs: "how fast" as one number, with "never" larger than any
    step (so medians and comparisons still work). ``losses`` is one loss per step, such as
    ``History.loss``; a NaN (a diverged run) never counts as below.

    Introduced in Lab 6 (labs/lab6_which_block).
    """
    target = finite_float("target", target)
    losses = np.asarray(losses, dtype=float)
    if losses.ndim != 1:
        raise ValueError(f"losses must be one loss per step (1-D), got shape {losses.shape}")
    below = np.flatnonzero(losses < target)
    return int(below[0]) if len(below) else math.inf


BETTER = ("lower", "higher")


def _by_arm(scores: Mapping) -> dict:
    """``{(arm, lr, seed): score}`` -> ``{arm: {lr: [scores over seeds]}}`` (sorted rates)."""
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must be a non-empty dict {(arm, lr, seed): score}")
    table: dict = {}
    for key, score in scores.items():
        if not (isinstance(key, tuple) and len(key) == 3):
            raise ValueError(f"every key of scores must be a tuple (arm, lr, seed); got {key!r}")
        arm, lr, _ = key
        finite_float("a learning rate in scores' keys", lr, positive=True)
        table.setdefault(arm, {}).setdefault(lr, []).append(float(score))
    for arm, rates in table.items():
        counts = {len(v) for v in rates.values()}
        if len(counts) != 1:
            raise ValueError(f"arm {arm!r} has a different number of seeds at different rates")
        table[arm] = dict(sorted(rates.items()))
    return table


def best_rates(scores: Mapping, better: str = "lower", tie_break: Mapping | None = None,
               tie_better: str = "lower") -> dict:
    """Each arm's best learning rate in a sweep, by the median score over seeds.

    ``scores`` maps ``(arm, lr, seed)`` to a score (a final loss, steps to a target, ``inf`` for
    never: ``better="lower"``; an accuracy: ``better="higher"``). Returns
    ``{arm: {"lr": best rate, "median": its median score, "scores": the seeds' scores there}}``.

    Rates whose medians tie (an accuracy of 1.00 at several rates, or a target that no rate
    reached, "never" everywhere) are told apart by ``tie_break``, a second score with the same
    keys (for example the held-out loss, or the final loss when no rate reached the target),
    better as ``tie_better`` says; a tie that remains goes to the smaller rate. A best rate at
    either end of the swept range means the sweep should be widened; :func:`rate_table` marks it.

    Introduced in Lab 2 (labs/lab2_ensembles).
    """
    choice("better", better, BETTER)
    choice("tie_better", tie_better, BETTER)
    second = _by_arm(tie_break) if tie_break is not None else None
    best = {}
    for arm, rates in _by_arm(scores).items():
        if second is not None and set(second.get(arm, {})) != set(rates):
            raise ValueError(f"tie_break must score the same (arm, lr) pairs as scores; "
                             f"arm {arm!r} differs")

        def key(item, arm=arm):
            lr, values = item
            tie = float(np.median(second[arm][lr])) if second is not None else 0.0
            return (_oriented(float(np.median(values)), better),
                    _oriented(tie, tie_better), lr)

        lr, values = min(rates.items(), key=key)
        best[arm] = {"lr": lr, "median": float(np.median(values)), "scores": values}
    return best


def _oriented(value: float, better: str) -> float:
    """A score as a key to minimise (NaN, a diverged run, counts as the worst)."""
    if math.isnan(value):
        return math.inf
    return value if better == "lower" else -value


def _shown(value: float, digits: int) -> str:
    if math.isinf(value):
        return "never" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    return f"{value:.{digits}g}"


def rate_table(scores: Mapping, better: str = "lower", digits: int = 3,
               tie_break: Mapping | None = None, tie_better: str = "lower"):
    """The whole sweep as a Markdown table: one row per arm, one column per learning rate, the
    median score over seeds in each cell, the arm's best rate (:func:`best_rates`, with the same
    ``tie_break``) in bold and marked "at the edge of the sweep" when it is the smallest or the
    largest rate tried. An arm that no rate scored (every median "never" or NaN) has no bold
    cell; its best-rate column says "none", with the rate the tie-break chose, if one was given.

    Introduced with :func:`best_rates` in Lab 5 (labs/lab5_degradation).
    """
    best = best_rates(scores, better, tie_break, tie_better)
    table = _by_arm(scores)
    rates = sorted({lr for arm in table.values() for lr in arm})
    rows = []
    for arm, by_rate in table.items():
        scored = math.isfinite(best[arm]["median"])
        row = [str(arm)]
        for lr in rates:
            if lr not in by_rate:
                row.append("")
                continue
            text = _shown(float(np.median(by_rate[lr])), digits)
            row.append(f"**{text}**" if scored and lr == best[arm]["lr"] else text)
        edge = best[arm]["lr"] in (min(by_rate), max(by_rate)) and len(by_rate) > 1
        chosen = f"{best[arm]['lr']:g}" + (" (at the edge of the sweep)" if edge else "")
        if not scored:  # short: a long cell makes the whole row tall on the page
            chosen = (f"none (tie-break {best[arm]['lr']:g})" if tie_break is not None
                      else "none")
        row.append(chosen)
        rows.append(row)
    return markdown_table(["arm", *(f"lr {lr:g}" for lr in rates), "best rate"], rows)
