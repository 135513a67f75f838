"""The checked conclusions every notebook ends with.

Every chapter and lab ends with :func:`conclusions`, which prints the claims its
verdict rests on, each with ``holds`` or ``FAILS``, and glues them for ``make bench``:

* ``make test`` (nbval) re-runs every notebook at seed 0, and a claim that fails raises
  :class:`ConclusionFailed`, which fails the tests on any machine;
* ``make bench`` (``tools/bench.py``) re-runs every notebook that checks conclusions at other
  seeds, thread counts and kernel sets, and reports for each claim its worst measured value
  against its threshold.

The seed and the device come from :mod:`depthlab.seeds` (``DEPTHLAB_SEED``, ``DEPTHLAB_DEVICE``).
"""

from __future__ import annotations

import json
import operator
import re

import numpy as np

from ..seeds import lab_seed
from .report import glue

_NAME = re.compile(r"[a-z][a-z0-9_]*")


OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
             "==": operator.eq}
# When a check was written down: before any data of the experiment it checks (the default; only
# these decide a hypothesis), after a trial run of the experiment, or after the run itself.
WRITTEN = ("before the data", "after a trial", "after a run")


class ConclusionFailed(AssertionError):
    """Raised by :func:`conclusions` when a claim of a lab's verdict does not hold.

    Introduced with :func:`conclusions` in Chapter 1 (chapters/01_depth_problem).
    """


# the prediction "measured op threshold" fails exactly when "measured complement threshold" holds
COMPLEMENT = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _check_claim(name, claim, refuted: bool = False):
    """Validate one claim; return its record (a dict, see :func:`conclusions`) and its text.

    With ``refuted``, ``claim`` is a prediction the text reports as refuted: the record holds
    when the prediction does not (its operator is the complement of the prediction's)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"claim names must be snake_case identifiers such as "
                         f"'plain_degrades'; got {name!r}")
    if not (isinstance(claim, tuple) and len(claim) in (3, 4) and claim[1] in OPERATORS):
        raise ValueError(f"claim {name!r} must be a tuple (measured, operator, threshold) or "
                         f"(measured, operator, threshold, written) with operator one of "
                         f"{', '.join(OPERATORS)}; got {claim!r}")
    measured, op, threshold = claim[:3]
    written = claim[3] if len(claim) == 4 else WRITTEN[0]
    if written not in WRITTEN:
        raise ValueError(f"claim {name!r}: when it was written must be one of "
                         f"{', '.join(map(repr, WRITTEN))}; got {written!r}")
    for what, number in (("measured value", measured), ("threshold", threshold)):
        if isinstance(number, (bool, np.bool_)) or not isinstance(number, (int, float, np.number)):
            raise ValueError(f"claim {name!r}: the {what} must be a number, got {number!r}")
    text = f"{_fmt(measured)} {op} {_fmt(threshold)}"
    if refuted:
        if op not in COMPLEMENT:
            raise ValueError(f"refuted prediction {name!r}: its operator must be one of "
                             f"{', '.join(COMPLEMENT)}; got {op!r}")
        op = COMPLEMENT[op]
    holds = bool(OPERATORS[op](measured, threshold)) and not np.isnan(measured)
    record = {"measured": _plain(measured), "op": op, "threshold": _plain(threshold),
              "holds": holds, "written": written}
    if refuted:
        record["verdict"] = "refuted"
    return record, text


def _plain(number):
    """A JSON-ready number (NaN and infinities as strings, which JSON lacks)."""
    number = float(number) if isinstance(number, (float, np.floating)) else int(number)
    return number if not isinstance(number, float) or np.isfinite(number) else repr(number)


def _fmt(number) -> str:
    return f"{number:.4g}" if isinstance(number, (float, np.floating)) else str(number)


def conclusions(claims: dict, refuted: dict | None = None) -> None:
    """Check each claim of a lab's verdict, print it with ``holds`` or ``FAILS``, and glue it.

    ``claims`` maps a short snake_case name (``plain_degrades``) to a tuple
    ``(measured, operator, threshold)``, e.g. ``(worst_loss, "<", math.log(2) / 2)``: the
    quantity the claim is about, measured by the lab, and the threshold written down from the
    claim before the run. ``operator`` is one of ``<``, ``<=``, ``>``, ``>=``, ``==``. A check
    written after a trial run or after the run itself says so in a fourth element,
    ``"after a trial"`` or ``"after a run"`` (see ``WRITTEN``); only the checks written before
    the data decide a hypothesis, and the notebook's folded account of how its claims were tested
    lists the others apart.

    ``refuted`` holds, in the same form, the predictions written before the data that the text
    reports as refuted: each is printed with ``refuted`` when the prediction fails, as the text
    says, and fails the notebook (``HOLDS``) if the prediction holds after all.

    Every claim is printed (measured value, operator, threshold) and glued as
    ``check_<name>``, a JSON record of the measured value, the operator, the threshold, whether
    it holds and when it was written (a refuted prediction: the complement of its operator, and
    ``"verdict": "refuted"``), which ``make bench`` reads when it re-runs the notebook
    elsewhere. If any claim fails, :class:`ConclusionFailed` is raised after all are printed, so
    a notebook whose verdict no longer holds fails under nbval and ``make bench``.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    refuted = {} if refuted is None else refuted
    if not isinstance(claims, dict) or not isinstance(refuted, dict) or not (claims or refuted):
        raise ValueError("claims must be a dict naming at least one conclusion, e.g. "
                         "{'plain_degrades': (loss_56, '>', loss_8)}")
    both = set(claims) & set(refuted)
    if both:
        raise ValueError(f"a name is both a claim and a refuted prediction: {sorted(both)}")
    # validate every claim before printing or gluing any of them
    checked = {name: _check_claim(name, claim) for name, claim in claims.items()}
    checked |= {name: _check_claim(name, claim, refuted=True) for name, claim in refuted.items()}
    width = max(len(name) for name in checked)

    def group_of(record):
        return "refuted" if record.get("verdict") == "refuted" else record["written"]

    groups = {when: {n: c for n, c in checked.items() if group_of(c[0]) == when}
              for when in (*WRITTEN, "refuted")}
    groups = {when: group for when, group in groups.items() if group}
    headed = len(groups) > 1
    for when, group in groups.items():
        if headed:  # say when each group was written only where they differ
            print("predictions the text reports as refuted:" if when == "refuted" else
                  f"written {when}:")
        for name, (record, text) in group.items():
            if when == "refuted":
                verdict = "refuted" if record["holds"] else "HOLDS"
            else:
                verdict = "holds" if record["holds"] else "FAILS"
            print(f"{'  ' if headed else ''}{name:<{width}}  {text}  {verdict}")
            glue(f"check_{name}", json.dumps(record), display=False)
    counts = []
    for when, group in groups.items():
        held = sum(record["holds"] for record, _ in group.values())
        if when == "refuted":
            counts.append(f"{held} of {len(group)} refuted as the text says")
        else:
            counts.append(f"{held} of {len(group)}{f' written {when}' if headed else ''} hold")
    print(f"seed {lab_seed()}: " + "; ".join(counts))
    failed = [f"{name} ({text}{' holds' if record.get('verdict') else ''})"
              for name, (record, text) in checked.items() if not record["holds"]]
    if failed:
        raise ConclusionFailed("these conclusions do not hold: " + "; ".join(failed))
