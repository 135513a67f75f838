"""Unit tests of depthlab.transformer: formulas, shapes, data, training and argument checks."""

import math
import warnings

import numpy as np
import pytest
import torch

import depthlab as dl


def manual_attention(block, x):
    """Multi-head self-attention written out from the block's own weights."""
    d = x.shape[-1]
    h = block.attn.num_heads
    q, k, v = (x @ w.T + b for w, b in zip(block.attn.in_proj_weight.split(d),
                                          block.attn.in_proj_bias.split(d)))

    def heads(t):  # (B, T, d) -> (B, h, T, d/h)
        return t.unflatten(-1, (h, d // h)).transpose(1, 2)

    q, k, v = heads(q), heads(k), heads(v)
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1)
    out = (weights @ v).transpose(1, 2).flatten(-2)
    return block.attn.out_proj(out)


def manual_ffn(block, x):
    """FFN(x) = W_2 relu(W_1 x + b_1) + b_2, from the block's own weights."""
    return torch.relu(x @ block.ff1.weight.T + block.ff1.bias) @ block.ff2.weight.T + block.ff2.bias


def layer_norm(x, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps)


# ---------------------------------------------------------------- formulas


def test_attention_and_ffn_sublayers_compute_their_formulas():
    torch.manual_seed(0)
    block = dl.TransformerBlock(16, 4, norm="pre")
    x = torch.randn(3, 5, 16)
    torch.testing.assert_close(block.attention(x), manual_attention(block, x))
    torch.testing.assert_close(block.ffn(x), manual_ffn(block, x))


def test_written_out_attention_is_pytorchs_multihead_attention():
    # train_many computes attention by its formula (so that it runs under torch.vmap); the
    # weights are nn.MultiheadAttention's, and so must the result be, up to float rounding
    for heads in (1, 2, 4):
        block = dl.TransformerBlock(16, heads, seed=heads)
        for shape in [(3, 5, 16), (7, 16)]:
            x = torch.randn(*shape, generator=torch.Generator().manual_seed(heads))
            reference = block.attn(x, x, x, need_weights=False)[0]
            assert torch.equal(block.attention(x), reference)      # PyTorch's own by default
            block.written_out = True
            torch.testing.assert_close(block.attention(x), reference, rtol=1e-5, atol=1e-6)
            block.written_out = False


def test_written_out_attention_has_pytorchs_gradient_and_survives_large_scores():
    # its softmax is written out (exp(s - max) / sum): the same values and gradients as
    # nn.MultiheadAttention's fused kernel, also where exp(s) alone would overflow float32
    block = dl.TransformerBlock(16, 2, seed=0)
    g = torch.Generator().manual_seed(0)
    for scale in (1.0, 30.0):  # at 30 the largest |score| is about 3,900: exp(88) overflows
        x = (scale * torch.randn(3, 8, 16, generator=g)).requires_grad_(True)
        upstream = torch.randn(3, 8, 16, generator=g)
        reference = block.attn(x, x, x, need_weights=False)[0]
        (grad_reference,) = torch.autograd.grad((reference * upstream).sum(), x)
        block.written_out = True
        mine = block.attention(x)
        (grad_mine,) = torch.autograd.grad((mine * upstream).sum(), x)
        block.written_out = False
        assert torch.isfinite(mine).all() and torch.isfinite(grad_mine).all()
        torch.testing.assert_close(mine, reference, rtol=1e-4, atol=1e-5)
        # near saturation the gradients are differences of nearly equal numbers: compare
        # them to within a thousandth of their largest entry
        largest = grad_reference.abs().max().item()
        torch.testing.assert_close(grad_mine, grad_reference, rtol=1e-3, atol=1e-3 * largest)


def test_pre_ln_block_is_x_plus_branch_of_layernormed_x():
    torch.manual_seed(0)
    block = dl.TransformerBlock(16, 2, norm="pre")
    x = 3.0 * torch.randn(2, 6, 16)  # not normalized: LN must be applied inside the branch
    h = x + manual_attention(block, layer_norm(x))
    expected = h + manual_ffn(block, layer_norm(h))
    torch.testing.assert_close(block(x), expected, rtol=1e-4, atol=1e-5)


def test_post_ln_block_is_layernorm_of_the_residual_sum():
    torch.manual_seed(0)
    block = dl.TransformerBlock(16, 2, norm="post")
    x = 3.0 * torch.randn(2, 6, 16)
    h = layer_norm(x + manual_attention(block, x))
    expected = layer_norm(h + manual_ffn(block, h))
    torch.testing.assert_close(block(x), expected, rtol=1e-4, atol=1e-5)
    # every position leaves a post-LN block with mean 0 and variance 1 (LN at init)
    out = block(x)
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)
    torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(2, 6), atol=1e-3, rtol=0)


