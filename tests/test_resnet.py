"""Unit tests of depthlab's convolutional ResNets (depthlab.resnet), of several seeds' ResNets
side by side (depthlab.fast.resnet) and of the MNIST-1D loader (depthlab.data). Each asserts a
property that a broken implementation would violate."""

import hashlib
import random
import socket

import numpy as np
import pytest
import torch
from torch import nn

import depthlab as dl
from depthlab import data
from depthlab.fast import ResNetStack, member_scores
from depthlab.resnet import BasicBlock, BottleneckBlock, ResNet1d, train_resnet


def signals(n=6, length=40, seed=0):
    return torch.randn(n, length, generator=torch.Generator().manual_seed(seed))


def stream(n=6, channels=8, length=20, seed=1):
    # a stream with negative entries, as a pre-activation network's stream has
    return 2 * torch.randn(n, channels, length, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- shapes


@pytest.mark.parametrize("block, depth", [("basic", 8), ("basic", 20), ("bottleneck", 11)])
def test_network_shapes_stages_and_layer_count(block, depth):
    model = ResNet1d(depth, 4, block=block, seed=0)
    n = (depth - 2) // (6 if block == "basic" else 9)
    assert len(model.blocks) == 3 * n
    convs = sum(isinstance(m, nn.Conv1d) for m in model.modules())
    assert convs == depth  # stem + the branches' convolutions + head (option A adds none)
    xs = model.stream(signals())
    grow = 1 if block == "basic" else 4
    # three stages of width w, 2w, 4w (times 4 for bottlenecks) at lengths 40, 20, 10
    assert xs[0].shape == (6, 4, 40)
    assert xs[n].shape == (6, 4 * grow, 40)
    assert xs[n + 1].shape == (6, 8 * grow, 20)
    assert xs[-1].shape == (6, 16 * grow, 10)
    assert model(signals()).shape == (6, 10)
    assert model(signals()[:, None]).shape == (6, 10)


def test_a_stack_of_seeds_gives_each_member_the_network_of_its_seed():
    for kwargs in [{}, dict(order="preact", shortcut="B"), dict(residual=False),
                   dict(block="bottleneck", depth=11), dict(survival=0.5)]:
        settings = {**dict(depth=8, width=4), **kwargs}
        stack = ResNetStack(**settings, seeds=[5, 2, 9]).eval()
        assert stack(signals()).shape == (6, 3, 10)
        for k, s in enumerate([5, 2, 9]):
            single = ResNet1d(**settings, seed=s).eval()
            # equal up to float rounding (grouped convolutions may sum in another order)
            torch.testing.assert_close(stack(signals())[:, k], single(signals()),
                                       rtol=1e-5, atol=1e-6)


def test_a_stack_holds_exactly_the_initial_weights_of_its_networks():
    for kwargs in [{}, dict(order="preact", shortcut="B", batchnorm=False)]:
        stack = ResNetStack(8, 4, seeds=[3, 0], **kwargs)
        singles = [ResNet1d(8, 4, seed=s, **kwargs).state_dict() for s in (3, 0)]
        for name, tensor in stack.state_dict().items():
            if name.endswith("num_batches_tracked"):
                assert tensor == 0
            else:  # network k's channels (or weights) are the k-th block, bit for bit
                assert torch.equal(tensor, torch.cat([single[name] for single in singles]))


def test_seeded_models_are_reproducible_and_leave_the_global_random_state_alone():
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a = ResNet1d(8, 4, survival=0.5, seed=7)
    ResNetStack(8, 4, survival=0.5, seeds=[7, 8])
    after = torch.rand(3)
    assert torch.equal(before, after)
    b = ResNet1d(8, 4, survival=0.5, seed=7)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_he_init_gives_each_convolution_variance_two_over_fan_in():
    model = ResNet1d(56, 16, seed=0)
    for conv in [model.blocks[0].conv1, model.blocks[-1].conv2]:
        fan_in = conv.weight.shape[1] * conv.weight.shape[2]
        assert conv.weight.var().item() == pytest.approx(2 / fan_in, rel=0.1)


@pytest.mark.parametrize("options", [{}, dict(order="preact", shortcut="B"),
                                     dict(block="bottleneck", depth=11),
                                     dict(batchnorm=False, survival=0.5)])
def test_a_stack_trained_with_dl_train_matches_its_members_trained_alone(options):
    X, y = signals(64), torch.arange(64) % 10
    recipe = dict(steps=5, lr=0.1, optimizer="sgd", batch_size=16, weight_decay=1e-4,
                  record=False, device="cpu")
    settings = {**dict(depth=8, width=4), **options}
    stack = ResNetStack(**settings, seeds=[0, 1])
    history = dl.train(stack, X, stack.targets(y), **recipe)
    singles = [ResNet1d(**settings, seed=s) for s in (0, 1)]
    losses = [dl.train(m, X, y, **recipe).loss for m in singles]
    # the stack records the mean of its members' minibatch losses ...
    np.testing.assert_allclose(history.loss, np.mean(losses, 0), rtol=1e-5)
    # ... and each member takes exactly the steps it would take alone
    for k, single in enumerate(singles):
        for (name, p), q in zip(stack.named_parameters(), single.parameters()):
            size = p.shape[0] // 2
            torch.testing.assert_close(p[k * size:(k + 1) * size], q, rtol=1e-4, atol=1e-6,
                                       msg=name)
    stack_loss, stack_acc = member_scores(stack, X, y)
    for k, single in enumerate(singles):
        assert stack_loss[k] == pytest.approx(dl.evaluate_loss(single, X, y), rel=1e-4)
        assert stack_acc[k] == pytest.approx(dl.accuracy(single, X, y))


def test_train_resnet_is_two_calls_of_dl_train_with_the_rate_divided_by_ten():
    X, y = signals(64), torch.arange(64) % 10
    common = dict(optimizer="sgd", batch_size=16, weight_decay=1e-4, record=False, device="cpu")
    history = train_resnet(ResNet1d(8, 4, seed=0), X, y, steps=8, lr=0.1, drop_at=6, warmup=2,
                           batch_size=16, device="cpu")
    np.testing.assert_allclose(history.lr, [0.05, 0.1, 0.1, 0.1, 0.1, 0.1, 0.01, 0.01])
    twin = ResNet1d(8, 4, seed=0)
    first = dl.train(twin, X, y, steps=6, lr=0.1, warmup=2, seed=0, **common)
    second = dl.train(twin, X, y, steps=2, lr=0.01, seed=1000, **common)
    np.testing.assert_allclose(history.loss, np.concatenate([first.loss, second.loss]),
                               rtol=1e-6)
    assert history.meta["drop_at"] == 6 and history.steps == 8


def test_a_one_seed_stack_trains_exactly_as_its_network_alone():
    X, y = signals(64), torch.arange(64) % 10
    stack, single = ResNetStack(8, 4, survival=0.5, seeds=[3]), ResNet1d(8, 4, survival=0.5, seed=3)
    a = train_resnet(stack, X, y, steps=6, batch_size=16, device="cpu")
    b = train_resnet(single, X, y, steps=6, batch_size=16, device="cpu")
    assert np.array_equal(a.loss, b.loss)
    assert all(torch.equal(p, q) for p, q in zip(stack.state_dict().values(),
                                                 single.state_dict().values()))


def test_train_resnet_trains_a_stack_on_its_own_labels():
    X, y = signals(64), torch.arange(64) % 10
    stack = ResNetStack(8, 4, seeds=[0, 1])
    history = train_resnet(stack, X, y, steps=4, batch_size=16, device="cpu")
    assert history.loss.shape == (4,) and np.isfinite(history.loss).all()


def test_read_out_gives_the_logits_of_the_last_stream():
    for order in ("v1", "preact"):
        model = ResNet1d(8, 4, order=order, seed=0).eval()
        torch.testing.assert_close(model.read_out(model.stream(signals())[-1]),
                                   model(signals()))


# ---------------------------------------------------------------- identity and order


def branch_end(block):
    """The last layer of a pre-activation block's branch: zero it and the branch outputs zero."""
    return block.conv3 if isinstance(block, BottleneckBlock) else block.conv2


@pytest.mark.parametrize("block_class", [BasicBlock, BottleneckBlock])
def test_a_zero_initialized_preactivation_block_is_exactly_the_identity(block_class):
    block = block_class(8, order="preact")
    nn.init.zeros_(branch_end(block).weight)
    x = stream()
    for mode in (True, False):
        block.train(mode)
        assert torch.equal(block(x), x)


def test_a_zero_initialized_v1_block_is_a_relu_not_the_identity():
    block = BasicBlock(8, order="v1")
    nn.init.zeros_(block.bn2.weight)  # BN's scale 0 (and shift 0): the branch outputs 0
    x = stream()
    assert torch.equal(block(x), torch.relu(x))
    assert not torch.equal(block(x), x)


def test_a_zeroed_preactivation_network_passes_each_stage_unchanged():
    model = ResNet1d(20, 4, order="preact", seed=0)
    for b in model.blocks:
        nn.init.zeros_(branch_end(b).weight)
    xs = model.stream(signals())
    n = model.n
    for stage in range(3):
        first = stage * n + 1  # the first block of a stage may change the shape (option A)
        for l in range(first + 1, first + n):
            assert torch.equal(xs[l], xs[first])


def test_detaching_the_branch_leaves_only_the_shortcut_jacobian():
    x = stream().requires_grad_(True)
    block = BasicBlock(8, order="preact")
    block.detach_branch = True
    block(x).sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    x.grad = None
    block = BasicBlock(8, order="v1")
    block.detach_branch = True
    out = block(x)
    out.sum().backward()
    # v1: the ReLU after the addition passes the shortcut's gradient only where out > 0
    assert torch.equal(x.grad, (out > 0).to(x.dtype))


def test_plain_blocks_have_no_shortcut():
    block = BasicBlock(8, residual=False, order="v1")
    x = stream()
    assert torch.equal(block(x), torch.relu(block.branch(x)))
    pre = BasicBlock(8, residual=False, order="preact")
    assert torch.equal(pre(x), pre.branch(torch.relu(pre.bn_in(x))))


# ---------------------------------------------------------------- shortcuts A and B


@pytest.mark.parametrize("members", [1, 3])
def test_option_a_subsamples_with_the_stride_and_pads_zero_channels(members):
    # the first block of stage 2 (4 -> 8 channels, stride 2), alone or in a stack of seeds
    settings = dict(depth=8, width=4, order="preact", shortcut="A")
    model = (ResNet1d(**settings, seed=0) if members == 1
             else ResNetStack(**settings, seeds=list(range(members))))
    block = model.blocks[1]
    assert (block.in_width, block.out_width, block.stride) == (4, 8, 2)
    nn.init.zeros_(block.conv2.weight)  # branch = 0: the block is its shortcut
    x = stream(channels=4 * members, length=9)
    out = block(x)
    assert out.shape == (6, 8 * members, 5)
    for k in range(members):
        mine = out[:, 8 * k:8 * (k + 1)]
        assert torch.equal(mine[:, :4], x[:, 4 * k:4 * (k + 1), ::2])   # positions 0, 2, .., 8
        assert torch.count_nonzero(mine[:, 4:]) == 0                      # the new channels


def test_option_b_projects_with_a_strided_one_tap_convolution():
    block = BasicBlock(4, 8, stride=2, order="preact", shortcut="B")
    nn.init.zeros_(block.conv2.weight)
    x = stream(channels=4, length=10)
    pre = torch.relu(block.bn_in(x))
    W = block.projection[0].weight[:, :, 0]                               # (8, 4)
    expected = torch.einsum("oc,ncl->nol", W, pre[:, :, ::2])
    torch.testing.assert_close(block(x), expected)


def test_parameter_counts_of_option_a_and_option_b():
    count = dl.parameter_count
    a = BasicBlock(16, 32, stride=2, shortcut="A")
    b = BasicBlock(16, 32, stride=2, shortcut="B")
    same_shape = BasicBlock(32, 32, shortcut="B")     # no projection where shapes match
    branch = 16 * 32 * 3 + 32 * 32 * 3 + 2 * (2 * 32)  # two convolutions and two BatchNorms
    assert count(a) == branch
    assert count(b) == branch + 16 * 32 + 2 * 32       # the 1x1 projection and its BatchNorm
    assert count(same_shape) == 32 * 32 * 3 * 2 + 2 * (2 * 32)
    pre_b = BasicBlock(16, 32, stride=2, shortcut="B", order="preact")
    assert count(pre_b) - count(BasicBlock(16, 32, stride=2, order="preact")) == 16 * 32
    # whole networks: option B pays only at the two stage transitions
    net_a, net_b = ResNet1d(20, 16, seed=0), ResNet1d(20, 16, shortcut="B", seed=0)
    assert count(net_b) - count(net_a) == (16 * 32 + 2 * 32) + (32 * 64 + 2 * 64)
    assert count(net_a) == count(ResNet1d(20, 16, residual=False, seed=0))
    with pytest.raises(ValueError, match="model must be a torch.nn.Module, got list"):
        count([net_a])


# ---------------------------------------------------------------- stochastic depth


def test_stochastic_depth_drops_whole_blocks_in_training_and_scales_them_in_eval():
    block = BasicBlock(8, order="preact", survival=0.7, seed=3)
    x = stream()
    kept = 0
    block.train()
    for _ in range(200):
        full = x + block.branch(torch.relu(block.bn_in(x)))
        out = block(x)
        if torch.equal(out, x):            # dropped: the block is its shortcut, for every example
            continue
        torch.testing.assert_close(out, full)
        kept += 1
    assert 0.55 < kept / 200 < 0.85        # binomial(200, 0.7): the bounds are > 4 sd away
    block.eval()
    expected = x + 0.7 * block.branch(torch.relu(block.bn_in(x)))
    torch.testing.assert_close(block(x), expected)


def test_stochastic_depth_in_v1_falls_back_to_the_relu_of_the_shortcut():
    block = BasicBlock(8, order="v1", survival=0.5, seed=0)
    x = stream()
    outs = [block(x) for _ in range(20)]
    assert any(torch.equal(o, torch.relu(x)) for o in outs)
    assert any(not torch.equal(o, torch.relu(x)) for o in outs)


def test_survival_decays_linearly_to_the_last_block():
    model = ResNet1d(20, 4, survival=0.5, seed=0)
    L = len(model.blocks)
    expected = 1 - np.arange(1, L + 1) / L * 0.5
    np.testing.assert_allclose(model.survival_probabilities(), expected)
    assert ResNet1d(20, 4, seed=0).survival_probabilities().tolist() == [1.0] * L


def test_members_of_a_stack_drop_blocks_independently_and_as_they_would_alone():
    x = signals()
    stack = ResNetStack(8, 4, survival=0.3, seeds=[0, 1]).train()
    singles = [ResNet1d(8, 4, survival=0.3, seed=s).train() for s in (0, 1)]
    for _ in range(4):
        out = stack(x)
        for k, single in enumerate(singles):
            torch.testing.assert_close(out[:, k], single(x))


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("kwargs, message", [
    (dict(depth=21), r"depth must be 6n \+ 2 for basic blocks \(8, 20, 32, 44, 56, 110, "
                     r"\.\.\.\), got 21"),
    (dict(depth=21, block="bottleneck"), r"depth must be 9n \+ 2 for bottleneck blocks"),
    (dict(order="v2"), "order must be one of 'v1', 'preact'; got 'v2'"),
    (dict(block="wide"), "block must be one of 'basic', 'bottleneck'; got 'wide'"),
    (dict(shortcut="C"), "shortcut must be one of 'A', 'B'; got 'C'"),
    (dict(survival=0.0), r"survival must be a probability in \(0, 1\]"),
    (dict(survival=1.5), r"survival must be a probability in \(0, 1\]"),
    (dict(residual=False, shortcut="B"), "apply to residual networks only"),
    (dict(residual=False, survival=0.5), "apply to residual networks only"),
    (dict(residual=1), "residual must be True or False, got 1"),
    (dict(width=0), "width must be an integer >= 1, got 0"),
    (dict(seed=[1, 2]), r"seed must be an integer >= 0 or None, got \[1, 2\]; several seeds' "
                        r"networks side by side are dl.ResNetStack\(\.\.\., seeds=\[1, 2\]\)"),
    (dict(seed="0"), "seed must be an integer >= 0"),
    (dict(seed=-1), "seed must be an integer >= 0"),
])
def test_bad_network_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ResNet1d(**{**dict(depth=8, width=4), **kwargs})


@pytest.mark.parametrize("kwargs, message", [
    (dict(seeds=[1, 1]), "the seeds of a stack of networks must differ, got \\[1, 1\\]"),
    (dict(seeds=[]), "seeds must be a non-empty list of distinct integers >= 0"),
    (dict(seeds=3), r"seeds must be a non-empty list .*\(one network is dl.ResNet1d"),
    (dict(seeds=[0, -1]), r"seeds\[1\] must be an integer >= 0"),
    (dict(), "seeds must be a non-empty list of distinct integers >= 0"),
    (dict(seeds=[0, 1], seed=0), "a ResNetStack takes seeds=\\[...\\], one network per seed"),
    (dict(seeds=[0, 1], depth=21), r"depth must be 6n \+ 2"),
])
def test_bad_stack_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ResNetStack(**{**dict(depth=8, width=4), **kwargs})


@pytest.mark.parametrize("args, kwargs, message", [
    ((8, 4), dict(stride=2, shortcut="A"), r"option A pads channels with zeros, so it cannot "
                                           r"narrow the stream \(8 -> 4\)"),
    ((8, 8), dict(stride=3), "stride must be 1 or 2, got 3"),
    ((8,), dict(residual=False, survival=0.5), "apply to residual blocks only"),
    ((8,), dict(batchnorm="yes"), "batchnorm must be True or False"),
])
def test_bad_block_arguments_are_rejected(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        BasicBlock(*args, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(drop_at=8), r"drop_at must be < steps \(8\), got 8"),
    (dict(steps=1), "steps must be an integer >= 2, got 1"),
    (dict(lr=0), "lr must be > 0"),
])
def test_bad_train_resnet_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_resnet(ResNet1d(8, 4, seed=0), signals(8), torch.zeros(8, dtype=torch.long),
                     **{**dict(steps=8), **kwargs})
    with pytest.raises(ValueError, match="model must be a ResNet1d, got DeepMLP"):
        train_resnet(dl.DeepMLP(2, 4), torch.randn(8, 2), torch.zeros(8, dtype=torch.long))


