"""Residual networks as collections of paths: counting them and splitting a Jacobian among them.

A stack of ``L`` residual blocks ``x_l = x_{l-1} + F_l(x_{l-1})`` has the input-output Jacobian

    dx_L/dx_0 = (I + J_L) (I + J_{L-1}) ... (I + J_1),     J_l = dF_l/dx_{l-1}.

Multiplying out the brackets gives one term for every subset of blocks (the blocks whose branch
the term goes through; it takes the shortcut everywhere else): ``2^L`` *paths*. Grouping them by
how many branches they go through (the path's *length* ``k``),

    dx_L/dx_0 = T_0 + T_1 + ... + T_L,   T_k = sum over l_1 < ... < l_k of J_{l_k} ... J_{l_1},

with ``T_0 = I`` and ``T_L = J_L ... J_1`` (the only path of a plain network). There are
``C(L, k)`` paths of length ``k``, so a path chosen at random has a Binomial(L, 1/2) length
(Veit et al. 2016, "Residual Networks Behave Like Ensembles of Relatively Shallow Networks").

* :func:`path_length_pmf` and :func:`path_fraction`: how the ``2^L`` paths spread over lengths;
* :func:`expand_product`: the terms ``T_0 .. T_L`` of a given list of branch Jacobians;
* :func:`branch_jacobians`: the branch Jacobians ``J_l`` of a residual :class:`DeepMLP` at one input;
* :func:`mean_length`: the mean length of a profile over lengths (``||T_k||``, gradient shares);
* :func:`reach`: the shortest lengths ``0..K`` that hold most of a profile.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._checks import positive_int


def path_length_pmf(n: int) -> np.ndarray:
    """Fraction of the ``2^n`` paths through ``n`` residual blocks that have each length.

    Returns an array ``p`` of shape ``(n + 1,)`` with ``p[k] = C(n, k) / 2^n``, the Binomial(n, 1/2)
    probabilities (computed exactly with integers, then converted to float).

    Introduced in Chapter 3 (chapters/03_gradient_highway).
    """
    n = positive_int("n", n)
    total = 2 ** n
    return np.array([math.comb(n, k) / total for k in range(n + 1)])


def path_fraction(n: int, lo: int, hi: int) -> float:
    """Fraction of the ``2^n`` paths through ``n`` blocks whose length is in ``lo..hi`` (inclusive).

    Introduced in Chapter 3 (chapters/03_gradient_highway).
    """
    n = positive_int("n", n)
    lo = positive_int("lo", lo, minimum=0)
    hi = positive_int("hi", hi, minimum=0)
    if not lo <= hi <= n:
        raise ValueError(f"need 0 <= lo <= hi <= n, got lo={lo}, hi={hi}, n={n}")
    return sum(math.comb(n, k) for k in range(lo, hi + 1)) / 2 ** n


def _as_matrices(jacobians) -> np.ndarray:
    mats = [np.asarray(j.detach().cpu() if isinstance(j, torch.Tensor) else j, dtype=np.float64)
            for j in jacobians]
    if not mats:
        raise ValueError("expand_product needs at least one Jacobian")
    d = mats[0].shape[0] if mats[0].ndim == 2 else None
    for i, m in enumerate(mats):
        if m.ndim != 2 or m.shape != (d, d):
            raise ValueError(f"every Jacobian must be a square matrix of the same size; "
                             f"Jacobian {i} has shape {m.shape}, the first has {mats[0].shape}")
    return np.stack(mats)


def expand_product(jacobians) -> np.ndarray:
    """The terms ``T_0 .. T_L`` of ``(I + J_L) ... (I + J_1)``, grouped by path length.

    Parameters
    ----------
    jacobians:
        The branch Jacobians ``J_1 .. J_L`` (first block first), square matrices of one size, as
        NumPy arrays or tensors.

    Returns
    -------
    T:
        Array of shape ``(L + 1, d, d)`` (float64) with ``T[k]`` the sum of the ``C(L, k)``
        ordered products of ``k`` distinct Jacobians, later blocks on the left. ``T.sum(0)`` is the
        full product, ``T[0]`` the identity, ``T[1] = J_1 + ... + J_L`` and ``T[L] = J_L ... J_1``.

    It needs ``O(L^2)`` matrix products, not ``2^L``: multiplying in block ``l`` either skips it
    (the path length stays) or goes through ``J_l`` (the length grows by one), so
    ``T_k <- T_k + J_l T_{k-1}`` for each new block.

    Introduced in Chapter 3 (chapters/03_gradient_highway).
    """
    J = _as_matrices(jacobians)
    L, d = J.shape[0], J.shape[1]
    T = np.zeros((L + 1, d, d))
    T[0] = np.eye(d)
    for l in range(L):
        # update the longest lengths first, so that T[k-1] is still the value before block l
        for k in range(l + 1, 0, -1):
            T[k] = T[k] + J[l] @ T[k - 1]
    return T


def branch_jacobians(model, u: torch.Tensor) -> np.ndarray:
    """The branch Jacobians ``J_l = d(alpha_l F_l)/dx`` of a residual DeepMLP at one input ``u``.

    Each block of ``model`` must be residual with the identity shortcut (``shortcut=1``, no
    projection) and no post-norm, so that ``dx_l/dx_{l-1} = I + J_l``. ``u`` is one raw input
    vector (shape ``(in_dim,)``); it is embedded to ``x_0`` and pushed through the blocks.
    Returns an array of shape ``(L, d, d)`` (float64), first block first.

    Introduced in Chapter 3 (chapters/03_gradient_highway).
    """
    for i, block in enumerate(model.blocks):
        if (not block.residual or block.proj is not None or block.shortcut != 1.0
                or block.norm_position == "post"):
            raise ValueError(
                f"block {i} is not x + alpha F(x) with the identity shortcut; branch_jacobians needs "
                "residual=True, shortcut=1.0, no projection and norm 'none' or 'pre'"
            )
    if u.dim() != 1:
        raise ValueError(f"branch_jacobians expects one input vector (1-D tensor), "
                         f"got shape {tuple(u.shape)}")
    jacobians = []
    with torch.no_grad():
        x = model.embed(u)
    for block in model.blocks:
        J = torch.autograd.functional.jacobian(lambda z, b=block: b.alpha * b.branch(z), x,
                                             vectorize=True)
        jacobians.append(J.double().cpu().numpy())
        with torch.no_grad():
            x = block(x)
    return np.stack(jacobians)


def mean_length(weights) -> float:
    """The mean path length ``sum_k k w_k / sum_k w_k`` of a profile ``w_0 .. w_L`` over lengths.

    ``weights[k]`` is what the paths of length ``k`` carry: the norm ``||T_k||`` of their sum in
    Chapter 3, their share of the gradient in Lab 2 (a share can be negative, where those paths
    point against the total). Returns a float.

    Introduced in Chapter 3 (chapters/03_gradient_highway).
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all() or w.sum() == 0:
        raise ValueError("weights must be a non-empty 1-D array of finite numbers (one per path "
                         f"length 0, 1, ...) whose sum is not zero, got {np.asarray(weights)!r}")
    return float(np.sum(np.arange(w.size) * w) / np.sum(w))


def reach(shares, mass: float = 0.9) -> int:
    """The smallest ``K`` such that lengths ``0..K`` hold at least ``mass`` of ``shares``.

    ``shares[k]`` is the share of a total carried by the paths of length ``k`` (summing to 1,
    as :func:`path_length_pmf` or Lab 2's gradient shares do; a share may be negative). A
    ``ValueError`` if the running sum never reaches ``mass``.

    Introduced in Lab 2 (labs/lab2_ensembles).
    """
    s = np.asarray(shares, dtype=float)
    if s.ndim != 1 or s.size == 0 or not np.isfinite(s).all():
        raise ValueError("shares must be a non-empty 1-D array of finite numbers (one per path "
                         f"length 0, 1, ...), got {np.asarray(shares)!r}")
    if not 0 < mass <= 1:
        raise ValueError(f"mass must be a share in (0, 1], got {mass!r}")
    held = np.cumsum(s) >= mass
    if not held.any():
        raise ValueError(f"the shares never add up to {mass} (their sum is {s.sum():.3g})")
    return int(np.argmax(held))