def test_final_layernorm_only_for_pre_ln_and_logits_use_it():
    torch.manual_seed(0)
    pre = dl.TinyTransformer(10, 6, 3, d_model=16, n_heads=2, norm="pre")
    post = dl.TinyTransformer(10, 6, 3, d_model=16, n_heads=2, norm="post")
    assert isinstance(pre.final_norm, torch.nn.LayerNorm)
    assert isinstance(post.final_norm, torch.nn.Identity)
    tokens = torch.randint(0, 10, (4, 6))
    xs = pre.stream(tokens)
    torch.testing.assert_close(pre(tokens), pre.head(layer_norm(xs[-1])), rtol=1e-4, atol=1e-5)


def test_pre_ln_stream_grows_with_depth_and_post_ln_stays_normalized():
    tokens, _ = dl.sequence_task(32, length=8, vocab=16, seed=0)

    def top_rms(norm, depth):
        torch.manual_seed(0)
        model = dl.TinyTransformer(16, 8, depth, norm=norm)
        with torch.no_grad():
            return model.stream(tokens)[-1].pow(2).mean().sqrt().item()

    assert top_rms("pre", 16) > 1.5 * top_rms("pre", 2)
    assert top_rms("post", 16) == pytest.approx(1.0, abs=1e-3)


# ---------------------------------------------------------------- shapes and init


def test_shapes_and_block_weights():
    torch.manual_seed(0)
    model = dl.TinyTransformer(12, 10, 4, d_model=32, n_heads=4, d_ff=48)
    tokens = torch.randint(0, 12, (5, 7))  # shorter than seq_len is allowed
    assert model(tokens).shape == (5, 7, 12)
    xs = model.stream(tokens)
    assert len(xs) == 5 and all(x.shape == (5, 7, 32) for x in xs)
    weights = model.block_weights()
    assert [tuple(w.shape) for w in weights] == [(32, 48)] * 4
    torch.nn.functional.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten()).backward()
    norms = dl.weight_grad_norms(model)
    assert norms.shape == (4,) and np.all(norms > 0)


def test_xavier_init_variances_and_zero_biases():
    torch.manual_seed(0)
    block = dl.TransformerBlock(256, 4, d_ff=512)
    for piece in block.attn.in_proj_weight.split(256):  # each of W_q, W_k, W_v
        assert piece.var().item() == pytest.approx(1 / 256, rel=0.05)
    assert block.ff1.weight.var().item() == pytest.approx(2 / (256 + 512), rel=0.05)
    assert block.ff2.weight.var().item() == pytest.approx(2 / (256 + 512), rel=0.05)
    for bias in (block.attn.in_proj_bias, block.attn.out_proj.bias, block.ff1.bias,
                 block.ff2.bias):
        assert torch.count_nonzero(bias) == 0


def rms_norm(x, eps=1e-5):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def test_deepnorm_block_is_layernorm_of_alpha_x_plus_branch_with_beta_init():
    L = 8
    alpha, beta = (2 * L) ** 0.25, (8 * L) ** -0.25
    torch.manual_seed(0)
    block = dl.TransformerBlock(256, 4, d_ff=512, norm="deepnorm", n_layers=L)
    x = torch.randn(2, 5, 256)
    h = layer_norm(alpha * x + manual_attention(block, x))
    expected = layer_norm(alpha * h + manual_ffn(block, h))
    torch.testing.assert_close(block(x), expected, rtol=1e-4, atol=1e-4)
    q, k, v = block.attn.in_proj_weight.split(256)
    # queries and keys keep Xavier's variance; the value map, the output map and the FFN
    # start smaller by beta
    for piece, gain in [(q, 1.0), (k, 1.0), (v, beta), (block.attn.out_proj.weight, beta)]:
        assert piece.var().item() == pytest.approx(gain ** 2 / 256, rel=0.05)
    for layer in (block.ff1, block.ff2):
        assert layer.weight.var().item() == pytest.approx(beta ** 2 * 2 / (256 + 512), rel=0.05)


