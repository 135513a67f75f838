"""Tests of depthlab.fast.sweep: training models together must equal training them one by one
(the fast path against the core loop, model by model; see also tests/test_layers.py)."""

import numpy as np
import pytest
import torch

import depthlab as dl
from depthlab.fast import sweep

X, Y = dl.spirals(96, turns=1.0, seed=0)


def make(seed, **kw):
    torch.manual_seed(seed)
    return dl.DeepMLP(kw.pop("depth", 6), kw.pop("width", 8), **kw)


def separately(models, lrs, **kw):
    return [dl.train(m, X, Y, lr=lr, device="cpu", **kw) for m, lr in zip(models, lrs)]


def assert_same_history(h1, h2, rtol=1e-4):
    np.testing.assert_allclose(h1.loss, h2.loss, rtol=rtol)
    np.testing.assert_allclose(h1.accuracy, h2.accuracy)
    np.testing.assert_allclose(h1.grad_norms, h2.grad_norms, rtol=rtol * 10)
    np.testing.assert_allclose(h1.update_ratio, h2.update_ratio, rtol=rtol * 10)
    np.testing.assert_allclose(h1.alphas, h2.alphas, rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(h1.lr, h2.lr)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("kw", [dict(residual=False, init="he"),
                                dict(norm="pre", init="he"),
                                dict(alpha="learned")],
                         ids=["plain", "prenorm", "learned-alpha"])
def test_training_together_equals_training_one_by_one(optimizer, kw):
    seeds, lrs = [0, 1, 2], [1e-3, 3e-3, 1e-2]
    alone = [make(s, **kw) for s in seeds]
    together = [make(s, **kw) for s in seeds]
    common = dict(steps=12, optimizer=optimizer, batch_size=32, warmup=3, seed=5)
    h_alone = separately(alone, lrs, **common)
    h_together = sweep.train_many(together, X, Y, lr=lrs, device="cpu", **common)
    for h1, h2 in zip(h_alone, h_together):
        assert_same_history(h1, h2)
        assert h2.diverged_at is None and h2.meta["trained_together"] == 3
    # and the models themselves were trained in place, to the same weights
    for m1, m2 in zip(alone, together):
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            torch.testing.assert_close(p1, p2, rtol=1e-4, atol=1e-5)


def test_models_that_differ_in_init_and_fixed_alpha_share_a_batch():
    models = [make(0, init="default"), make(0, init="he", alpha="1/sqrt(L)"),
              make(0, init="orthogonal", alpha=0.5)]
    assert len({sweep.architecture_key(m) for m in models}) == 1
    copies = [make(0, init="default"), make(0, init="he", alpha="1/sqrt(L)"),
              make(0, init="orthogonal", alpha=0.5)]
    h_alone = separately(copies, [1e-3] * 3, steps=8)
    for h1, h2 in zip(h_alone, sweep.train_many(models, X, Y, steps=8, device="cpu")):
        assert_same_history(h1, h2)


def test_architectures_that_change_the_code_path_get_different_keys():
    key = sweep.architecture_key(make(0))
    for kw in [dict(residual=False), dict(norm="pre"), dict(norm="post"), dict(depth=7),
               dict(width=9), dict(alpha="rezero"), dict(activation="tanh"),
               dict(shortcut=0.5)]:
        assert sweep.architecture_key(make(0, **kw)) != key, kw


def test_a_diverging_model_stops_without_disturbing_the_others():
    kw = dict(residual=False, init="he")
    lrs = [1e-2, 1e6]  # SGD at lr 1e6 blows up within a few steps
    alone = separately([make(0, **kw), make(0, **kw)], lrs, steps=15, optimizer="sgd")
    together = sweep.train_many([make(0, **kw), make(0, **kw)], X, Y, steps=15, lr=lrs,
                                optimizer="sgd", device="cpu")
    assert alone[1].diverged_at is not None
    assert together[1].diverged_at == alone[1].diverged_at
    assert np.isnan(together[1].loss[together[1].diverged_at:]).all()
    assert together[0].diverged_at is None
    assert_same_history(alone[0], together[0])


def test_train_together_groups_by_architecture_and_keeps_the_keys():
    kinds = {"plain": dict(residual=False, init="he"), "res": dict(init="he", alpha=0.2),
             "pre": dict(norm="pre")}
    models = {(k, s): make(s, **kw) for k, kw in kinds.items() for s in (0, 1)}
    copies = {(k, s): make(s, **kw) for k, kw in kinds.items() for s in (0, 1)}
    lrs = {key: (1e-3 if key[1] == 0 else 2e-3) for key in models}
    out = sweep.train_together(models, X, Y, steps=6, lr=lrs, device="cpu")
    assert list(out) == list(models)
    for key, h in out.items():
        assert h.meta["trained_together"] == 2
        assert_same_history(dl.train(copies[key], X, Y, steps=6, lr=lrs[key], device="cpu"), h)


SEQ_X, SEQ_Y = dl.sequence_task(128, kind="sort", length=6, vocab=10, seed=0)


def tiny_transformer(seed, **kw):
    return dl.TinyTransformer(10, 6, 3, d_model=16, n_heads=2, seed=seed, **kw)


@pytest.mark.parametrize("kw", [dict(norm="pre"), dict(norm="post"), dict(norm="deepnorm"),
                                dict(norm="pre", norm_layer="rms")],
                         ids=["pre", "post", "deepnorm", "rms"])
def test_transformers_train_together_as_one_by_one_with_their_own_warmup(kw):
    lrs, warmups = [1e-3, 3e-3, 1e-2], [0, 4, 9]
    alone = [tiny_transformer(s, **kw) for s in range(3)]
    together = [tiny_transformer(s, **kw) for s in range(3)]
    common = dict(steps=12, batch_size=32, seed=3)
    h_alone = [dl.train_sequence(m, SEQ_X, SEQ_Y, lr=lr, warmup=w, device="cpu", **common)
               for m, lr, w in zip(alone, lrs, warmups)]
    h_together = sweep.train_many(together, SEQ_X, SEQ_Y, lr=lrs, warmup=warmups,
                                  betas=(0.9, 0.98), device="cpu", **common)
    for h1, h2, w in zip(h_alone, h_together, warmups):
        np.testing.assert_allclose(h1.loss, h2.loss, rtol=1e-5)    # per token, as one by one
        np.testing.assert_allclose(h1.accuracy, h2.accuracy)
        np.testing.assert_allclose(h1.lr, h2.lr)                   # each its own warm-up
        assert h2.meta["warmup"] == w and h2.meta["betas"] == (0.9, 0.98)
        assert h2.grad_norms.shape == (12, 3)                      # every block's W_2
    for m1, m2 in zip(alone, together):
        for (name, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            if name.endswith("in_proj_bias"):
                # the key bias gets no gradient but rounding noise (softmax ignores it), which
                # Adam blows up to steps of size lr: only the query and value biases compare
                p1, p2 = p1[:16], p2[:16]
            torch.testing.assert_close(p1, p2, rtol=1e-4, atol=1e-5, msg=name)


def test_gpt2_and_xavier_transformers_share_a_batch_and_train_together_splits_the_rest():
    models = {"pre": tiny_transformer(0), "gpt2": tiny_transformer(0, init="gpt2"),
              "post": tiny_transformer(0, norm="post")}
    keys = {name: sweep.architecture_key(m) for name, m in models.items()}
    assert keys["pre"] == keys["gpt2"] != keys["post"]
    out = sweep.train_together(models, SEQ_X, SEQ_Y, steps=5, batch_size=16, device="cpu",
                               lr={"pre": 1e-3, "gpt2": 2e-3, "post": 3e-3},
                               warmup={"pre": 0, "gpt2": 2, "post": 5})
    assert list(out) == ["pre", "gpt2", "post"]
    assert [out[k].meta["trained_together"] for k in out] == [2, 2, 1]
    np.testing.assert_allclose(out["gpt2"].lr, 2e-3 * np.minimum(1, np.arange(1, 6) / 2))
    np.testing.assert_allclose(out["post"].lr, 3e-3 * np.arange(1, 6) / 5)


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(ValueError, match="train_many needs models of one architecture .*use "
                                         "train_together"):
        sweep.train_many([make(0), make(0, residual=False)], X, Y, steps=2)
    with pytest.raises(ValueError, match=r"lr must be a number > 0 or a list of 2 numbers > 0 "
                                         r"\(one per model\), got \[0.001\]"):
        sweep.train_many([make(0), make(1)], X, Y, steps=2, lr=[1e-3])
    with pytest.raises(ValueError, match="lr must be > 0, got -1.0"):
        sweep.train_many([make(0)], X, Y, steps=2, lr=[-1.0])
    with pytest.raises(ValueError, match="at least one model"):
        sweep.train_many([], X, Y)
    with pytest.raises(ValueError, match=r"batch_size must be <= the number of examples \(96\), "
                                         r"got 1000"):
        sweep.train_many([make(0)], X, Y, batch_size=1000)
    with pytest.raises(ValueError, match="optimizer must be one of 'adam', 'sgd'; got 'rmsprop'"):
        sweep.train_many([make(0)], X, Y, optimizer="rmsprop")
    with pytest.raises(ValueError, match="a dict of learning rates needs exactly the keys of models"):
        sweep.train_together({"a": make(0)}, X, Y, lr={"b": 1e-3})
    with pytest.raises(ValueError, match="non-empty dict"):
        sweep.train_together([make(0)], X, Y)
    with pytest.raises(ValueError, match=r"warmup must be an integer >= 0 or a list of 2 of "
                                         r"them \(one per model\), got \[3\]"):
        sweep.train_many([make(0), make(1)], X, Y, steps=2, warmup=[3])
    with pytest.raises(ValueError, match="warmup must be an integer >= 0, got -1"):
        sweep.train_many([make(0), make(1)], X, Y, steps=2, warmup=[0, -1])
    with pytest.raises(ValueError, match="a dict of warm-up lengths needs exactly the keys"):
        sweep.train_together({"a": make(0)}, X, Y, warmup={"b": 3})
    with pytest.raises(ValueError, match=r"betas must be two numbers in \[0, 1\), got \(0.9, 1.0\)"):
        sweep.train_many([make(0)], X, Y, steps=2, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="layer_drop > 0 .* one by one with "
                                         "depthlab.train_sequence"):
        sweep.train_many([tiny_transformer(0, layer_drop=0.1)], SEQ_X, SEQ_Y, steps=2)


def test_markdown_table_has_one_line_per_row_and_escapes_bars():
    table = dl.markdown_table(["a", "b"], [[1, "x|y"], [2.5, "z"]])
    lines = table.data.splitlines()
    assert lines == ["| a | b |", "|---|---|", "| 1 | x\\|y |", "| 2.5 | z |"]
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        dl.markdown_table(["a", "b"], [[1]])


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_weight_decay_together_equals_one_by_one(optimizer):
    lrs = [3e-3, 1e-2]
    common = dict(steps=10, optimizer=optimizer, batch_size=32, seed=1, weight_decay=0.1)
    alone = [make(0, alpha="learned"), make(1, alpha="learned")]
    together = [make(0, alpha="learned"), make(1, alpha="learned")]
    h_alone = separately(alone, lrs, **common)
    for h1, h2 in zip(h_alone, sweep.train_many(together, X, Y, lr=lrs, device="cpu", **common)):
        assert_same_history(h1, h2)
        assert h2.meta["weight_decay"] == 0.1
    for m1, m2 in zip(alone, together):
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            torch.testing.assert_close(p1, p2, rtol=1e-4, atol=1e-5)
    # and the decay did something: the same run without it ends elsewhere
    undecayed = separately([make(0, alpha="learned")], lrs[:1],
                           **{**common, "weight_decay": 0.0})[0]
    assert np.abs(undecayed.loss - h_alone[0].loss).max() > 1e-4


def test_float64_models_with_a_tiny_adam_eps_train_together_as_one_by_one():
    X64 = X.double()
    common = dict(steps=10, batch_size=32, seed=2, adam_eps=1e-30, lr=1e-2)
    alone = [make(s, residual=False).double() for s in (0, 1)]
    together = [make(s, residual=False).double() for s in (0, 1)]
    h_alone = [dl.train(m, X64, Y, device="cpu", **common) for m in alone]
    h_together = sweep.train_many(together, X64, Y, device="cpu", **common)
    for h1, h2 in zip(h_alone, h_together):
        np.testing.assert_allclose(h1.loss, h2.loss, rtol=1e-9)
        np.testing.assert_allclose(h1.grad_norms, h2.grad_norms, rtol=1e-8)
        assert h2.meta["adam_eps"] == 1e-30
    for m in together:
        assert all(p.dtype == torch.float64 for p in m.parameters())


class Pyramid(torch.nn.Module):
    """Not a DeepMLP: blocks of different widths, no alpha, no config."""

    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        widths = [2, 8, 12, 6]
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.head = torch.nn.Linear(6, 3)

    def forward(self, u):
        for block in self.blocks:
            u = torch.tanh(block(u))
        return self.head(u)

    def block_weights(self):
        return [b.weight for b in self.blocks]


def test_any_model_with_blocks_and_block_weights_trains_together_as_one_by_one():
    Y3 = torch.arange(len(Y)) % 3
    alone = [dl.train(Pyramid(s), X, Y3, steps=6, batch_size=32, device="cpu") for s in (0, 1)]
    together = sweep.train_many([Pyramid(0), Pyramid(1)], X, Y3, steps=6, batch_size=32,
                                device="cpu")
    for h1, h2 in zip(alone, together):
        assert h2.grad_norms.shape == (6, 3)
        assert_same_history(h1, h2)
        assert np.all(h2.alphas == 0)  # no branch scales: zeros, as train records them


def test_a_diverging_model_with_weight_decay_keeps_its_last_finite_weights():
    kw = dict(residual=False, init="he")
    models = [make(0, **kw), make(0, **kw)]
    hs = sweep.train_many(models, X, Y, steps=15, lr=[1e-2, 1e6], optimizer="sgd",
                          weight_decay=0.1, device="cpu")
    assert hs[1].diverged_at is not None and hs[0].diverged_at is None
    assert all(torch.isfinite(p).all() for p in models[0].parameters())
    alone = dl.train(make(0, **kw), X, Y, steps=15, lr=1e-2, optimizer="sgd", weight_decay=0.1,
                     device="cpu")
    assert_same_history(alone, hs[0])


def test_models_with_batchnorm_cannot_share_a_batch():
    class WithBatchNorm(Pyramid):
        def __init__(self, seed):
            super().__init__(seed)
            self.bn = torch.nn.BatchNorm1d(6)

    with pytest.raises(ValueError, match="BatchNorm1d updates its running statistics while "
                                         "training.*train these models one by one"):
        sweep.train_many([WithBatchNorm(0)], X, Y, steps=1, device="cpu")


def test_a_loss_scale_trains_together_as_one_by_one():
    common = dict(steps=8, batch_size=32, seed=2, adam_eps=1e-4, lr=1e-2, loss_scale=2.0**12)
    alone = [make(s) for s in (0, 1)]
    together = [make(s) for s in (0, 1)]
    h_alone = [dl.train(m, X, Y, device="cpu", **common) for m in alone]
    for h1, h2 in zip(h_alone, sweep.train_many(together, X, Y, device="cpu", **common)):
        assert_same_history(h1, h2)
        assert h2.meta["loss_scale"] == 2.0**12
