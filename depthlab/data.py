"""Data sets, all generated on this machine: nothing is downloaded.

* :func:`spirals` and :func:`two_spirals`: 2-D points on interleaved arms, from a seed;
* :func:`split`: a seeded train/test split;
* :func:`load_mnist1d`: MNIST-1D (Greydanus and Kobak), a published benchmark of 1-D signals:
  ten classes (the digits' templates, padded, translated, sheared, scaled and noised), 40
  samples per signal, 4,000 training and 1,000 test examples in its default form. The
  ``mnist1d`` package builds it procedurally from its templates with a fixed seed; the loader
  calls that generator (``make_dataset`` with the default arguments, never the package's
  downloading ``get_dataset``) and keeps the arrays in memory for the rest of the process, so a
  notebook pays the couple of seconds once and writes no file.

Sequence tasks for the transformer are :func:`depthlab.sequence_task`, beside the model.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache

import numpy as np
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

    Introduced in Chapter 1 (chapters/01_depth_problem).
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
    """Two interleaved spirals: :func:`spirals` with ``classes=2``.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    return spirals(n, classes=2, turns=turns, noise=noise, seed=seed)


def split(X: torch.Tensor, y: torch.Tensor, *, test_fraction: float = 0.25, seed: int = 0):
    """Shuffle and split into ``(X_train, y_train, X_test, y_test)``.

    The test set holds ``round(test_fraction * n)`` examples (at least 1) and the training set
    the rest (at least 1), drawn by a generator seeded with ``seed``.

    Introduced in Lab 2 (labs/lab2_ensembles).
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


#: Shapes of the canonical default set: (training signals, test signals, length, classes).
MNIST1D_SHAPE = (4000, 1000, 40, 10)


@lru_cache(maxsize=1)
def _mnist1d_arrays() -> tuple[np.ndarray, ...]:
    from mnist1d.data import get_dataset_args, make_dataset

    # make_dataset seeds Python's and NumPy's global generators; give the caller theirs back
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        data = make_dataset(get_dataset_args())
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    arrays = (data["x"], data["y"], data["x_test"], data["y_test"])
    for a in arrays:
        a.setflags(write=False)  # the cache is shared: nobody may change it
    return arrays


def load_mnist1d() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The default MNIST-1D set as ``(X, y, X_test, y_test)``.

    ``X`` has shape ``(4000, 40)`` and ``X_test`` ``(1000, 40)``, float32 signals (standardized
    by the generator: mean about 0, standard deviation about 1); ``y`` and ``y_test`` hold the
    classes 0-9 (int64). The first call generates the set (a few seconds); later calls in the
    same process return fresh tensors copied from the arrays kept in memory. Python's and
    NumPy's global random states are left as they were.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    x, y, x_test, y_test = _mnist1d_arrays()
    return (torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64),
            torch.tensor(x_test, dtype=torch.float32), torch.tensor(y_test, dtype=torch.int64))
