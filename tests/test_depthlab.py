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


def test_norm_placements_follow_their_formulas():
    torch.manual_seed(0)
    x = torch.randn(5, 8)
    pre = dl.Block(8, norm="pre")
    torch.testing.assert_close(pre(x), x + pre.linear(torch.relu(pre.norm(x))))
    post = dl.Block(8, norm="post")
    torch.testing.assert_close(post(x), post.norm(x + post.linear(torch.relu(x))))


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


def test_default_init_has_pytorchs_variance():
    torch.manual_seed(0)
    block = dl.Block(512, init="default")
    assert block.linear.weight.var().item() == pytest.approx(1 / (3 * 512), rel=0.02)


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
        (dict(optimizer="rmsprop"), "optimizer must be one of 'adam', 'sgd'"),
        (dict(batch_size=10_000), "batch_size must be <="),
    ],
)
def test_bad_training_arguments_say_what_is_allowed(kwargs, message):
    X, y = dl.two_spirals(32)
    with pytest.raises(ValueError, match=message):
        dl.train(dl.DeepMLP(2, 4), X, y, **kwargs)


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
    X, y = dl.two_spirals(100)
    Xtr, ytr, Xte, yte = dl.split(X, y, test_fraction=0.2)
    assert len(Xtr) == 80 and len(Xte) == 20
    assert torch.equal(torch.sort(torch.cat([ytr, yte])).values, torch.sort(y).values)


# ---------------------------------------------------------------- twins


def test_scrubber_embeds_one_frame_per_value_and_a_slider():
    import matplotlib.pyplot as plt

    def render(v):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.plot([0, 1], [0, v])
        return fig

    html = dl.scrubber(render, [1, 2, 3], label="depth", start=2).data
    assert html.count("<img") == 3 and html.count("data:image/png;base64,") == 3
    assert 'type="range"' in html and 'max="2"' in html and 'value="1"' in html
    assert "depth = 2" in html
    with pytest.raises(ValueError, match="at least one"):
        dl.scrubber(render, [])
    with pytest.raises(ValueError, match="not one of the values"):
        dl.scrubber(render, [1, 2], start=5)


def test_scrubber_frames_are_palette_pngs_much_smaller_than_full_colour():
    import base64
    import io
    import re

    import matplotlib.pyplot as plt
    from PIL import Image

    def render(v):
        fig, ax = plt.subplots(figsize=(6, 3))
        for k in range(6):
            ax.plot(np.sin(np.linspace(0, 10, 200) * (k + v)), label=f"line {k}")
        ax.legend()
        return fig

    html = dl.scrubber(render, [1]).data
    frame = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", html)[1])
    image = Image.open(io.BytesIO(frame))
    assert image.mode == "P" and len(image.getcolors()) <= 64
    full = io.BytesIO()
    render(1).savefig(full, format="png", dpi=96, bbox_inches="tight")
    assert len(frame) < 0.6 * len(full.getvalue())


def test_colors_have_clear_errors():
    assert dl.color("residual") == dl.COLORS["residual"]
    with pytest.raises(ValueError, match="unknown colour name"):
        dl.color("rainbow")


# ---------------------------------------------------------------- optimizer options


def one_step(weight_decay=0.0, adam_eps=1e-8, optimizer="sgd", lr=0.1, dtype=torch.float32):
    """W_1 - W_0 of the first block after one full-batch step, and W_0 and its gradient."""
    X, y = dl.two_spirals(64, seed=0)
    model = dl.DeepMLP(2, 8, init="he", seed=0).to(dtype)
    X = X.to(dtype)
    w0 = model.blocks[0].linear.weight.detach().clone()
    nn.functional.cross_entropy(model(X), y).backward()
    grad = model.blocks[0].linear.weight.grad.clone()
    model.zero_grad()
    dl.train(model, X, y, steps=1, lr=lr, optimizer=optimizer, weight_decay=weight_decay,
             adam_eps=adam_eps, device="cpu")
    return model.blocks[0].linear.weight.detach() - w0, w0, grad


def test_weight_decay_adds_l2_to_the_gradient():
    # SGD's first step is -lr * (g + weight_decay * W)
    step, w0, grad = one_step(weight_decay=0.5, lr=0.1)
    torch.testing.assert_close(step, -0.1 * (grad + 0.5 * w0))
    # Adam normalizes g + weight_decay * W (L2, not AdamW): with a huge decay every weight moves
    # by lr towards 0, whatever its size
    step, w0, _ = one_step(weight_decay=1e6, lr=1e-3, optimizer="adam")
    torch.testing.assert_close(step, -1e-3 * torch.sign(w0), rtol=1e-4, atol=0)


def test_adam_eps_sets_how_much_a_small_gradient_is_damped():
    # Adam's first step is lr * g / (|g| + eps): with eps = 0 (float64) it is lr for every weight
    step, _, grad = one_step(adam_eps=0.0, optimizer="adam", lr=1e-3, dtype=torch.float64)
    assert torch.all(grad != 0)
    torch.testing.assert_close(step, -1e-3 * torch.sign(grad), rtol=1e-12, atol=0)
    # with an eps far above the gradient, the step shrinks to lr * |g| / eps
    step, _, grad = one_step(adam_eps=1.0, optimizer="adam", lr=1e-3, dtype=torch.float64)
    torch.testing.assert_close(step, -1e-3 * grad / (grad.abs() + 1.0), rtol=1e-9, atol=0)


def test_a_float64_model_trains_on_float64_data():
    X, y = dl.two_spirals(128, turns=1.0, seed=1)
    model = dl.DeepMLP(4, 16, init="he", norm="pre", seed=0).double()
    h = dl.train(model, X.double(), y, steps=60, lr=1e-2, device="cpu")
    assert h.final_loss() < 0.7 * h.loss[0] and h.diverged_at is None
    assert np.all(np.isfinite(h.grad_norms)) and np.all(h.update_ratio > 0)
    assert all(p.dtype == torch.float64 for p in model.parameters())