def test_gpt2_init_scales_the_two_writes_into_the_stream_by_one_over_sqrt_2l():
    L = 12
    model = dl.TinyTransformer(50, 8, L, d_model=256, n_heads=4, init="gpt2", seed=0)
    for block in model.blocks:
        for piece in block.attn.in_proj_weight.split(256):
            assert piece.std().item() == pytest.approx(0.02, rel=0.05)
        assert block.ff1.weight.std().item() == pytest.approx(0.02, rel=0.05)
        for layer in (block.attn.out_proj, block.ff2):
            assert layer.weight.std().item() == pytest.approx(0.02 / math.sqrt(2 * L), rel=0.05)
            assert torch.count_nonzero(layer.bias) == 0
    for weight in (model.embed.weight, model.pos, model.head.weight):
        assert weight.std().item() == pytest.approx(0.02, rel=0.1)


def test_rmsnorm_blocks_and_final_norm():
    torch.manual_seed(0)
    block = dl.TransformerBlock(16, 2, norm="pre", norm_layer="rms")
    x = 3.0 * torch.randn(2, 6, 16) + 1.0
    h = x + manual_attention(block, rms_norm(x))
    expected = h + manual_ffn(block, rms_norm(h))
    torch.testing.assert_close(block(x), expected, rtol=1e-4, atol=1e-5)
    model = dl.TinyTransformer(10, 6, 2, d_model=16, n_heads=2, norm_layer="rms", seed=0)
    assert isinstance(model.final_norm, torch.nn.RMSNorm)


def test_without_residual_the_block_is_the_branch_alone():
    torch.manual_seed(0)
    block = dl.TransformerBlock(16, 2, norm="pre", residual=False)
    x = torch.randn(2, 6, 16)
    h = manual_attention(block, layer_norm(x))
    torch.testing.assert_close(block(x), manual_ffn(block, layer_norm(h)), rtol=1e-4, atol=1e-5)


def test_new_options_leave_the_default_model_unchanged():
    a = dl.TinyTransformer(10, 6, 3, d_model=16, n_heads=2, seed=4)
    b = dl.TinyTransformer(10, 6, 3, d_model=16, n_heads=2, seed=4, norm_layer="layer",
                           residual=True, layer_drop=0.0)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(p, q), name


def test_logit_lens_reads_out_every_layer_and_ends_at_the_output():
    model = dl.TinyTransformer(10, 6, 3, d_model=16, n_heads=2, seed=0)
    tokens = torch.randint(0, 10, (4, 6))
    lens = model.logit_lens(tokens)
    assert lens.shape == (4, 4, 6, 10)
    torch.testing.assert_close(lens[-1], model(tokens))
    torch.testing.assert_close(lens[0], model.head(model.final_norm(model.stream(tokens)[0])))


def test_layer_drop_skips_blocks_only_in_training_and_repeatably():
    tokens = torch.randint(0, 10, (4, 6))
    model = dl.TinyTransformer(10, 6, 20, d_model=16, n_heads=2, layer_drop=0.3, seed=0)
    model.eval()
    full = model(tokens)
    torch.testing.assert_close(model(tokens), full)  # evaluation: every block, every time
    model.train()
    kept = np.array([model._kept() for _ in range(200)])
    assert kept.mean() == pytest.approx(0.7, abs=0.03)
    again = dl.TinyTransformer(10, 6, 20, d_model=16, n_heads=2, layer_drop=0.3, seed=0)
    again.train()
    assert np.array_equal(kept, np.array([again._kept() for _ in range(200)]))
    # a skipped block leaves the stream unchanged
    xs = model.stream(tokens)
    assert any(torch.equal(xs[i], xs[i + 1]) for i in range(20))


