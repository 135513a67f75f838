"""Unit tests of depthlab.paths: path counting and the path expansion of a Jacobian product."""

import itertools
import math

import numpy as np
import pytest
import torch

import depthlab as dl
from depthlab import paths


def random_jacobians(L, d, scale=0.3, seed=0):
    rng = np.random.default_rng(seed)
    return [scale * rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(L)]


def product_of_brackets(J):
    d = J[0].shape[0]
    P = np.eye(d)
    for Jl in J:  # block l acts after blocks 1..l-1: multiply on the left
        P = (np.eye(d) + Jl) @ P
    return P


# ---------------------------------------------------------------- counting


def test_path_length_pmf_is_binomial_and_sums_to_one():
    p = paths.path_length_pmf(10)
    assert p.shape == (11,)
    assert p.sum() == pytest.approx(1.0)
    assert p[0] == pytest.approx(2.0 ** -10)  # one path skips every block
    assert p[1] == pytest.approx(10 * 2.0 ** -10)  # n paths go through exactly one block
    assert np.allclose(p, p[::-1])  # C(n, k) = C(n, n - k)
    assert np.argmax(p) == 5


def test_path_fraction_counts_paths_exactly():
    assert paths.path_fraction(4, 0, 4) == 1.0
    assert paths.path_fraction(4, 2, 2) == 6 / 16
    # the whole range is the sum of its parts
    n = 54
    parts = paths.path_fraction(n, 0, 18) + paths.path_fraction(n, 19, n)
    assert parts == pytest.approx(1.0)


@pytest.mark.parametrize("args, message", [
    ((0, 0, 0), "n must be an integer >= 1"),
    ((5, 3, 2), r"need 0 <= lo <= hi <= n, got lo=3, hi=2, n=5"),
    ((5, 0, 6), r"need 0 <= lo <= hi <= n, got lo=0, hi=6, n=5"),
    ((5, -1, 2), "lo must be an integer >= 0, got -1"),
])
def test_path_fraction_rejects_bad_ranges(args, message):
    with pytest.raises(ValueError, match=message):
        paths.path_fraction(*args)


# ---------------------------------------------------------------- expansion


def test_expansion_terms_add_up_to_the_product():
    J = random_jacobians(L=7, d=5)
    T = paths.expand_product(J)
    assert T.shape == (8, 5, 5)
    np.testing.assert_allclose(T.sum(0), product_of_brackets(J), atol=1e-12)


def test_expansion_terms_are_the_sums_over_subsets_of_each_size():
    L, d = 5, 3
    J = random_jacobians(L, d, scale=1.0, seed=1)
    T = paths.expand_product(J)
    for k in range(L + 1):
        brute = np.zeros((d, d))
        for subset in itertools.combinations(range(L), k):
            term = np.eye(d)
            for l in subset:  # increasing l: later blocks end up on the left
                term = J[l] @ term
            brute += term
        np.testing.assert_allclose(T[k], brute, atol=1e-12)
    np.testing.assert_array_equal(T[0], np.eye(d))
    np.testing.assert_allclose(T[1], sum(J), atol=1e-12)


def test_expansion_accepts_tensors():
    J = [torch.randn(4, 4, generator=torch.Generator().manual_seed(s)) for s in range(3)]
    T = paths.expand_product(J)
    np.testing.assert_allclose(T.sum(0), product_of_brackets([j.double().numpy() for j in J]),
                               atol=1e-10)


def test_expansion_rejects_mismatched_or_missing_matrices():
    with pytest.raises(ValueError, match="at least one Jacobian"):
        paths.expand_product([])
    with pytest.raises(ValueError, match=r"Jacobian 1 has shape \(4, 4\), the first has \(3, 3\)"):
        paths.expand_product([np.eye(3), np.eye(4)])
    with pytest.raises(ValueError, match=r"square matrix of the same size; Jacobian 0 has shape \(3, 2\)"):
        paths.expand_product([np.ones((3, 2))])


