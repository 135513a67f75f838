"""Seeds and devices: every random number the course draws starts from a seed set here.

* :func:`lab_seed` and :func:`default_device` read ``DEPTHLAB_SEED`` and ``DEPTHLAB_DEVICE``;
* :func:`set_seed` seeds Python, NumPy and PyTorch at the top of a notebook;
* :func:`seeded` draws a model's initial weights from its own seed (``DeepMLP(..., seed=s)``);
* :func:`stochastic_depth_generator`: the random source of a ResNet's dropped blocks.

A training run draws its minibatches from a generator of its own, seeded by its ``seed``.

Environment variables (both optional):

``DEPTHLAB_SEED``
    A non-negative integer added to every seed a lab uses (default 0, the committed outputs).
``DEPTHLAB_DEVICE``
    ``cpu``, ``cuda`` or ``auto`` (default): where labs train. ``auto`` picks CUDA when it is
    available. ``make test`` sets ``cpu`` unless told otherwise.
"""

from __future__ import annotations

import os
import random
from contextlib import contextmanager

import numpy as np
import torch

from ._checks import seed as check_seed

DEVICES = ("auto", "cpu", "cuda")


def lab_seed() -> int:
    """The base seed of a notebook: ``DEPTHLAB_SEED`` from the environment, 0 when not set.

    Introduced in Chapter 1 (chapters/01_depth_problem); every chapter and lab adds it to its
    seeds.
    """
    text = os.environ.get("DEPTHLAB_SEED", "0").strip()
    if not text.isdigit():
        raise ValueError(f"DEPTHLAB_SEED must be a non-negative integer such as 0, 1 or 2; "
                         f"got {text!r}")
    return int(text)


def default_device() -> torch.device:
    """Where to train: ``DEPTHLAB_DEVICE`` if set, else CUDA when available, else the CPU.

    Nothing in the course requires a GPU; its networks are small enough for a laptop CPU.
    Introduced in Lab 1 (labs/lab1_fifty_layers).
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


def set_seed(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (CPU and CUDA) so a notebook re-runs identically.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    seed = check_seed("seed", seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextmanager
def seeded(seed):
    """Draw the initial weights of the modules built inside from ``seed`` (``None``: as usual).

    The global random state is restored afterwards, so building a seeded model does not change
    what later random calls draw: ``DeepMLP(..., seed=s)`` is the same network wherever it is
    built, and the same as ``torch.manual_seed(s)`` followed by ``DeepMLP(...)``.
    """
    if seed is None:
        yield
        return
    seed = check_seed("seed", seed)
    with torch.random.fork_rng(devices=[]):
        # the CPU generator only: fork_rng(devices=[]) restores no GPU's state, and the layers
        # are built on the CPU anyway
        torch.default_generator.manual_seed(seed)
        yield


def stochastic_depth_generator(seed: int | None) -> torch.Generator:
    """The random source of a network's stochastic-depth draws: from ``seed``, or from
    PyTorch's global random state when it is None."""
    if seed is None:
        seed = int(torch.randint(0, 2**31 - 1, ()))
    # offset, so that the drops are not the same stream as the initial weights
    return torch.Generator().manual_seed(check_seed("seed", seed) + 7919)