def test_scores_of_one_network_refuse_a_stack_and_point_to_member_scores():
    stack, y = ResNetStack(8, 4, seeds=[0, 1]), torch.arange(10) % 10
    with pytest.raises(ValueError, match=r"accuracy needs logits of shape \(n, classes\), "
                                         r"got \(10, 2, 10\).*dl.member_scores"):
        dl.accuracy(stack, signals(10), y)
    with pytest.raises(ValueError, match=r"need targets of shape \(10, 2\), got \(10,\).*"
                                         r"dl.member_scores"):
        dl.evaluate_loss(stack, signals(10), y)


def test_bottleneck_width_must_be_a_multiple_of_four():
    with pytest.raises(ValueError, match="out_width must be a multiple of 4, got 6"):
        BottleneckBlock(4, 6)


def test_bad_inputs_are_rejected():
    model = ResNet1d(8, 4, seed=0)
    with pytest.raises(ValueError, match=r"input must have shape \(batch, length\) or "
                                         r"\(batch, 1, length\), got \(6, 2, 40\)"):
        model(torch.randn(6, 2, 40))
    with pytest.raises(ValueError, match="model must be a dl.ResNetStack, got DeepMLP"):
        member_scores(dl.DeepMLP(2, 4), torch.randn(3, 2), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"got ResNet1d \(one network: dl.evaluate_loss and "
                                         r"dl.accuracy\)"):
        member_scores(model, signals(), torch.zeros(6, dtype=torch.long))
    with pytest.raises(ValueError, match="X and y must have the same length, got 6 and 5"):
        member_scores(ResNetStack(8, 4, seeds=[0, 1]), signals(), torch.zeros(5, dtype=torch.long))


