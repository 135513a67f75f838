"""The helpers every lab uses around its experiment (depthlab.book.experiments)."""

import math

import pytest
import torch

import depthlab as dl


def test_setup_returns_the_device_and_seed_and_can_cap_threads(monkeypatch):
    monkeypatch.setenv("DEPTHLAB_SEED", "3")
    monkeypatch.setenv("DEPTHLAB_DEVICE", "cpu")
    before = torch.get_num_threads()
    try:
        assert dl.setup(threads=1) == (torch.device("cpu"), 3)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        dl.setup(threads=0)


def test_steps_to_is_the_first_step_below_the_target_or_never():
    assert dl.steps_to([0.7, 0.3, 0.09, 0.2, 0.05], 0.1) == 2
    assert dl.steps_to([0.7, float("nan"), 0.5], 0.1) == math.inf
    with pytest.raises(ValueError, match="one loss per step"):
        dl.steps_to([[0.1, 0.2]], 0.1)
    with pytest.raises(ValueError, match="target must be a finite number"):
        dl.steps_to([0.1], float("nan"))


def sweep():
    # arm "a" is best at 1e-2 (median 10), "b" never reaches the target except at 1e-1
    scores = {}
    for seed, (a1, a2, a3) in enumerate([(40, 10, 30), (50, 12, math.inf), (45, 8, 20)]):
        scores.update({("a", 1e-3, seed): a1, ("a", 1e-2, seed): a2, ("a", 1e-1, seed): a3})
        scores.update({("b", 1e-3, seed): math.inf, ("b", 1e-2, seed): math.inf,
                       ("b", 1e-1, seed): 60 + seed})
    return scores


def test_each_arm_is_compared_at_its_own_best_rate_by_the_median():
    best = dl.best_rates(sweep())
    assert best["a"] == {"lr": 1e-2, "median": 10.0, "scores": [10.0, 12.0, 8.0]}
    assert best["b"]["lr"] == 1e-1 and best["b"]["median"] == 61
    accuracy = {(arm, lr, s): -v for (arm, lr, s), v in sweep().items()}
    assert dl.best_rates(accuracy, better="higher")["a"]["lr"] == 1e-2


def test_the_rate_table_shows_the_sweep_and_flags_a_best_rate_at_the_edge():
    text = dl.rate_table(sweep()).data
    assert "| a | 45 | **10** | 30 | 0.01 |" in text
    assert "| b | never | never | **61** | 0.1 (at the edge of the sweep) |" in text


@pytest.mark.parametrize("scores, message", [
    ({}, "non-empty dict"),
    ({("a", 1e-3): 1.0}, "tuple \\(arm, lr, seed\\)"),
    ({("a", -1.0, 0): 1.0}, "learning rate"),
    ({("a", 1e-3, 0): 1.0, ("a", 1e-3, 1): 1.0, ("a", 1e-2, 0): 1.0}, "number of seeds"),
])
def test_malformed_sweeps_are_refused(scores, message):
    with pytest.raises(ValueError, match=message):
        dl.best_rates(scores)
    with pytest.raises(ValueError, match="better must be one of"):
        dl.best_rates({("a", 1e-3, 0): 1.0}, better="best")
