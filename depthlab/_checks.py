"""Argument checks shared by depthlab's public functions.

Every check raises ``ValueError`` with a message that names the argument, the value it got and
what is allowed, so a learner who mistypes a setting in a notebook sees how to fix it.
"""

from __future__ import annotations

import math
from numbers import Integral, Real


def positive_int(name: str, value, *, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum``; otherwise raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def finite_float(name: str, value, *, positive: bool = False, nonnegative: bool = False) -> float:
    """Return ``value`` as a float if it is a finite real number (optionally > 0 or >= 0)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if nonnegative and value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return float(value)


def choice(name: str, value, allowed) -> str:
    """Return ``value`` if it is one of ``allowed``; otherwise raise ValueError listing them."""
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {options}; got {value!r}")
    return value


def seed(name: str, value) -> int:
    """Return ``value`` if it is an integer >= 0 usable as a random seed; otherwise raise."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0 such as 0, 1 or 2, got {value!r}")
    return int(value)
