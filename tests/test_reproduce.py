"""Seeds, devices and checked conclusions (depthlab.seeds and depthlab.book.claims)."""

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


def test_each_check_is_glued_with_its_numbers_and_when_it_was_written(monkeypatch):
    import json

    glued = {}
    monkeypatch.setattr(dl.book.claims, "glue", lambda name, value, display=True: glued.update(
        {name: value}))
    dl.conclusions({"ratio_is_large": (np.float64(12.5), ">", 10),
                    "seen_in_a_trial": (3, "<=", 4, "after a trial")})
    assert json.loads(glued["check_ratio_is_large"]) == {
        "measured": 12.5, "op": ">", "threshold": 10, "holds": True,
        "written": "before the data"}
    assert json.loads(glued["check_seen_in_a_trial"])["written"] == "after a trial"


def test_checks_written_at_different_times_are_listed_and_counted_apart(capsys, monkeypatch):
    monkeypatch.delenv("DEPTHLAB_SEED", raising=False)
    dl.conclusions({"early": (1, "<", 2), "late": (1, "<", 2, "after a run"),
                    "trial": (5, ">", 4, "after a trial")})
    out = capsys.readouterr().out.splitlines()
    assert out == ["written before the data:", "  early  1 < 2  holds",
                   "written after a trial:", "  trial  5 > 4  holds",
                   "written after a run:", "  late   1 < 2  holds",
                   "seed 0: 1 of 1 written before the data hold; 1 of 1 written after a trial "
                   "hold; 1 of 1 written after a run hold"]


def test_a_prediction_reported_as_refuted_must_fail(capsys, monkeypatch):
    import json

    monkeypatch.delenv("DEPTHLAB_SEED", raising=False)
    glued = {}
    monkeypatch.setattr(dl.book.claims, "glue", lambda name, value, display=True: glued.update(
        {name: value}))
    dl.conclusions({"plain_fails": (0.69, ">", 0.6)},
                   refuted={"input_returns": (3e-8, ">", 1e-6)})
    out = capsys.readouterr().out.splitlines()
    assert out == ["written before the data:", "  plain_fails    0.69 > 0.6  holds",
                   "predictions the text reports as refuted:",
                   "  input_returns  3e-08 > 1e-06  refuted",
                   "seed 0: 1 of 1 written before the data hold; 1 of 1 refuted as the text "
                   "says"]
    record = json.loads(glued["check_input_returns"])
    assert record["op"] == "<=" and record["holds"] and record["verdict"] == "refuted"
    with pytest.raises(dl.ConclusionFailed, match=r"input_returns \(0.5 > 1e-06 holds\)"):
        dl.conclusions({}, refuted={"input_returns": (0.5, ">", 1e-6)})
    assert "input_returns  0.5 > 1e-06  HOLDS" in capsys.readouterr().out
    with pytest.raises(ValueError, match="both a claim and a refuted prediction"):
        dl.conclusions({"a": (1, "<", 2)}, refuted={"a": (1, ">", 2)})
    with pytest.raises(ValueError, match="operator must be one of"):
        dl.conclusions({}, refuted={"a": (1, "==", 2)})


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
    ({"ratio": (1, "<", 2, "later")}, "when it was written must be one of"),
    ({"ratio": (1, "<", 2, "after a run", "extra")}, "tuple"),
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
    from depthlab.fast import sweep

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