# ---------------------------------------------------------------- data


def test_sequence_tasks_have_the_right_targets_and_are_seeded():
    X, Y = dl.sequence_task(50, kind="sort", length=6, vocab=9, seed=3)
    assert X.shape == Y.shape == (50, 6) and X.dtype == torch.int64
    assert torch.all(Y[:, 1:] >= Y[:, :-1])
    assert torch.equal(Y, X.sort(dim=1).values)
    assert X.min() >= 0 and X.max() < 9
    X2, _ = dl.sequence_task(50, kind="sort", length=6, vocab=9, seed=3)
    assert torch.equal(X, X2)
    Xr, Yr = dl.sequence_task(10, kind="reverse", seed=1)
    assert torch.equal(Yr, Xr.flip(1))
    Xc, Yc = dl.sequence_task(10, kind="copy", seed=1)
    assert torch.equal(Yc, Xc)


# ---------------------------------------------------------------- training


@pytest.fixture
def one_thread():
    # a tiny model's step is Python overhead: on a busy machine extra threads only add waiting
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_short_training_run_lowers_the_loss(one_thread):
    X, Y = dl.sequence_task(256, kind="copy", length=6, vocab=8, seed=0)
    torch.manual_seed(0)
    model = dl.TinyTransformer(8, 6, 2, d_model=32, n_heads=2)
    h = dl.train_sequence(model, X, Y, steps=60, lr=3e-3, batch_size=32, device="cpu")
    assert h.loss.shape == (60,) and h.diverged_at is None
    assert h.final_loss() < 0.5 * h.loss[0]
    assert np.all(np.isfinite(h.grad_norm)) and np.all(h.grad_norm > 0)
    token_acc, seq_acc = dl.sequence_accuracy(model, X, Y)
    assert token_acc > 0.5 and 0 <= seq_acc <= token_acc


def test_training_is_deterministic_and_warmup_ramps_the_rate():
    X, Y = dl.sequence_task(64, kind="reverse", length=5, vocab=6, seed=0)
    runs = []
    for _ in range(2):
        torch.manual_seed(1)
        model = dl.TinyTransformer(6, 5, 1, d_model=16, n_heads=2, norm="post")
        runs.append(dl.train_sequence(model, X, Y, steps=8, lr=1e-2, warmup=4,
                                      batch_size=16, seed=2, device="cpu"))
    np.testing.assert_array_equal(runs[0].loss, runs[1].loss)
    np.testing.assert_allclose(runs[0].lr[:5], [2.5e-3, 5e-3, 7.5e-3, 1e-2, 1e-2])


def test_a_snapshot_is_the_model_a_shorter_run_returns():
    # LayerDrop, a warm-up and a seeded batch order: everything the shorter run must repeat
    X, Y = dl.sequence_task(64, kind="sort", length=5, vocab=6, seed=0)
    args = dict(lr=1e-2, warmup=4, batch_size=16, seed=3, device="cpu")

    def net():
        return dl.TinyTransformer(6, 5, 3, d_model=16, n_heads=2, layer_drop=0.3, seed=1)

    long_net = net()
    long = dl.train_sequence(long_net, X, Y, steps=12, snapshots=[7, 5], **args)
    assert list(long.snapshots) == [5, 7]
    for n, snapshot in long.snapshots.items():
        short_net = net()
        short = dl.train_sequence(short_net, X, Y, steps=n, **args)
        np.testing.assert_array_equal(short.loss, long.loss[:n])
        assert snapshot.training and snapshot is not long_net  # a copy, not the model trained on
        assert all(p.grad is None for p in snapshot.parameters())
        for (name, a), b in zip(snapshot.state_dict().items(), short_net.state_dict().values()):
            assert torch.equal(a, b), f"{name} differs after {n} steps"
    assert dl.train_sequence(net(), X, Y, steps=3, **args).snapshots == {}


