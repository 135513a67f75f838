"""Tests of depthlab.book.report (glue, significant, geometric_mean) and of seeded models."""

import builtins

import numpy as np
import pytest
import torch

import depthlab as dl


@pytest.mark.parametrize("value, digits, direction, expected", [
    (0.48, 1, "nearest", 0.5),
    (0.48, 1, "down", 0.4),    # "every run ends at or above 0.4" stays true for a minimum of 0.48
    (0.52, 1, "up", 0.6),      # "every run ends at or below 0.6" stays true for a maximum of 0.52
    (0.3, 1, "down", 0.3),     # exact values are not pushed a step further
    (20.4, 1, "nearest", 20),
    (123456, 2, "down", 120000),
    (3.2e-20, 1, "up", 4e-20),
    (-0.48, 1, "down", -0.5),
    (0, 2, "up", 0),
])
def test_significant_rounds_in_the_direction_asked(value, digits, direction, expected):
    got = dl.significant(value, digits, direction)
    assert got == pytest.approx(expected, rel=1e-12)
    if isinstance(expected, int):
        assert isinstance(got, int)


@pytest.mark.parametrize("kwargs, message", [
    (dict(value=float("nan")), "finite number"),
    (dict(value="x"), "finite number"),
    (dict(value=1.0, digits=0), "digits must be an integer >= 1"),
    (dict(value=1.0, direction="floor"), "direction must be one of 'nearest', 'down', 'up'"),
])
def test_significant_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dl.significant(**kwargs)


def test_geometric_mean_of_values_and_of_stacked_curves():
    assert dl.geometric_mean([1e-3, 1e-1]) == pytest.approx(1e-2)
    curves = np.array([[1.0, 100.0], [4.0, 1.0]])
    np.testing.assert_allclose(dl.geometric_mean(curves, axis=0), [2.0, 10.0])
    with pytest.raises(ValueError, match="values > 0"):
        dl.geometric_mean([1.0, 0.0])
    with pytest.raises(ValueError, match="at least one"):
        dl.geometric_mean([])


def test_glue_without_myst_nb_prints_the_value(monkeypatch, capsys):
    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name.startswith("myst_nb"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    dl.glue("final_loss", 0.25, display=False)
    assert capsys.readouterr().out == "final_loss = 0.25\n"
    with pytest.raises(ValueError, match="non-empty string"):
        dl.glue("", 1)


def test_a_seeded_model_is_the_same_network_and_leaves_the_global_state_alone():
    torch.manual_seed(3)
    reference = dl.DeepMLP(4, 8)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    seeded = dl.DeepMLP(4, 8, seed=3)
    after = torch.rand(1)
    assert torch.equal(before, after)  # building it drew nothing from the global state
    for p, q in zip(reference.parameters(), seeded.parameters()):
        assert torch.equal(p, q)
    other = dl.TinyTransformer(8, 4, 1, d_model=16, seed=1)
    again = dl.TinyTransformer(8, 4, 1, d_model=16, seed=1)
    assert all(torch.equal(p, q) for p, q in zip(other.parameters(), again.parameters()))


def test_a_seeded_model_leaves_every_gpu_generator_alone(monkeypatch):
    # torch.manual_seed would also reseed every GPU, whose state fork_rng(devices=[]) does not
    # restore: a seeded model must seed the CPU generator only
    def reseeds_a_gpu(seed):
        raise AssertionError("a seeded model reseeded the GPU generators")

    monkeypatch.setattr(torch.cuda, "manual_seed_all", reseeds_a_gpu)
    dl.DeepMLP(2, 4, seed=7)
    dl.ResNet1d(8, 4, seed=7)


@pytest.mark.parametrize("seed", [1.7, "a", -1, True])
def test_models_reject_a_seed_that_is_not_a_non_negative_integer(seed):
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        dl.DeepMLP(2, 4, seed=seed)


def test_history_first_is_a_shorter_run():
    X, y = dl.two_spirals(64, seed=0)
    long = dl.train(dl.DeepMLP(3, 8, seed=0), X, y, steps=12, device="cpu")
    short = dl.train(dl.DeepMLP(3, 8, seed=0), X, y, steps=5, device="cpu")
    head = long.first(5)
    np.testing.assert_allclose(head.loss, short.loss, rtol=1e-6)
    np.testing.assert_allclose(head.grad_norms, short.grad_norms, rtol=1e-5)
    assert head.meta["steps"] == 5
    with pytest.raises(ValueError, match="steps must be <= the 12 steps"):
        long.first(13)
    # a warm-up ramps over its own steps, whatever the run's length
    warm = dl.train(dl.DeepMLP(3, 8, seed=0), X, y, steps=6, warmup=4, device="cpu")
    warm_short = dl.train(dl.DeepMLP(3, 8, seed=0), X, y, steps=3, warmup=4, device="cpu")
    np.testing.assert_array_equal(warm.first(3).loss, warm_short.loss)
    np.testing.assert_array_equal(warm.first(3).lr, warm_short.lr)


def test_show_source_shows_the_package_code_under_its_file_and_class():
    shown = dl.show_source(dl.BasicBlock.branch, dl.train)
    text = repr(shown)
    assert text.startswith("# depthlab/resnet.py: BasicBlock.branch\ndef branch(self, h")
    assert "\n\n# depthlab/training.py: train\ndef train(" in text
    # highlighted as Python where Markdown is rendered; the plain text is what nbval compares
    assert shown._repr_markdown_() == f"```python\n{text}\n```"


@pytest.mark.parametrize("objects", [(), (3,), (len,)])
def test_show_source_rejects_what_has_no_python_source(objects):
    with pytest.raises(ValueError, match="show_source"):
        dl.show_source(*objects)
