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
        # a cap, not a count: never more than PyTorch's default (OMP_NUM_THREADS=1 in nbval)
        monkeypatch.setattr("depthlab.book.experiments._TORCH_THREADS", 1)
        dl.setup(threads=2)
        assert torch.get_num_threads() == 1
        monkeypatch.setattr("depthlab.book.experiments._TORCH_THREADS", 4)
        dl.setup(threads=2)
        assert torch.get_num_threads() == 2
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


def test_a_tie_is_broken_by_the_second_score_then_by_the_smaller_rate():
    # "c" reaches the target at no rate: every median is "never"
    steps = {("c", lr, s): math.inf for lr in (1e-3, 1e-2, 1e-1) for s in range(3)}
    final = {("c", lr, s): {1e-3: 0.6, 1e-2: 0.3, 1e-1: 0.5}[lr] for (_, lr, s) in steps}
    assert dl.best_rates(steps)["c"]["lr"] == 1e-3  # no tie-break: the smaller rate
    best = dl.best_rates(steps, tie_break=final)["c"]
    assert best["lr"] == 1e-2 and best["median"] == math.inf
    # accuracies at 1.00 at two rates: the lower held-out loss wins, not the smaller rate
    acc = {("p", lr, s): {1e-3: 0.9, 1e-2: 1.0, 3e-2: 1.0}[lr] for lr in (1e-3, 1e-2, 3e-2)
           for s in range(3)}
    loss = {("p", lr, s): {1e-3: 0.4, 1e-2: 0.05, 3e-2: 0.01}[lr] for (_, lr, s) in acc}
    assert dl.best_rates(acc, better="higher")["p"]["lr"] == 1e-2
    assert dl.best_rates(acc, better="higher", tie_break=loss)["p"]["lr"] == 3e-2
    # the tie-break never overrides a better median
    assert dl.best_rates(acc, better="higher", tie_break=loss,
                         tie_better="higher")["p"]["lr"] == 1e-2
    with pytest.raises(ValueError, match="tie_break must score the same"):
        dl.best_rates(acc, tie_break={("p", 1e-3, 0): 1.0})
    with pytest.raises(ValueError, match="tie_better must be one of"):
        dl.best_rates(acc, tie_break=loss, tie_better="best")


def test_a_nan_median_is_never_the_best_rate():
    scores = {("a", 1e-3, 0): math.nan, ("a", 1e-2, 0): 0.5}
    assert dl.best_rates(scores)["a"]["lr"] == 1e-2
    assert dl.best_rates(scores, better="higher")["a"]["lr"] == 1e-2


def test_an_arm_that_no_rate_scored_has_no_bold_cell():
    steps = {("c", lr, s): math.inf for lr in (1e-3, 1e-2) for s in range(3)}
    final = {("c", lr, s): {1e-3: 0.6, 1e-2: 0.3}[lr] for (_, lr, s) in steps}
    assert "| c | never | never | none |" in dl.rate_table(steps).data
    text = dl.rate_table(steps, tie_break=final).data
    assert "**" not in text
    assert "| c | never | never | none (tie-break 0.01) |" in text


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