@pytest.mark.parametrize("snapshots, message", [
    ([0], "each of snapshots must be an integer >= 1"),
    ([4, 13], "each of snapshots must be <= steps=12"),
    (5, r"snapshots must be a list of step counts in 1..12"),
    ("5", r"snapshots must be a list of step counts in 1..12"),
])
def test_bad_snapshots_say_what_is_allowed(snapshots, message):
    X, Y = dl.sequence_task(16, length=4, vocab=5)
    model = dl.TinyTransformer(5, 4, 1, d_model=8, n_heads=2)
    with pytest.raises(ValueError, match=message):
        dl.train_sequence(model, X, Y, steps=12, batch_size=8, snapshots=snapshots, device="cpu")


# ---------------------------------------------------------------- argument checks


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(norm="middle"), "norm must be one of 'pre', 'post'"),
        (dict(init="he"), "init must be one of 'xavier', 'default'"),
        (dict(depth=0), "depth must be an integer >= 1"),
        (dict(vocab=1), "vocab must be an integer >= 2"),
        (dict(d_model=30, n_heads=4), r"n_heads must divide d_model=30; got n_heads=4 \(allowed: "
                                      r"1, 2, 3, 5, 6, 10, 15, 30\)"),
        (dict(d_ff=0), "d_ff must be an integer >= 1"),
        (dict(norm_layer="batch"), "norm_layer must be one of 'layer', 'rms'"),
        (dict(residual="yes"), "residual must be True or False"),
        (dict(layer_drop=1.0), r"layer_drop must be in \[0, 1\)"),
        (dict(layer_drop=-0.1), "layer_drop must be >= 0"),
        (dict(norm="deepnorm", init="gpt2"), "norm='deepnorm' brings its own initialization"),
        (dict(seed=-1), "seed must be an integer >= 0"),
    ],
)
def test_bad_model_arguments_say_what_is_allowed(kwargs, message):
    args = dict(vocab=10, seq_len=8, depth=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        dl.TinyTransformer(**args)


def test_bad_inputs_to_the_model_are_clear_errors():
    model = dl.TinyTransformer(10, 4, 1, d_model=16, n_heads=2)
    with pytest.raises(ValueError, match=r"\(batch, length\) tensor"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="longer than seq_len=4"):
        model(torch.zeros(2, 5, dtype=torch.long))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(kind="shuffle"), "kind must be one of 'copy', 'reverse', 'sort'"),
        (dict(length=1), "length must be an integer >= 2"),
        (dict(vocab=1), "vocab must be an integer >= 2"),
    ],
)
def test_bad_task_arguments_say_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dl.sequence_task(10, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(steps=0), "steps must be an integer >= 1"),
        (dict(lr=-1.0), "lr must be > 0"),
        (dict(warmup=-2), "warmup must be an integer >= 0"),
        (dict(batch_size=1000), "batch_size must be <= the number of sequences"),
        (dict(betas=(0.9, 1.5)), r"betas must be two numbers in \[0, 1\)"),
    ],
)
def test_bad_training_arguments_say_what_is_allowed(kwargs, message):
    X, Y = dl.sequence_task(16, length=4, vocab=5)
    model = dl.TinyTransformer(5, 4, 1, d_model=8, n_heads=2)
    args = dict(batch_size=8, device="cpu")
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        dl.train_sequence(model, X, Y, **args)


def test_sequence_accuracy_counts_tokens_and_whole_sequences_in_eval_mode():
    class Echo(torch.nn.Module):
        """Predicts each input token itself, except token 0, which it reads as 1."""

        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(()))

        def forward(self, tokens):
            self.modes.append(self.training)
            logits = torch.nn.functional.one_hot(tokens.clamp_min(1), 5).float()
            return self.scale * logits

    model = Echo()
    model.modes = []
    X = torch.tensor([[1, 2, 3], [0, 2, 3], [0, 0, 4], [4, 4, 4]])
    Y = X.clone()
    # tokens right: 3 + 2 + 1 + 3 = 9 of 12; whole sequences right: rows 0 and 3
    assert dl.sequence_accuracy(model, X, Y) == (0.75, 0.5)
    assert model.modes == [False] and model.training
    model.eval()
    dl.sequence_accuracy(model, X, Y)
    assert not model.training


