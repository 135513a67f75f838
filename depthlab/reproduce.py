"""What makes a lab's result reproducible elsewhere: its seed, its device, its checked conclusions.

Every lab reads its base seed with :func:`lab_seed` and its device with
:func:`depthlab.default_device`, and ends with :func:`conclusions`, which prints the claims its
verdict rests on, each with ``holds`` or ``FAILS``, and glues them for ``make bench``:

* ``make test`` (nbval) re-runs every lab at seed 0 on the CPU and compares the printed lines
  with the committed ones, so a change that breaks a conclusion fails the tests;
* ``make bench`` re-runs every lab with ``DEPTHLAB_SEED=1`` and ``DEPTHLAB_SEED=2`` and reports
  whether each conclusion holds for all three seeds.

Environment variables (both optional):

``DEPTHLAB_SEED``
    A non-negative integer added to every seed a lab uses (default 0, the committed outputs).
``DEPTHLAB_DEVICE``
    ``cpu``, ``cuda`` or ``auto`` (default): where labs train. ``auto`` picks CUDA when it is
    available. ``make test`` sets ``cpu`` so that the stored outputs are compared exactly.
"""

from __future__ import annotations

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


def conclusions(claims: dict) -> None:
    """Print each claim of a lab's verdict with ``holds`` or ``FAILS``, and glue it.

    ``claims`` maps a short snake_case name (``plain_degrades``) to a boolean computed from the
    lab's measurements. Each is glued as ``holds_<name>`` (not displayed), which is what
    ``make bench`` reads when it re-runs the lab with other seeds; the last printed line counts
    how many hold.
    """
    from myst_nb import glue

    if not claims:
        raise ValueError("claims must name at least one conclusion, e.g. {'plain_degrades': True}")
    width = max(len(name) for name in claims)
    for name, value in claims.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"claim names must be snake_case identifiers such as "
                             f"'plain_degrades'; got {name!r}")
        # numpy booleans are fine; anything else is probably a number passed by mistake
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"claim {name!r} must be True or False, got {value!r}")
        value = bool(value)
        print(f"{name:<{width}}  {'holds' if value else 'FAILS'}")
        glue(f"holds_{name}", value, display=False)
    # nothing is returned, so the cell shows only the printed lines
    print(f"seed {lab_seed()}: {sum(map(bool, claims.values()))} of {len(claims)} hold")
