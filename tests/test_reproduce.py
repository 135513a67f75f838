"""Seeds, devices and checked conclusions (depthlab.reproduce)."""

import numpy as np
import pytest
import torch

import depthlab as dl


def test_lab_seed_defaults_to_zero_and_reads_the_environment(monkeypatch):
    monkeypatch.delenv("DEPTHLAB_SEED", raising=False)
    assert dl.lab_seed() == 0
    monkeypatch.setenv("DEPTHLAB_SEED", "2")
    assert dl.lab_seed() == 2


@pytest.mark.parametrize("bad", ["-1", "one", "1.5", ""])
def test_lab_seed_rejects_what_is_not_a_nonnegative_integer(monkeypatch, bad):
    monkeypatch.setenv("DEPTHLAB_SEED", bad)
    with pytest.raises(ValueError, match="non-negative integer"):
        dl.lab_seed()


def test_default_device_follows_the_environment(monkeypatch):
    monkeypatch.setenv("DEPTHLAB_DEVICE", "cpu")
    assert dl.default_device() == torch.device("cpu")
    monkeypatch.setenv("DEPTHLAB_DEVICE", "auto")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert dl.default_device().type == expected
    monkeypatch.setenv("DEPTHLAB_DEVICE", "tpu")
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        dl.default_device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a CPU-only machine")
def test_asking_for_cuda_without_a_gpu_says_so(monkeypatch):
    monkeypatch.setenv("DEPTHLAB_DEVICE", "cuda")
    with pytest.raises(ValueError, match="no CUDA device"):
        dl.default_device()


def test_conclusions_print_each_claim_with_its_numbers(capsys, monkeypatch):
    monkeypatch.delenv("DEPTHLAB_SEED", raising=False)
    dl.conclusions({"deep_is_better": (0.2, "<", 0.35), "plain_fails": (np.float64(0.69), ">=", 0.6)})
    out = capsys.readouterr().out
    assert "deep_is_better  0.2 < 0.35  holds" in out
    assert "seed 0: 2 of 2 hold" in out


def test_a_failing_conclusion_fails_the_notebook_after_printing_all(capsys, monkeypatch):
    monkeypatch.delenv("DEPTHLAB_SEED", raising=False)
    with pytest.raises(dl.ConclusionFailed, match=r"plain_fails \(0.5 >= 0.6\)"):
        dl.conclusions({"plain_fails": (0.5, ">=", 0.6), "deep_is_better": (1, "<", 2)})
    out = capsys.readouterr().out
    assert "plain_fails     0.5 >= 0.6  FAILS" in out
    assert "deep_is_better  1 < 2  holds" in out
    assert "seed 0: 1 of 2 hold" in out


def test_a_nan_measurement_never_holds(capsys):
    with pytest.raises(dl.ConclusionFailed):
        dl.conclusions({"fits": (float("nan"), "<", 1.0)})


@pytest.mark.parametrize("claims, message", [
    ({}, "at least one"),
    ({"Bad Name": (1, "<", 2)}, "snake_case"),
    ({"ratio": 0.3}, "tuple"),
    ({"ratio": True}, "tuple"),  # a bare verdict hides the numbers it rests on
    ({"ratio": np.bool_(False)}, "tuple"),
    ({"ratio": (0.3, "~", 1)}, "operator one of"),
    ({"ratio": ("big", "<", 1)}, "measured value must be a number"),
])
def test_conclusions_reject_malformed_claims(claims, message, capsys):
    with pytest.raises(ValueError, match=message):
        dl.conclusions(claims)


def test_conclusions_check_every_name_before_printing_any(capsys):
    with pytest.raises(ValueError, match="snake_case"):
        dl.conclusions({"fine": (1, "<", 2), "Bad Name": (1, "<", 2)})
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_training_on_cuda_matches_the_cpu_and_hands_the_model_back():
    from depthlab import sweep

    X, y = dl.two_spirals(64, seed=0)

    def one_of_many(model, *args, **kwargs):
        return sweep.train_many([model], *args, **kwargs)[0]

    for fit in (dl.train, one_of_many):
        runs = []
        for device in ("cpu", "cuda"):
            torch.manual_seed(0)
            model = dl.DeepMLP(6, 16)
            runs.append(fit(model, X, y, steps=20, device=device))
            # the notebooks keep their data on the CPU, so the model must come back there
            assert next(model.parameters()).device.type == "cpu"
        assert np.allclose(runs[0].loss, runs[1].loss, rtol=1e-3, atol=1e-4)