def test_the_held_out_loss_of_a_sequence_model_averages_every_position():
    model = dl.TinyTransformer(5, 3, depth=1, d_model=8, n_heads=2, seed=0)
    X, Y = dl.sequence_task(6, length=3, vocab=5)
    with torch.no_grad():
        logits = model.eval()(X)
    by_hand = float(sum(torch.nn.functional.cross_entropy(logits[i, t], Y[i, t])
                        for i in range(6) for t in range(3)) / 18)
    model.train()
    assert dl.evaluate_loss(model, X, Y) == pytest.approx(by_hand, rel=1e-6)
    assert model.training


def test_mismatched_data_is_a_clear_error():
    X, Y = dl.sequence_task(16, length=4, vocab=5)
    model = dl.TinyTransformer(5, 4, 1, d_model=8, n_heads=2)
    with pytest.raises(ValueError, match="same shape"):
        dl.train_sequence(model, X, Y[:, :3], device="cpu")


def test_position_similarity_is_one_for_identical_positions_and_near_zero_for_random_ones():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(64, 8, 32, generator=g)
    assert abs(dl.position_similarity(z)) < 0.02
    same = z[:, :1].expand(64, 8, 32) * torch.rand(1, 8, 1, generator=g) + 3.0  # scaled, offset
    assert dl.position_similarity(same) == pytest.approx(1.0, abs=1e-6)
    # two groups of positions pointing in opposite directions: cosine -1 between groups
    half = torch.cat([z[:, :1].expand(64, 4, 32), -z[:, :1].expand(64, 4, 32)], 1)
    assert dl.position_similarity(half) == pytest.approx((24 - 32) / 56, abs=1e-6)  # 56 pairs
    with pytest.raises(ValueError, match=r"z must be a \(batch, length, width\) tensor with "
                                         r"length >= 2, got shape \(8, 32\)"):
        dl.position_similarity(z[0])


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_top_is_the_read_outs_input(norm):
    model = dl.TinyTransformer(16, 8, 3, d_model=16, norm=norm, seed=0)
    tokens, _ = dl.sequence_task(4, kind="sort", length=8, vocab=16, seed=0)
    top = model.top(tokens)
    assert top.shape == (4, 8, 16)
    torch.testing.assert_close(model.head(top), model(tokens), rtol=0, atol=0)
    if norm == "pre":  # the final LayerNorm: zero mean, unit variance per position
        torch.testing.assert_close(top.mean(-1), torch.zeros(4, 8), rtol=0, atol=1e-5)


def test_rms_is_the_typical_size_of_an_entry():
    assert dl.rms(torch.full((3, 4), -2.0)) == pytest.approx(2.0)
    assert dl.rms(torch.tensor([3.0, 4.0])) == pytest.approx(math.sqrt(12.5))
    assert isinstance(dl.rms(torch.ones(2)), float)
    with warnings.catch_warnings():  # a tensor that needs a gradient: no warning
        warnings.simplefilter("error")
        assert dl.rms(torch.ones(2, requires_grad=True)) == pytest.approx(1.0)
    for bad in ([1.0, 2.0], torch.zeros(0)):
        with pytest.raises(ValueError, match="t must be a tensor with at least one entry"):
            dl.rms(bad)


def test_distance_from_rank_one_is_zero_for_equal_positions_and_one_for_a_zero_mean():
    same = torch.randn(4, 1, 6).expand(4, 5, 6)
    assert dl.distance_from_rank_one(same) == pytest.approx(0.0, abs=1e-6)
    x = torch.randn(4, 5, 6)
    zero_mean = x - x.mean(dim=1, keepdim=True)
    assert dl.distance_from_rank_one(zero_mean) == pytest.approx(1.0)
    # one sequence: ||X - 1 mean^T||_F / ||X||_F, written out
    one = torch.randn(1, 5, 6)
    expected = (one[0] - one[0].mean(0)).norm() / one[0].norm()
    assert dl.distance_from_rank_one(one) == pytest.approx(float(expected))
    with pytest.raises(ValueError, match=r"x must be a \(batch, length, width\) tensor"):
        dl.distance_from_rank_one(torch.randn(5, 6))
