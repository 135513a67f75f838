"""MNIST-1D (Greydanus and Kobak), generated on this machine: nothing is downloaded.

MNIST-1D is a published benchmark of 1-D signals: ten classes (the digits' templates, padded,
translated, sheared, scaled and noised), 40 samples per signal, 4,000 training and 1,000 test
examples in its default form. The ``mnist1d`` package builds it procedurally from its templates
with a fixed seed; :func:`load_mnist1d` calls that generator (``make_dataset`` with the default
arguments, never the package's downloading ``get_dataset``) and keeps the arrays in memory for
the rest of the process, so a notebook pays the couple of seconds once and writes no file.
"""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np
import torch

#: Shapes of the canonical default set: (training signals, test signals, length, classes).
MNIST1D_SHAPE = (4000, 1000, 40, 10)


@lru_cache(maxsize=1)
def _generate() -> tuple[np.ndarray, ...]:
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
    """
    x, y, x_test, y_test = _generate()
    return (torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64),
            torch.tensor(x_test, dtype=torch.float32), torch.tensor(y_test, dtype=torch.int64))
