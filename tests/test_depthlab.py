"""Unit tests of depthlab: each asserts a property that a broken implementation would violate."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import depthlab as dl


def batch(n=64, seed=0):
    return dl.two_spirals(n, seed=seed)


# ---------------------------------------------------------------- models


def test_rezero_block_is_exactly_the_identity_at_init():
    torch.manual_seed(0)
    block = dl.Block(16, alpha="rezero", init="he")
    x = torch.randn(8, 16)
    assert torch.equal(block(x), x)


def test_rezero_network_passes_the_embedding_through_unchanged():
    torch.manual_seed(0)
    model = dl.DeepMLP(20, 16, alpha="rezero")
    u, _ = batch(8)
    xs = model.stream(u)
    assert all(torch.equal(x, xs[0]) for x in xs)


def test_plain_block_with_zeroed_weights_destroys_its_input():
    block = dl.Block(16, residual=False)
    nn.init.zeros_(block.linear.weight)
    nn.init.zeros_(block.linear.bias)
    x = torch.randn(4, 16)
    assert torch.count_nonzero(block(x)) == 0


def test_residual_block_computes_shortcut_plus_scaled_branch():
    torch.manual_seed(0)
    block = dl.Block(8, alpha=0.5, shortcut=0.7)
    x = torch.randn(3, 8)
    expected = 0.7 * x + 0.5 * block.linear(torch.relu(x))
    torch.testing.assert_close(block(x), expected)


@pytest.mark.parametrize("residual, norm", [(r, n) for r in (True, False)
                                             for n in ("none", "pre", "post")])
def test_every_row_of_the_block_table_computes_its_formula(residual, norm):
    block = dl.Block(8, residual=residual, norm=norm, alpha=0.5 if residual else 1.0, seed=0)
    with torch.no_grad():  # LayerNorm's gamma and beta away from 1 and 0, so that they count
        if block.norm is not None:
            block.norm.weight.uniform_(0.5, 1.5)
            block.norm.bias.uniform_(-0.5, 0.5)
    x = 3 * torch.randn(5, 8, generator=torch.Generator().manual_seed(1)) + 1

    def LN(v):
        mu, var = v.mean(-1, keepdim=True), v.var(-1, unbiased=False, keepdim=True)
        return block.norm.weight * (v - mu) / torch.sqrt(var + 1e-5) + block.norm.bias

    def F(v):
        return v @ block.linear.weight.T + block.linear.bias

    branch_input = LN(x) if norm == "pre" else x
    y = F(torch.relu(branch_input))
    if residual:
        y = x + 0.5 * y
    expected = LN(y) if norm == "post" else y
    torch.testing.assert_close(block(x), expected, rtol=1e-5, atol=1e-5)


def test_tanh_blocks_use_tanh_in_the_branch():
    block = dl.Block(8, activation="tanh", alpha=0.5, seed=0)
    x = 2 * torch.randn(4, 8)
    torch.testing.assert_close(block(x), x + 0.5 * block.linear(torch.tanh(x)))
    model = dl.DeepMLP(3, 8, activation="tanh", seed=0)
    assert all(isinstance(b.phi, nn.Tanh) for b in model.blocks)


def test_one_over_sqrt_depth_and_learned_alpha_start_at_one_over_sqrt_depth():
    fixed = dl.DeepMLP(16, 8, alpha="1/sqrt(L)")
    learned = dl.DeepMLP(16, 8, alpha="learned")
    assert torch.allclose(fixed.alphas(), torch.full((16,), 0.25))
    assert torch.allclose(learned.alphas(), torch.full((16,), 0.25))
    assert not any(b.alpha.requires_grad for b in fixed.blocks)
    assert all(b.alpha.requires_grad for b in learned.blocks)


def test_he_init_has_the_he_variance():
    torch.manual_seed(0)
    block = dl.Block(512, init="he")
    assert block.linear.weight.var().item() == pytest.approx(2 / 512, rel=0.02)
    assert torch.count_nonzero(block.linear.bias) == 0


def test_default_init_leaves_the_layer_as_pytorch_built_it():
    layer = nn.Linear(16, 16)
    weight, bias = layer.weight.detach().clone(), layer.bias.detach().clone()
    dl.init_linear(layer, "default")
    assert torch.equal(layer.weight, weight) and torch.equal(layer.bias, bias)


def test_orthogonal_init_is_sqrt2_times_an_orthogonal_matrix():
    block = dl.Block(64, init="orthogonal", seed=0)
    W = block.linear.weight.detach().double()
    torch.testing.assert_close(W.T @ W, 2 * torch.eye(64, dtype=torch.float64), atol=1e-5,
                               rtol=0)
    assert torch.count_nonzero(block.linear.bias) == 0
    # norm-preserving up to the ReLU gain: every direction is scaled by exactly sqrt(2)
    np.testing.assert_allclose(torch.linalg.svdvals(W).numpy(), math.sqrt(2), rtol=1e-5)


def test_projection_shortcut_changes_width():
    torch.manual_seed(0)
    block = dl.Block(8, 4, projection=True)
    x = torch.randn(2, 8)
    torch.testing.assert_close(block(x), block.proj(x) + block.linear(torch.relu(x)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(depth=0), "depth must be an integer >= 1"),
        (dict(depth=2.5), "depth must be an integer >= 1"),
        (dict(depth=4, norm="middle"), "norm must be one of 'none', 'pre', 'post'"),
        (dict(depth=4, alpha=-1.0), "alpha must be a finite number >= 0"),
        (dict(depth=4, alpha=float("nan")), "alpha must be a finite number >= 0"),
        (dict(depth=4, alpha=float("inf")), "alpha must be a finite number >= 0"),
        (dict(depth=4, alpha="tiny"), "'1/sqrt(L)', 'learned', 'rezero'"),
        (dict(depth=4, init="xavier"), "init must be one of 'default', 'he', 'orthogonal'"),
        (dict(depth=4, width=0), "width must be an integer >= 1"),
        (dict(depth=4, shortcut=0.0), "shortcut must be > 0"),
        (dict(depth=4, residual=False, alpha="rezero"), "plain block"),
    ],
)
def test_bad_model_arguments_say_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        dl.DeepMLP(**kwargs)


def test_mismatched_widths_need_a_projection():
    with pytest.raises(ValueError, match="matching widths, got 8 -> 4; pass projection=True"):
        dl.Block(8, 4)


@pytest.mark.parametrize("flag", ["no", 1, None])
def test_projection_and_residual_must_be_true_or_false(flag):
    with pytest.raises(ValueError, match=f"projection must be True or False, got {flag!r}"):
        dl.Block(8, projection=flag)
    with pytest.raises(ValueError, match=f"residual must be True or False, got {flag!r}"):
        dl.Block(8, residual=flag)
    assert dl.Block(8, projection=False).proj is None


# ---------------------------------------------------------------- probes


def test_probe_gradients_equal_autograd_directly():
    torch.manual_seed(0)
    model = dl.DeepMLP(6, 16, residual=False, init="he")
    u, y = batch()
    with dl.Probe(model) as probe:
        nn.functional.cross_entropy(model(u), y).backward()
    assert len(model.blocks[0]._forward_hooks) == 0  # hooks removed on exit

    # the same quantities, computed without hooks: autograd straight from the stream
    xs = model.stream(u)
    logits = model.head(model.final_norm(xs[-1]))
    grads = torch.autograd.grad(nn.functional.cross_entropy(logits, y), xs[1:])
    np.testing.assert_allclose(probe.stream_grad_norms(),
                               [g.double().norm().item() for g in grads], rtol=1e-5)
    np.testing.assert_allclose(dl.weight_grad_norms(model),
                               [w.grad.double().norm().item() for w in model.block_weights()])
    np.testing.assert_allclose(probe.activation_stats()["rms"],
                               [x.pow(2).mean().sqrt().item() for x in xs[1:]], rtol=1e-5)


def test_probe_reports_tiny_gradients_instead_of_zero():
    # a default-init plain stack of 50 layers shrinks the gradient ~0.4x per layer; the first
    # layers' gradients (~1e-20) must not underflow to 0 in the norm
    torch.manual_seed(0)
    model = dl.DeepMLP(50, 64, residual=False)
    u, y = batch(128)
    with dl.Probe(model) as probe:
        nn.functional.cross_entropy(model(u), y).backward()
    g = probe.stream_grad_norms()
    assert np.all(g > 0)
    assert g[0] < 1e-12 * g[-1]


def test_probe_without_backward_is_a_clear_error():
    model = dl.DeepMLP(2, 4)
    with dl.Probe(model) as probe:
        model(torch.zeros(1, 2))
    with pytest.raises(ValueError, match="call loss.backward"):
        probe.stream_grad_norms()


def test_each_with_block_records_a_pass_of_its_own():
    model = dl.DeepMLP(4, 8, seed=0)
    u, y = batch(16)
    probe = dl.Probe(model)
    with probe:
        model(u)
    first = probe.activation_stats()["rms"]
    with probe:  # hooks again, forgets the first pass
        nn.functional.cross_entropy(model(2 * u), y).backward()
    with dl.Probe(model) as fresh:
        nn.functional.cross_entropy(model(2 * u), y).backward()
    np.testing.assert_array_equal(probe.activation_stats()["rms"],
                                  fresh.activation_stats()["rms"])
    np.testing.assert_array_equal(probe.stream_grad_norms(), fresh.stream_grad_norms())
    assert not np.allclose(first, fresh.activation_stats()["rms"])
    assert all(len(b._forward_hooks) == 0 for b in model.blocks)


def test_two_passes_inside_one_probe_are_a_clear_error():
    model = dl.DeepMLP(3, 8, seed=0)
    with dl.Probe(model) as probe:
        model(torch.zeros(2, 2))
        model(torch.ones(2, 2))
    with pytest.raises(ValueError, match="recorded 6 block outputs from 3 blocks: run exactly one "
                                         "forward pass"):
        probe.activation_stats()


def test_jacobian_singular_values_of_a_linear_map():
    A = torch.diag(torch.tensor([3.0, 2.0, 0.5]))
    sv = dl.jacobian_singular_values(lambda x: A @ x, torch.ones(3))
    np.testing.assert_allclose(sv, [3.0, 2.0, 0.5], rtol=1e-6)


def test_rezero_stack_has_identity_jacobian_and_plain_stack_does_not():
    torch.manual_seed(0)
    x0 = torch.randn(8)

    def through_blocks(model):
        def f(x):
            for block in model.blocks:
                x = block(x)
            return x
        return f

    rezero = dl.jacobian_singular_values(through_blocks(dl.DeepMLP(10, 8, alpha="rezero")), x0)
    np.testing.assert_array_equal(rezero, np.ones(8))
    plain = dl.jacobian_singular_values(through_blocks(dl.DeepMLP(10, 8, residual=False)), x0)
    assert plain.max() < 0.5


def test_jacobian_rejects_a_batch():
    with pytest.raises(ValueError, match="one input vector"):
        dl.jacobian(lambda x: x, torch.ones(2, 3))


# ---------------------------------------------------------------- training and data


def test_training_lowers_the_loss_and_records_every_layer():
    torch.manual_seed(0)
    X, y = dl.two_spirals(256, turns=1.0, seed=1)
    model = dl.DeepMLP(4, 32, init="he", norm="pre")
    h = dl.train(model, X, y, steps=150, lr=1e-2, device="cpu")
    assert h.loss.shape == (150,) and h.grad_norms.shape == (150, 4)
    assert h.final_loss() < 0.5 * h.loss[0]
    assert np.all(np.isfinite(h.grad_norms)) and np.all(h.update_ratio > 0)
    assert h.diverged_at is None


def test_training_is_deterministic():
    X, y = dl.two_spirals(128, seed=2)
    runs = []
    for _ in range(2):
        torch.manual_seed(3)
        model = dl.DeepMLP(3, 16)
        runs.append(dl.train(model, X, y, steps=20, batch_size=32, seed=5, device="cpu").loss)
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("optimizer, weight_decay", [("adam", 0.0), ("adam", 1e-3),
                                                      ("sgd", 1e-3)])
def test_the_foreach_optimizers_step_exactly_as_the_per_tensor_loop(monkeypatch, optimizer,
                                                                     weight_decay):
    # depthlab asks torch.optim for foreach=True (faster); the stored outputs were made with the
    # per-tensor loop, the CPU's default: the two must agree bit for bit
    def run(foreach):
        if foreach is False:
            for name in ("Adam", "SGD"):
                made = getattr(torch.optim, name)
                monkeypatch.setattr(torch.optim, name,
                                    lambda *a, made=made, **k: made(*a, **{**k, "foreach": False}))
        X, y = dl.two_spirals(128, seed=2)
        model = dl.DeepMLP(4, 16, init="he", norm="pre", alpha="rezero", seed=3)
        h = dl.train(model, X, y, steps=25, lr=1e-2, optimizer=optimizer, batch_size=32,
                     warmup=5, weight_decay=weight_decay, seed=5, device="cpu")
        tokens, targets = dl.sequence_task(64, kind="sort", length=4, vocab=6, seed=0)
        net = dl.TinyTransformer(6, 4, depth=2, d_model=8, n_heads=2, seed=1)
        s = dl.train_sequence(net, tokens, targets, steps=10, lr=3e-3, warmup=3, batch_size=16,
                              device="cpu")
        monkeypatch.undo()
        return ([h.loss, h.update_ratio, s.loss],
                [p.detach().clone() for p in [*model.parameters(), *net.parameters()]])

    (records, weights), (records_loop, weights_loop) = run(True), run(False)
    for a, b in zip(records, records_loop):
        np.testing.assert_array_equal(a, b)
    assert all(torch.equal(a, b) for a, b in zip(weights, weights_loop))


def test_rezero_alphas_move_during_training():
    torch.manual_seed(0)
    X, y = dl.two_spirals(128, seed=0)
    h = dl.train(dl.DeepMLP(4, 16, alpha="rezero"), X, y, steps=30, lr=1e-2, device="cpu")
    assert np.all(h.alphas[0] != 0) and np.all(np.abs(h.alphas[-1]) > np.abs(h.alphas[0]))


def test_divergence_is_reported_not_hidden():
    torch.manual_seed(0)
    X, y = dl.two_spirals(64, seed=0)
    model = dl.DeepMLP(30, 32, init="he", alpha=1.0)  # unnormalized, unscaled: explodes
    h = dl.train(model, X, y, steps=50, lr=10.0, optimizer="sgd", device="cpu")
    assert h.diverged_at is not None and math.isinf(h.final_loss())
    assert np.isnan(h.loss[-1])


def test_warmup_ramps_the_learning_rate():
    X, y = dl.two_spirals(32, seed=0)
    h = dl.train(dl.DeepMLP(2, 8), X, y, steps=10, lr=1.0, warmup=4, record=False, device="cpu")
    np.testing.assert_allclose(h.lr[:5], [0.25, 0.5, 0.75, 1.0, 1.0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(steps=0), "steps must be an integer >= 1"),
        (dict(lr=-1.0), "lr must be > 0"),
        (dict(lr=float("nan")), "lr must be a finite number"),
        (dict(optimizer="rmsprop"), "optimizer must be one of 'adam', 'sgd'; got 'rmsprop'"),
        (dict(batch_size=10_000), r"batch_size must be <= the number of examples \(32\)"),
        (dict(batch_size=0), "batch_size must be an integer >= 1, got 0"),
        (dict(warmup=-1), "warmup must be an integer >= 0, got -1"),
        (dict(weight_decay=-0.1), "weight_decay must be >= 0, got -0.1"),
        (dict(adam_eps=float("nan")), "adam_eps must be a finite number, got nan"),
        (dict(adam_eps=-1e-8), "adam_eps must be >= 0"),
        (dict(loss_scale=0.0), "loss_scale must be > 0, got 0.0"),
        (dict(loss_scale=float("inf")), "loss_scale must be a finite number"),
    ],
)
def test_bad_training_arguments_say_what_is_allowed(kwargs, message):
    X, y = dl.two_spirals(32)
    with pytest.raises(ValueError, match=message):
        dl.train(dl.DeepMLP(2, 4), X, y, **kwargs)


def test_record_false_trains_the_same_network():
    X, y = dl.two_spirals(64, seed=0)
    runs = [dl.train(dl.DeepMLP(3, 8, seed=0), X, y, steps=15, batch_size=16, record=r,
                     device="cpu") for r in (True, False)]
    np.testing.assert_array_equal(runs[0].loss, runs[1].loss)
    np.testing.assert_array_equal(runs[0].accuracy, runs[1].accuracy)
    assert np.isnan(runs[1].grad_norms).all() and runs[1].grad_norms.shape == (15, 3)
    with pytest.raises(ValueError, match="record must be True or False, got 'no'"):
        dl.train(dl.DeepMLP(2, 4), X, y, record="no")


@pytest.mark.parametrize("last, message", [(0, "last must be an integer >= 1, got 0"),
                                           (-3, "last must be an integer >= 1, got -3"),
                                           (2.5, "last must be an integer >= 1"),
                                           (11, "last must be <= the 10 steps recorded, got 11")])
def test_final_loss_needs_a_number_of_steps_that_were_recorded(last, message):
    X, y = dl.two_spirals(32, seed=0)
    h = dl.train(dl.DeepMLP(2, 4, seed=0), X, y, steps=10, device="cpu")
    assert h.final_loss(3) == pytest.approx(h.loss[-3:].mean())
    with pytest.raises(ValueError, match=message):
        h.final_loss(last)


def tiny_classifier():
    """A 1-block network whose logits are easy to compute by hand: (u0 + u1, -(u0 + u1))."""
    model = dl.DeepMLP(1, 2, in_dim=2, out_dim=2, alpha="rezero", seed=0)
    with torch.no_grad():
        model.embed.weight.copy_(torch.eye(2))
        model.embed.bias.zero_()
        model.head.weight.copy_(torch.tensor([[1.0, 1.0], [-1.0, -1.0]]))
        model.head.bias.zero_()
    return model


def test_accuracy_and_evaluate_loss_values():
    model = tiny_classifier()
    X = torch.tensor([[1.0, 0.0], [0.5, 0.5], [-1.0, -1.0], [-0.2, 0.0]])
    y = torch.tensor([0, 1, 1, 0])
    # logit margins s = u0 + u1: 1, 1, -2, -0.2 -> predicted classes 0, 0, 1, 1
    assert dl.accuracy(model, X, y) == 0.5
    s = X.sum(1)
    # cross-entropy of logits (s, -s): log(1 + exp(-2s)) for class 0, log(1 + exp(2s)) for 1
    sign = torch.where(y == 0, -2.0, 2.0)
    expected = torch.log1p(torch.exp(sign * s)).mean().item()
    assert dl.evaluate_loss(model, X, y) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("measure", [dl.accuracy, dl.evaluate_loss])
def test_evaluation_leaves_the_model_in_the_mode_it_had(measure):
    model = tiny_classifier()
    X, y = torch.zeros(3, 2), torch.zeros(3, dtype=torch.long)
    seen = []
    model.register_forward_pre_hook(lambda m, args: seen.append(m.training))
    for mode in (False, True):
        model.train(mode)
        measure(model, X, y)
        assert model.training is mode
    assert seen == [False, False]  # and it evaluated in eval mode both times


def test_training_hands_the_model_back_on_its_device_and_in_its_mode():
    class Spy(dl.DeepMLP):
        def to(self, *args, **kwargs):
            self.moves.append(torch.device(args[0]) if args else kwargs.get("device"))
            return super().to(*args, **kwargs)

    X, y = dl.two_spirals(32, seed=0)
    for fit in (dl.train, lambda m, *a, **k: dl.train_many([m], *a, **k)[0]):
        model = Spy(2, 4, seed=0)
        model.moves = []
        model.eval()
        fit(model, X, y, steps=2, device="cpu")
        assert model.moves[0] == torch.device("cpu")      # moved to where it trains
        assert model.moves[-1] == torch.device("cpu")     # and back to where it was
        assert model.training is False
        assert next(model.parameters()).device.type == "cpu"


def test_a_model_without_blocks_is_a_clear_error():
    X, y = dl.two_spirals(8, seed=0)
    for fit in (dl.train, lambda m, *a, **k: dl.train_many([m], *a, **k)):
        with pytest.raises(ValueError, match=r"the model must be an nn.Module with `blocks` and "
                                             r"`block_weights\(\)`, such as dl.DeepMLP; got Linear"):
            fit(nn.Linear(2, 2), X, y, steps=1, device="cpu")


def test_data_of_another_dtype_than_the_model_is_a_clear_error():
    X, y = dl.two_spirals(32, seed=0)
    with pytest.raises(ValueError, match=r"X is torch.float64 but the model's parameters are "
                                         r"torch.float32: convert one"):
        dl.train(dl.DeepMLP(2, 4), X.double(), y, steps=1, device="cpu")
    with pytest.raises(ValueError, match="X is torch.float32 but the model's parameters are "
                                         "torch.float64"):
        dl.train_many([dl.DeepMLP(2, 4).double()], X, y, steps=1, device="cpu")


def test_spirals_are_seeded_balanced_and_bounded():
    X1, y1 = dl.spirals(300, classes=3, seed=4)
    X2, y2 = dl.spirals(300, classes=3, seed=4)
    assert torch.equal(X1, X2) and torch.equal(y1, y2)
    assert X1.shape == (300, 2) and X1.dtype == torch.float32
    assert torch.bincount(y1).tolist() == [100, 100, 100]
    assert X1.abs().max() < 1.5
    with pytest.raises(ValueError, match="classes must be an integer >= 2"):
        dl.spirals(10, classes=1)


def test_split_partitions_the_data():
    X = torch.arange(200.0).reshape(100, 2)  # every row distinct, so rows can be traced
    y = torch.arange(100) % 3
    Xtr, ytr, Xte, yte = dl.split(X, y, test_fraction=0.2, seed=4)
    assert len(Xtr) == 80 and len(Xte) == 20
    rows = {int(r[0]) // 2 for r in torch.cat([Xtr, Xte])}
    assert rows == set(range(100))  # every example once: disjoint and complete
    for Xs, ys in [(Xtr, ytr), (Xte, yte)]:  # labels travel with their inputs
        assert torch.equal(ys, (Xs[:, 0] // 2).long() % 3)
    assert sorted(int(r[0]) // 2 for r in Xte) != list(range(20))  # shuffled
    again = dl.split(X, y, test_fraction=0.2, seed=4)
    assert torch.equal(again[2], Xte)


@pytest.mark.parametrize("n, fraction, message", [
    (2, 0.75, "leaves no training example"),
    (10, 0.99, "leaves no training example"),
    (1, 0.5, "at least 2 examples"),
    (10, 1.0, "strictly between 0 and 1"),
])
def test_split_never_returns_an_empty_set(n, fraction, message):
    X, y = torch.zeros(n, 2), torch.zeros(n, dtype=torch.long)
    with pytest.raises(ValueError, match=message):
        dl.split(X, y, test_fraction=fraction)
    if n == 10 and fraction < 1:
        assert len(dl.split(X, y, test_fraction=0.9)[0]) == 1


@pytest.mark.parametrize("call", [
    lambda s: dl.spirals(10, seed=s),
    lambda s: dl.split(torch.zeros(4, 2), torch.zeros(4), seed=s),
    lambda s: dl.sequence_task(4, seed=s),
    lambda s: dl.set_seed(s),
    lambda s: dl.DeepMLP(2, 4, seed=s),
    lambda s: dl.train(dl.DeepMLP(2, 4), *dl.two_spirals(8), steps=1, seed=s, device="cpu"),
    lambda s: dl.train_many([dl.DeepMLP(2, 4)], *dl.two_spirals(8), steps=1, seed=s,
                            device="cpu"),
    lambda s: dl.train_sequence(dl.TinyTransformer(4, 4, 1, d_model=8, n_heads=2),
                                *dl.sequence_task(8, length=4, vocab=4), steps=1, batch_size=4,
                                seed=s, device="cpu"),
])
@pytest.mark.parametrize("seed", [1.7, "a", -1, True])
def test_every_seed_must_be_a_non_negative_integer(call, seed):
    with pytest.raises(ValueError, match=f"seed must be an integer >= 0 such as 0, 1 or 2, got "
                                         f"{seed!r}"):
        call(seed)


# ---------------------------------------------------------------- twins


# The twin panels (depthlab.book.twin) are tested in tests/test_twin.py.


def test_every_course_colour_is_a_colour_and_unknown_names_list_the_known_ones():
    from matplotlib.colors import is_color_like

    assert all(is_color_like(dl.color(name)) for name in dl.COLORS)
    # the two things every figure compares never share a colour
    assert dl.color("plain") != dl.color("residual") and dl.color("pre") != dl.color("post")
    with pytest.raises(ValueError, match="unknown colour name 'rainbow'; known: plain, residual"):
        dl.color("rainbow")


# ---------------------------------------------------------------- the public API


def test_every_exported_name_exists_and_is_documented():
    for name in dl.__all__:
        obj = getattr(dl, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), f"dl.{name} has no docstring"


def test_a_public_name_means_the_same_thing_in_every_module():
    import importlib
    import pkgutil

    seen = {}
    for info in pkgutil.walk_packages(dl.__path__, "depthlab."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.isupper() and not name.startswith("_"):
                if name in seen:
                    assert seen[name][1] is value or seen[name][1] == value, (
                        f"{name} means one thing in {seen[name][0]} and another in {info.name}")
                seen[name] = (info.name, value)
    assert dl.NORMS == ("none", "pre", "post") and dl.INITS == ("default", "he", "orthogonal")


def test_the_package_holds_no_maintainer_tooling_or_training_log():
    import importlib.util

    for gone in ("depthlab.bench", "depthlab.execute", "depthlab.train"):
        assert importlib.util.find_spec(gone) is None, gone
    from depthlab import training
    from depthlab.fast import sweep

    assert not hasattr(training, "TRAINING_LOG") and not hasattr(sweep, "first_steps")


def test_loss_scale_acts_on_adam_only_through_eps_and_on_sgd_as_a_learning_rate():
    # float64, where nothing underflows: Adam on S * loss is Adam with eps / S, and SGD on S * loss
    # is SGD with S times the learning rate; the recorded loss and gradients are the unscaled ones
    X, y = dl.two_spirals(64, seed=0)
    X = X.double()
    S = 2.0**20

    def run(**kwargs):
        return dl.train(dl.DeepMLP(3, 8, seed=1).double(), X, y, steps=12, device="cpu",
                        **kwargs)

    plain, scaled = run(adam_eps=1e-3), run(adam_eps=1e-3, loss_scale=S)
    np.testing.assert_allclose(scaled.loss, run(adam_eps=1e-3 / S).loss, rtol=1e-10)
    # with this large an eps the scale is not a no-op
    assert np.abs(scaled.loss - plain.loss).max() > 1e-4
    np.testing.assert_allclose(scaled.grad_norms[0], plain.grad_norms[0], rtol=1e-10)
    assert scaled.meta["loss_scale"] == S
    sgd = run(optimizer="sgd", lr=1e-2 / 64, loss_scale=64.0)
    np.testing.assert_allclose(sgd.loss, run(optimizer="sgd", lr=1e-2).loss, rtol=1e-10)
    # without per-layer records the same training, and the unscaled loss, are recorded
    quiet = run(adam_eps=1e-3, loss_scale=S, record=False)
    np.testing.assert_allclose(quiet.loss, scaled.loss, rtol=1e-10)


def test_a_large_loss_scale_lets_float32_adam_move_weights_whose_gradient_squares_underflow():
    # a 30-layer plain net at default init: layer 1's gradient entries are ~1e-15 or smaller,
    # their squares below float32's range, and Adam's step rounds away; 2^40 brings them back
    X, y = dl.two_spirals(64, seed=0)

    def layer1_ratio(scale):
        model = dl.DeepMLP(30, 16, residual=False, init="default", seed=0)
        h = dl.train(model, X, y, steps=5, device="cpu", loss_scale=scale)
        return h.update_ratio[1:, 0].max(), h.grad_norms[0, 0]

    (r1, g1), (r2, g2) = layer1_ratio(1.0), layer1_ratio(2.0**40)
    assert g1 < 1e-12 and np.isclose(g1, g2, rtol=1e-4)
    assert r1 < 1e-6 < r2


def test_block_contributions_and_deletions_measure_what_the_blocks_add():
    X, y = dl.two_spirals(64, seed=0)
    model = dl.DeepMLP(4, 8, alpha=0.5, init="he", seed=0)
    r = dl.block_contributions(model, X)
    with torch.no_grad():  # r_l written out: ||alpha F_l(x_{l-1})|| / ||x_{l-1}||
        x = model.embed(X)
        for l, block in enumerate(model.blocks):
            update = block(x) - x
            assert r[l] == pytest.approx(float(update.norm() / x.norm()), rel=1e-5)
            x = x + update
    # deleting nothing is the network itself; deleting every block leaves the embedding
    assert dl.accuracy_without(model, set(), X, y) == dl.accuracy(model, X, y)
    with torch.no_grad():
        bare = (model.head(model.embed(X)).argmax(1) == y).float().mean().item()
    assert dl.accuracy_without(model, set(range(4)), X, y) == bare
    for plain in [dl.DeepMLP(4, 8, residual=False, seed=0), dl.DeepMLP(4, 8, norm="post", seed=0)]:
        with pytest.raises(ValueError, match="must be a residual dl.DeepMLP whose blocks add"):
            dl.block_contributions(plain, X)


def test_forward_through_runs_any_list_of_blocks_in_any_order():
    X, _ = dl.two_spirals(32, seed=0)
    model = dl.DeepMLP(3, 8, norm="pre", seed=0)
    with torch.no_grad():
        assert torch.equal(dl.forward_through(model, X, range(3)), model(X))
        b = model.blocks
        by_hand = model.head(model.final_norm(b[0](b[2](model.embed(X)))))
        assert torch.equal(dl.forward_through(model, X, [2, 0]), by_hand)
    with pytest.raises(ValueError, match=r"order must list block indices 0..2, got \[3\]"):
        dl.forward_through(model, X, [3])
    with pytest.raises(ValueError, match="model must be a dl.DeepMLP, got Linear"):
        dl.forward_through(nn.Linear(2, 2), X, [0])
    # Chapter 6 counts blocks 1..L on its axis; a 1-based index is an error, not a no-op
    with pytest.raises(ValueError, match=r"removed must list block indices 0..2, got \[3\]"):
        dl.accuracy_without(model, {3}, X, torch.zeros(len(X), dtype=torch.long))


def test_input_share_is_the_part_of_each_stream_that_depends_on_the_input():
    X, _ = dl.two_spirals(64, seed=0)
    model = dl.DeepMLP(6, 8, residual=False, init="default", seed=0)
    s = dl.input_share(model, X)
    assert s.shape == (7,)  # x_0 .. x_6
    with torch.no_grad():  # s_l written out, in float64, for the top of the stream
        x = model.double().stream(X.double())[-1]
    assert s[-1] == pytest.approx(float((x - x.mean(0)).norm() / x.norm()), rel=1e-9)
    same = X[:1].expand(64, -1)  # one input 64 times: nothing depends on the input
    assert np.all(dl.input_share(model, same) < 1e-12)
    with pytest.raises(ValueError, match="model must have a stream"):
        dl.input_share(nn.Linear(2, 2), X)


# ---------------------------------------------------------------- Chapter 2's blocks


def test_chapter_2_blocks_compute_what_their_names_say():
    from depthlab.shortcuts import HighwayBlock, PlainBlock, ResidualBlock

    torch.manual_seed(0)
    plain = PlainBlock(4, 8)
    residual = ResidualBlock(4, 8)
    residual.load_state_dict(plain.state_dict())       # the same branch F
    x = torch.randn(5, 4)
    torch.testing.assert_close(residual(x), x + plain(x))
    with torch.no_grad():                               # F = 0: only the shortcut is left
        plain.F[2].weight.zero_()
        plain.F[2].bias.zero_()
    torch.testing.assert_close(plain(x), torch.zeros(5, 4))
    # the gate T = sigmoid(b_T) near 0 copies the input; near 1 it is the plain transform
    copy_gate, transform_gate = HighwayBlock(4, gate_bias=-30.0), HighwayBlock(4, gate_bias=30.0)
    for block in (copy_gate, transform_gate):
        with torch.no_grad():
            block.gate.weight.zero_()
    torch.testing.assert_close(copy_gate(x), x)
    torch.testing.assert_close(transform_gate(x), transform_gate.H(torch.relu(x)))
    # bad sizes and gate biases say what is allowed
    for bad in (lambda: PlainBlock(0, 8), lambda: ResidualBlock(4, 2.5),
                lambda: HighwayBlock(True, gate_bias=-2.0)):
        with pytest.raises(ValueError, match="must be an integer >= 1"):
            bad()
    with pytest.raises(ValueError, match="gate_bias must be a finite number"):
        HighwayBlock(4, gate_bias=float("nan"))