# ---------------------------------------------------------------- branch Jacobians


def test_branch_jacobians_rebuild_the_network_jacobian():
    torch.manual_seed(0)
    model = dl.DeepMLP(6, 8, alpha=0.5, init="he").double()
    u = torch.tensor([0.3, -0.7], dtype=torch.float64)
    J = paths.branch_jacobians(model, u)
    assert J.shape == (6, 8, 8)

    def blocks_only(x0):
        for block in model.blocks:
            x0 = block(x0)
        return x0

    with torch.no_grad():
        x0 = model.embed(u)
    full = torch.autograd.functional.jacobian(blocks_only, x0).numpy()
    np.testing.assert_allclose(product_of_brackets(list(J)), full, atol=1e-10)


def test_branch_jacobians_of_rezero_are_zero():
    model = dl.DeepMLP(3, 4, alpha="rezero")
    J = paths.branch_jacobians(model, torch.zeros(2))
    assert np.count_nonzero(J) == 0


@pytest.mark.parametrize("kwargs", [dict(residual=False), dict(norm="post"),
                                    dict(shortcut=0.5)])
def test_branch_jacobians_reject_blocks_without_an_identity_shortcut(kwargs):
    model = dl.DeepMLP(3, 4, **kwargs)
    with pytest.raises(ValueError, match="block 0 is not x \\+ alpha F\\(x\\) with the identity shortcut"):
        paths.branch_jacobians(model, torch.zeros(2))


def test_branch_jacobians_need_one_input_vector():
    model = dl.DeepMLP(3, 4)
    with pytest.raises(ValueError, match=r"one input vector \(1-D tensor\), got shape \(5, 2\)"):
        paths.branch_jacobians(model, torch.zeros(5, 2))


# ---------------------------------------------------------------- mean length


def test_mean_length_weights_each_length_by_its_share():
    assert paths.mean_length([1, 0, 0]) == 0.0          # everything on the shortcut path
    assert paths.mean_length([0, 0, 2]) == 2.0
    assert paths.mean_length([1, 1]) == 0.5
    # the Binomial(n, 1/2) profile of all 2^n paths has mean n / 2
    assert paths.mean_length(paths.path_length_pmf(30)) == pytest.approx(15.0)
    # a negative share pulls the mean away from its length
    assert paths.mean_length([2, -1, 1]) == pytest.approx(0.5)


def test_reach_is_the_shortest_prefix_of_lengths_holding_the_mass():
    assert paths.reach([0.95, 0.05]) == 0
    assert paths.reach([0.5, 0.3, 0.2]) == 2                # 0.8 < 0.9 after two lengths
    assert paths.reach([0.5, 0.3, 0.2], mass=0.8) == 1
    assert paths.reach([0.6, -0.1, 0.6, -0.1]) == 2         # a negative share is subtracted
    # half the 2^20 paths have length <= 10, 90% of them <= 13
    assert paths.reach(paths.path_length_pmf(20), mass=0.5) == 10
    assert paths.reach(paths.path_length_pmf(20)) == 13


@pytest.mark.parametrize("shares, mass, message", [
    ([], 0.9, "shares must be a non-empty 1-D array"),
    ([0.5, np.nan], 0.9, "shares must be a non-empty 1-D array"),
    ([0.5, 0.5], 0.0, r"mass must be a share in \(0, 1\]"),
    ([0.5, 0.3], 0.9, "the shares never add up to 0.9"),
])
def test_reach_says_what_it_needs(shares, mass, message):
    with pytest.raises(ValueError, match=message):
        paths.reach(shares, mass=mass)


@pytest.mark.parametrize("weights", [[], [[1, 2]], [0, 0], [1, np.nan], [1, -1]])
def test_mean_length_rejects_what_has_no_mean(weights):
    with pytest.raises(ValueError, match="weights must be a non-empty 1-D array of finite numbers"):
        paths.mean_length(weights)