# ---------------------------------------------------------------- MNIST-1D


def _sha(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def test_mnist1d_is_generated_offline_and_is_the_canonical_default_set(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("MNIST-1D must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    requests = pytest.importorskip("requests")
    monkeypatch.setattr(requests.Session, "request", no_network)
    data._mnist1d_arrays.cache_clear()     # generate now, under the patches
    random.seed(11)
    np.random.seed(11)
    expected_py, expected_np = random.random(), np.random.rand()
    random.seed(11)
    np.random.seed(11)
    X, y, X_test, y_test = dl.load_mnist1d()
    # the generator seeds the global generators; the loader hands them back untouched
    assert (random.random(), np.random.rand()) == (expected_py, expected_np)

    assert X.shape == (4000, 40) and X_test.shape == (1000, 40)
    assert X.dtype == torch.float32 and y.dtype == torch.int64
    assert data.MNIST1D_SHAPE == (4000, 1000, 40, 10)
    assert sorted(set(y.tolist())) == list(range(10))
    x, labels, x_test, labels_test = data._mnist1d_arrays()
    # checksums of the default set (seed 42): labels exactly, signals to 4 decimals
    assert _sha(labels.astype(np.int64)) == (
        "d97dc7aecec8ad6b5d8f143ba3e9c4bd7e25c420d7dfc2eb990591cfc0ed3e15")
    assert _sha(labels_test.astype(np.int64)) == (
        "8de99be3ff9dab15ae0dc072c3d6ced7cf6b33d365888ce4a386fc944489452c")
    assert _sha(np.round(x, 4)) == (
        "f91cbef436fe6389aad154802e6d0f885a756d39419475d2a46ff44d5a1e0c2a")
    assert _sha(np.round(x_test, 4)) == (
        "7db7276cf24e17b52b213f8073241417bb683de43ec559b1a9a24d70a7b48468")
    torch.testing.assert_close(X, torch.tensor(x, dtype=torch.float32))


def test_mnist1d_is_cached_and_every_call_returns_fresh_tensors():
    first = dl.load_mnist1d()
    first[0].zero_()                       # a notebook that edits its copy ...
    second = dl.load_mnist1d()
    assert second[0].abs().sum() > 0       # ... does not change the next one
    assert data._mnist1d_arrays.cache_info().currsize == 1
