"""Generated data sets. Nothing is downloaded: every set is computed from a seed."""

from __future__ import annotations

import math

import torch

from ._checks import finite_float, positive_int
from ._checks import seed as check_seed


def spirals(n: int = 1000, *, classes: int = 2, turns: float = 1.5, noise: float = 0.05,
            seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Interleaved 2-D spirals, one arm per class.

    Parameters
    ----------
    n:
        Number of points in total (split as evenly as possible between the classes).
    classes:
        Number of arms, >= 2.
    turns:
        How many times each arm winds around the origin; more turns make a harder problem that
        needs a more nonlinear decision boundary.
    noise:
        Standard deviation of the Gaussian noise added to each coordinate (>= 0).
    seed:
        Seed of the generator, so the same arguments always give the same data.

    Returns
    -------
    X, y:
        ``X`` of shape ``(n, 2)`` (float32, roughly in ``[-1, 1]``) and integer labels ``y``.
    """
    n = positive_int("n", n, minimum=2)
    classes = positive_int("classes", classes, minimum=2)
    turns = finite_float("turns", turns, positive=True)
    noise = finite_float("noise", noise, nonnegative=True)
    g = torch.Generator().manual_seed(check_seed("seed", seed))
    y = torch.arange(n) % classes
    r = torch.rand(n, generator=g, dtype=torch.float64)  # position along the arm, 0 to 1
    theta = 2 * math.pi * (turns * r + y / classes)
    X = torch.stack([r * torch.cos(theta), r * torch.sin(theta)], dim=1)
    X = X + noise * torch.randn(n, 2, generator=g, dtype=torch.float64)
    return X.float(), y


def two_spirals(n: int = 1000, *, turns: float = 1.5, noise: float = 0.05, seed: int = 0):
    """Two interleaved spirals: :func:`spirals` with ``classes=2``."""
    return spirals(n, classes=2, turns=turns, noise=noise, seed=seed)


def split(X: torch.Tensor, y: torch.Tensor, *, test_fraction: float = 0.25, seed: int = 0):
    """Shuffle and split into ``(X_train, y_train, X_test, y_test)``.

    The test set holds ``round(test_fraction * n)`` examples (at least 1) and the training set
    the rest (at least 1), drawn by a generator seeded with ``seed``.
    """
    if len(X) != len(y):
        raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}")
    test_fraction = finite_float("test_fraction", test_fraction)
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be strictly between 0 and 1, got {test_fraction}")
    if len(X) < 2:
        raise ValueError(f"split needs at least 2 examples (one to train, one to test), "
                         f"got {len(X)}")
    g = torch.Generator().manual_seed(check_seed("seed", seed))
    order = torch.randperm(len(X), generator=g)
    n_test = max(1, int(round(test_fraction * len(X))))
    if n_test >= len(X):
        raise ValueError(f"test_fraction={test_fraction} of {len(X)} examples leaves no training "
                         f"example; use a test_fraction below {(len(X) - 0.5) / len(X):.3g}")
    test, train = order[:n_test], order[n_test:]
    return X[train], y[train], X[test], y[test]
