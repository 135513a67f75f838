"""What makes a lab's result reproducible elsewhere: its seed, its device, its checked conclusions.

Every lab reads its base seed with :func:`lab_seed` and its device with
:func:`depthlab.default_device`, and ends with :func:`conclusions`, which prints the claims its
verdict rests on, each with ``holds`` or ``FAILS``, and glues them for ``make bench``:

* ``make test`` (nbval) re-runs every lab at seed 0 on the CPU and compares the printed lines
  with the committed ones, so a change that breaks a conclusion fails the tests;
* ``make bench`` (``tools/bench.py``) re-runs every notebook that checks conclusions with
  ``DEPTHLAB_SEED=1`` and ``DEPTHLAB_SEED=2`` and reports whether each conclusion holds for all
  three seeds.

Environment variables (both optional):

``DEPTHLAB_SEED``
    A non-negative integer added to every seed a lab uses (default 0, the committed outputs).
``DEPTHLAB_DEVICE``
    ``cpu``, ``cuda`` or ``auto`` (default): where labs train. ``auto`` picks CUDA when it is
    available. ``make test`` sets ``cpu`` so that the stored outputs are compared exactly.
"""

from __future__ import annotations

import operator
import os
import re

import numpy as np
import torch

DEVICES = ("auto", "cpu", "cuda")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def lab_seed() -> int:
    """The base seed of a lab: ``DEPTHLAB_SEED`` from the environment, 0 when it is not set."""
    text = os.environ.get("DEPTHLAB_SEED", "0").strip()
    if not text.isdigit():
        raise ValueError(f"DEPTHLAB_SEED must be a non-negative integer such as 0, 1 or 2; "
                         f"got {text!r}")
    return int(text)


def default_device() -> torch.device:
    """Where to train: ``DEPTHLAB_DEVICE`` if set, else CUDA when available, else the CPU.

    Nothing in the course requires a GPU; its networks are small enough for a laptop CPU.
    """
    name = os.environ.get("DEPTHLAB_DEVICE", "auto").strip().lower()
    if name not in DEVICES:
        raise ValueError(f"DEPTHLAB_DEVICE must be one of {', '.join(DEVICES)}; got {name!r}")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("DEPTHLAB_DEVICE is 'cuda' but PyTorch sees no CUDA device "
                         "(torch.cuda.is_available() is False); use 'cpu' or 'auto'")
    return torch.device(name)


OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
             "==": operator.eq}


class ConclusionFailed(AssertionError):
    """Raised by :func:`conclusions` when a claim of a lab's verdict does not hold."""


def _check_claim(name, claim):
    """Validate one claim; return ``(holds, text)``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"claim names must be snake_case identifiers such as "
                         f"'plain_degrades'; got {name!r}")
    if not (isinstance(claim, tuple) and len(claim) == 3 and claim[1] in OPERATORS):
        raise ValueError(f"claim {name!r} must be a tuple (measured, operator, threshold) with "
                         f"operator one of {', '.join(OPERATORS)}; got {claim!r}")
    measured, op, threshold = claim
    for what, number in (("measured value", measured), ("threshold", threshold)):
        if isinstance(number, (bool, np.bool_)) or not isinstance(number, (int, float, np.number)):
            raise ValueError(f"claim {name!r}: the {what} must be a number, got {number!r}")
    holds = bool(OPERATORS[op](measured, threshold)) and not np.isnan(measured)
    return holds, f"{_fmt(measured)} {op} {_fmt(threshold)}"


def _fmt(number) -> str:
    return f"{number:.4g}" if isinstance(number, (float, np.floating)) else str(number)


def conclusions(claims: dict) -> None:
    """Check each claim of a lab's verdict, print it with ``holds`` or ``FAILS``, and glue it.

    ``claims`` maps a short snake_case name (``plain_degrades``) to a tuple
    ``(measured, operator, threshold)``, e.g. ``(worst_loss, "<", math.log(2) / 2)``: the
    quantity the claim is about, measured by the lab, and the threshold written down from the
    claim before the run. ``operator`` is one of ``<``, ``<=``, ``>``, ``>=``, ``==``.

    Every claim is printed (measured value, operator, threshold) and glued as ``holds_<name>``,
    which ``make bench`` reads when it re-runs the lab at other seeds. If any claim fails,
    :class:`ConclusionFailed` is raised after all are printed, so a notebook whose verdict no
    longer holds fails under nbval and ``make bench``.
    """
    from .report import glue

    if not isinstance(claims, dict) or not claims:
        raise ValueError("claims must be a dict naming at least one conclusion, e.g. "
                         "{'plain_degrades': (loss_56, '>', loss_8)}")
    # validate every claim before printing or gluing any of them
    checked = {name: _check_claim(name, claim) for name, claim in claims.items()}
    width = max(len(name) for name in checked)
    for name, (holds, text) in checked.items():
        print(f"{name:<{width}}  {text}  {'holds' if holds else 'FAILS'}")
        glue(f"holds_{name}", holds, display=False)
    failed = [f"{name} ({text})" for name, (holds, text) in checked.items() if not holds]
    print(f"seed {lab_seed()}: {len(checked) - len(failed)} of {len(checked)} hold")
    if failed:
        raise ConclusionFailed("these conclusions do not hold: " + "; ".join(failed))
