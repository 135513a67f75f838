"""Argument checks shared by depthlab's public functions: the only place they are written.

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


def boolean(name: str, value) -> bool:
    """Return ``value`` if it is ``True`` or ``False``; otherwise raise ValueError."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


# ---------------------------------------------------------------- training arguments

OPTIMIZERS = ("adam", "sgd")


def batch_size(value, n: int, what: str = "examples"):
    """``value`` as an int in 1..n, or None (full batch); otherwise raise ValueError."""
    if value is None:
        return None
    value = positive_int("batch_size", value)
    if value > n:
        raise ValueError(f"batch_size must be <= the number of {what} ({n}), got {value}")
    return value


def recipe(steps, optimizer, warmup, X, y, batch, weight_decay, adam_eps, seed_,
           loss_scale=1.0) -> dict:
    """Validate the arguments shared by the training functions; return them cleaned."""
    steps = positive_int("steps", steps)
    choice("optimizer", optimizer, OPTIMIZERS)
    warmup = positive_int("warmup", warmup, minimum=0)
    if len(X) != len(y):
        raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}")
    return dict(steps=steps, optimizer=optimizer, warmup=warmup,
                batch_size=batch_size(batch, len(X)),
                weight_decay=finite_float("weight_decay", weight_decay, nonnegative=True),
                adam_eps=finite_float("adam_eps", adam_eps, nonnegative=True),
                loss_scale=finite_float("loss_scale", loss_scale, positive=True),
                seed=seed("seed", seed_))


def betas(value) -> tuple[float, float]:
    """Adam's ``(beta1, beta2)`` as two floats in [0, 1); otherwise raise ValueError."""
    if (isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool)
                       and math.isfinite(b) and 0 <= b < 1 for b in value)):
        raise ValueError(f"betas must be two numbers in [0, 1), got {value!r}")
    return float(value[0]), float(value[1])


def trainable(model) -> None:
    """Training records per-block numbers: the model needs ``blocks`` and ``block_weights()``."""
    from torch import nn

    if not isinstance(model, nn.Module) or not hasattr(model, "blocks") or not callable(
            getattr(model, "block_weights", None)):
        raise ValueError(f"the model must be an nn.Module with `blocks` and `block_weights()`, "
                         f"such as dl.DeepMLP; got {type(model).__name__}")


def same_dtype(model, X) -> None:
    """Floating inputs must have the dtype of the model's parameters (float32 or float64)."""
    dtype = next(model.parameters()).dtype
    if X.is_floating_point() and X.dtype != dtype:
        raise ValueError(f"X is {X.dtype} but the model's parameters are {dtype}: convert one "
                         f"of them (X.to({dtype}), or model.to(X.dtype))")


def block_indices(name: str, values, blocks: int) -> list[int]:
    """``values`` as a list of block indices ``0..blocks-1``; otherwise raise ValueError."""
    values = list(values)
    if not all(isinstance(v, Integral) and not isinstance(v, bool) and 0 <= v < blocks
               for v in values):
        raise ValueError(f"{name} must list block indices 0..{blocks - 1}, got {values}")
    return [int(v) for v in values]
