"""Convolutional residual networks as He et al. built them, for 1-D signals such as MNIST-1D.

A *basic block* maps a stream ``x`` of shape ``(batch, channels, length)`` to the next one with
two 3-tap convolutions and BatchNorm, in one of two orders:

=================  ==============================================================  ==========
``order="v1"``     ``x_l = ReLU(S(x) + BN(conv(ReLU(BN(conv(x))))))``              He 2016a
``order="preact"`` ``x_l = S(x) + conv(ReLU(BN(conv(ReLU(BN(x))))))``              He 2016b
=================  ==============================================================  ==========

A *bottleneck block* has three convolutions instead, 1-tap (to a quarter of the output width),
3-tap, 1-tap (back to the output width), in the same two orders. A *plain* block
(``residual=False``) is the same block without the shortcut ``S``: a v1 plain network is He et
al.'s stack of conv-BN-ReLU layers.

The shortcut ``S`` is the identity when the block keeps the shape of the stream. When it halves
the length (``stride=2``) or widens the channels it is

* option ``"A"``: the identity, subsampled with the same stride and padded with zero channels
  (no parameters; He et al.'s CIFAR-10 networks);
* option ``"B"``: a 1-tap convolution with that stride (plus a BatchNorm in v1 order), a
  projection with ``in_width * out_width`` weights.

Stochastic depth (Huang et al. 2016): a residual block with survival probability ``p < 1``
keeps its branch with probability ``p`` at each training step and otherwise computes only its
shortcut (the whole block, for the whole minibatch); in evaluation mode the branch is always on
and scaled by ``p``.

:class:`ResNet1d` stacks the blocks the way He et al. built their CIFAR-10 networks: one
convolution (the stem), three stages of ``n`` blocks of widths ``w, 2w, 4w`` (the first block of
stages 2 and 3 halves the length), global average pooling and a linear head. Depth counts the
weight layers, ``6n + 2`` with basic blocks (8, 20, 56, 110, ...) and ``9n + 2`` with bottleneck
blocks.

Everything here is one network. Several seeds' networks trained side by side, one model
computing them all, are :class:`depthlab.fast.ResNetStack`, built from these networks.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ._checks import boolean, choice, finite_float, positive_int
from ._checks import seed as check_seed
from .seeds import seeded, stochastic_depth_generator
from .training import History, train

ORDERS = ("v1", "preact")
BLOCKS = ("basic", "bottleneck")
SHORTCUTS = ("A", "B")
EXPANSION = 4  # a bottleneck block's output width over its inner width (He et al.)


# ---------------------------------------------------------------- layers


def _conv(c_in: int, c_out: int, taps: int, stride: int = 1, bias: bool = False) -> nn.Conv1d:
    """A 1-D convolution with "same" padding (the length changes only with the stride)."""
    return nn.Conv1d(c_in, c_out, taps, stride=stride, padding=taps // 2, bias=bias)


def _norm(channels: int, batchnorm: bool) -> nn.Module:
    """A BatchNorm over ``channels``, or nothing."""
    return nn.BatchNorm1d(channels) if batchnorm else nn.Identity()


def _check_survival(survival) -> float:
    survival = finite_float("survival", survival)
    if not 0 < survival <= 1:
        raise ValueError(f"survival must be a probability in (0, 1] (1 keeps every block), "
                         f"got {survival!r}")
    return survival


# ---------------------------------------------------------------- blocks


class _Block(nn.Module):
    """What basic and bottleneck blocks share: the shortcut, the order and stochastic depth."""

    def __init__(self, in_width, out_width, stride, residual, order, shortcut, batchnorm,
                 survival, seed, generator):
        super().__init__()
        self.in_width = positive_int("in_width", in_width)
        self.out_width = self.in_width if out_width is None else positive_int("out_width",
                                                                               out_width)
        self.stride = positive_int("stride", stride)
        if self.stride > 2:
            raise ValueError(f"stride must be 1 or 2, got {stride!r}")
        self.residual = boolean("residual", residual)
        self.batchnorm = boolean("batchnorm", batchnorm)
        self.order = choice("order", order, ORDERS)
        self.survival = _check_survival(survival)
        if not residual and (shortcut is not None or self.survival != 1.0):
            raise ValueError("shortcut and survival apply to residual blocks only "
                             "(residual=True); a plain block has no shortcut to fall back on")
        changes_shape = self.stride != 1 or self.in_width != self.out_width
        self.shortcut_option = None
        if residual and changes_shape:
            self.shortcut_option = choice("shortcut", "A" if shortcut is None else shortcut,
                                          SHORTCUTS)
            if self.shortcut_option == "A" and self.out_width < self.in_width:
                raise ValueError(f"option A pads channels with zeros, so it cannot narrow the "
                                 f"stream ({self.in_width} -> {self.out_width}); use "
                                 f"shortcut='B'")
        elif residual and shortcut is not None:
            choice("shortcut", shortcut, SHORTCUTS)  # a typo is still an error
        self.detach_branch = False  # for measurements: gradients through the shortcut only
        self.projection = None
        if self.shortcut_option == "B":
            proj = [_conv(self.in_width, self.out_width, 1, self.stride)]
            if order == "v1" and batchnorm:
                proj.append(_norm(self.out_width, True))
            self.projection = nn.Sequential(*proj)
        # stochastic depth's draws; a network passes one generator to all its blocks
        self._generator = None
        if residual and self.survival < 1.0:
            self._generator = (generator if generator is not None
                               else stochastic_depth_generator(seed))

    def branch(self, h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def shortcut(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """``S``: the identity, option A (from ``x``) or option B (a projection of ``h``, the
        input the branch reads: ``x`` itself, or BN-ReLU of ``x`` in pre-activation order)."""
        if self.shortcut_option is None:
            return x
        if self.shortcut_option == "B":
            return self.projection(h)
        # option A: subsample with the block's stride, then append zero channels
        return self._zero_pad(x[:, :, ::self.stride])

    def _zero_pad(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` with ``out_width - in_width`` zero channels appended (a block of a
        :class:`~depthlab.fast.ResNetStack` appends them to each network's channels)."""
        return nn.functional.pad(x, (0, 0, 0, self.out_width - self.in_width))

    def keep(self, x: torch.Tensor) -> torch.Tensor | float:
        """The factor on the branch: 1 without stochastic depth; in training a draw of 0 or 1
        (whole block, whole minibatch; in ``x``'s dtype); in evaluation the survival
        probability."""
        if self.survival == 1.0:
            return 1.0
        if not self.training:
            return self.survival
        draw = torch.rand((), generator=self._generator)
        return (draw < self.survival).to(x.dtype).to(x.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # shared by BasicBlock and BottleneckBlock (their base class, _Block)
        # pre-activation order: the branch, and option B's projection, read
        # h = ReLU(BN(x)); v1 order: they read x itself
        h = torch.relu(self.bn_in(x)) if self.order == "preact" else x
        F = self.branch(h)
        if self.detach_branch:  # a switch for measurements: no gradient through F
            F = F.detach()
        if self.residual:
            # keep: 1 (the product skipped), or with stochastic depth a draw of 0 or 1
            kept = F if self.survival == 1.0 else self.keep(x) * F
            out = self.shortcut(x, h) + kept
        else:  # residual=False: a plain block, no shortcut
            out = F
        return torch.relu(out) if self.order == "v1" else out

    def first_weight(self) -> torch.Tensor:
        return self.conv1.weight


class BasicBlock(_Block):
    """Two 3-tap convolutions with BatchNorm, and a shortcut around them (see the module
    docstring for the formulas).

    Parameters
    ----------
    in_width, out_width:
        Channels in and out (``out_width`` defaults to ``in_width``).
    stride:
        1, or 2 to halve the length (in the first convolution, and in the shortcut).
    residual:
        Add the shortcut (``True``) or not (``False``: a plain block).
    order:
        ``"v1"`` (conv-BN-ReLU-conv-BN, add, ReLU) or ``"preact"`` (BN-ReLU-conv-BN-ReLU-conv,
        add, nothing after the addition).
    shortcut:
        ``"A"`` (default; zero-padded identity) or ``"B"`` (1-tap projection), used only where
        the block changes the width or the length.
    batchnorm:
        ``False`` removes every BatchNorm (the convolutions then get biases).
    survival:
        Stochastic depth's survival probability in (0, 1] (residual blocks only).
    seed:
        Seed of the stochastic-depth draws (an integer >= 0), or None.

    The weights are PyTorch's defaults; :class:`ResNet1d` re-initializes them (He init).

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """

    def __init__(self, in_width: int, out_width: int | None = None, *, stride: int = 1,
                 residual: bool = True, order: str = "v1", shortcut: str | None = None,
                 batchnorm: bool = True, survival: float = 1.0, seed: int | None = None,
                 _generator=None):
        super().__init__(in_width, out_width, stride, residual, order, shortcut, batchnorm,
                         survival, seed, _generator)
        c_in, c_out, bias = self.in_width, self.out_width, not batchnorm
        self.bn_in = _norm(c_in, batchnorm) if order == "preact" else None
        self.conv1 = _conv(c_in, c_out, 3, self.stride, bias)
        self.bn1 = _norm(c_out, batchnorm)
        self.conv2 = _conv(c_out, c_out, 3, 1, bias)
        self.bn2 = _norm(c_out, batchnorm) if order == "v1" else None

    def branch(self, h: torch.Tensor) -> torch.Tensor:
        """F: conv-BN-ReLU-conv, then BN in v1 order. ``h`` is the block's input
        x (v1) or ReLU(BN(x)) (pre-activation; ``forward`` computes it)."""
        F = self.conv2(torch.relu(self.bn1(self.conv1(h))))
        return self.bn2(F) if self.order == "v1" else F


class BottleneckBlock(_Block):
    """Three convolutions, 1-tap to ``out_width / 4`` channels, 3-tap, 1-tap back to
    ``out_width``, with BatchNorm and a shortcut; the parameters are those of
    :class:`BasicBlock` (``out_width`` must be a multiple of 4).

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """

    def __init__(self, in_width: int, out_width: int | None = None, *, stride: int = 1,
                 residual: bool = True, order: str = "v1", shortcut: str | None = None,
                 batchnorm: bool = True, survival: float = 1.0, seed: int | None = None,
                 _generator=None):
        super().__init__(in_width, out_width, stride, residual, order, shortcut, batchnorm,
                         survival, seed, _generator)
        if self.out_width % EXPANSION:
            raise ValueError(f"a bottleneck block's out_width must be a multiple of "
                             f"{EXPANSION}, got {self.out_width}")
        c_in, c_out, bias = self.in_width, self.out_width, not batchnorm
        mid = c_out // EXPANSION
        self.bn_in = _norm(c_in, batchnorm) if order == "preact" else None
        self.conv1 = _conv(c_in, mid, 1, 1, bias)
        self.bn1 = _norm(mid, batchnorm)
        self.conv2 = _conv(mid, mid, 3, self.stride, bias)
        self.bn2 = _norm(mid, batchnorm)
        self.conv3 = _conv(mid, c_out, 1, 1, bias)
        self.bn3 = _norm(c_out, batchnorm) if order == "v1" else None

    def branch(self, h: torch.Tensor) -> torch.Tensor:
        """``F``: 1-tap, 3-tap and 1-tap convolutions with BN-ReLU between them, then BN in v1
        order."""
        F = self.conv3(torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(h)))))))
        return self.bn3(F) if self.order == "v1" else F


# ---------------------------------------------------------------- initialization


@torch.no_grad()
def _he_init(model: nn.Module, generator: torch.Generator | None) -> None:
    """He initialization of every convolution of ``model``, in module order, from ``generator``.

    Convolutions: N(0, 2 / fan_in) (He et al. 2015), biases 0; the head: PyTorch's default
    range U(-1/sqrt(fan_in), 1/sqrt(fan_in)), bias 0; BatchNorm: scale 1, shift 0 (PyTorch's
    defaults).
    """
    for module in model.modules():
        if not isinstance(module, nn.Conv1d):
            continue
        w = module.weight
        if module is model.head:
            bound = 1.0 / (w.shape[1] * w.shape[2]) ** 0.5
            nn.init.uniform_(w, -bound, bound, generator=generator)
        else:
            nn.init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu", generator=generator)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


# ---------------------------------------------------------------- the network


class ResNet1d(nn.Module):
    """He et al.'s CIFAR-10 network, for 1-D signals: stem, three stages, pooling, head.

    Parameters
    ----------
    depth:
        Number of weight layers: ``6n + 2`` for basic blocks (8, 14, 20, 32, 44, 56, 110, ...),
        ``9n + 2`` for bottleneck blocks (11, 20, 29, ..., 164), with ``n`` blocks per stage.
    width:
        Channels of the first stage (the stages have ``width, 2 width, 4 width``; bottleneck
        stages output four times as many).
    classes:
        Number of outputs.
    residual, order, shortcut, batchnorm:
        As in :class:`BasicBlock`, for every block.
    block:
        ``"basic"`` or ``"bottleneck"``.
    survival:
        Stochastic depth: the survival probability of the *last* block, in (0, 1]. Block
        ``l = 1..L`` survives with ``p_l = 1 - (l / L)(1 - survival)``, Huang et al.'s linear
        decay (1 keeps every block, the default).
    seed:
        An integer >= 0, or None (PyTorch's global random state). Several seeds' networks side
        by side are :class:`depthlab.fast.ResNetStack`.

    Input: signals of shape ``(batch, length)`` or ``(batch, 1, length)``. Output: logits
    ``(batch, classes)``.
    ``model.blocks`` lists the blocks; ``model.stream(u)`` returns the stream after the stem
    and after every block.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """

    # the classes of the blocks (depthlab.fast.ResNetStack builds its own)
    block_types = {"basic": BasicBlock, "bottleneck": BottleneckBlock}

    def __init__(self, depth: int = 20, width: int = 16, classes: int = 10, *,
                 residual: bool = True, order: str = "v1", block: str = "basic",
                 shortcut: str | None = None, batchnorm: bool = True, survival: float = 1.0,
                 seed: int | None = None):
        super().__init__()
        if isinstance(seed, (list, tuple)):
            raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}; several "
                             f"seeds' networks side by side are dl.ResNetStack(..., "
                             f"seeds={list(seed)!r})")
        self.seed = None if seed is None else check_seed("seed", seed)
        # PyTorch's layers draw default weights from the global generator when they are built;
        # with a seed, draw those from a private one, so that building a model changes
        # nothing else (they are overwritten by He init below anyway)
        with seeded(self.seed):
            self._build(depth, width, classes, residual, order, block, shortcut, batchnorm,
                        survival)

    def _build(self, depth, width, classes, residual, order, block, shortcut, batchnorm,
               survival):
        depth = positive_int("depth", depth, minimum=3)
        width = positive_int("width", width)
        classes = positive_int("classes", classes, minimum=2)
        choice("block", block, BLOCKS)
        choice("order", order, ORDERS)
        boolean("residual", residual)
        boolean("batchnorm", batchnorm)
        survival = _check_survival(survival)
        per_block = 2 if block == "basic" else 3
        if (depth - 2) % (3 * per_block):
            allowed = ", ".join(str(3 * per_block * n + 2) for n in (1, 3, 5, 7, 9, 18))
            raise ValueError(f"depth must be {3 * per_block}n + 2 for {block} blocks "
                             f"({allowed}, ...), got {depth}")
        if not residual and (shortcut is not None or survival != 1.0):
            raise ValueError("shortcut and survival apply to residual networks only "
                             "(residual=True)")
        n = (depth - 2) // (3 * per_block)
        self.depth, self.width, self.n = depth, width, n
        self.config = dict(depth=depth, width=width, classes=classes, residual=residual,
                           order=order, block=block, shortcut=shortcut, batchnorm=batchnorm,
                           survival=survival)
        Block = self.block_types[block]
        grow = 1 if block == "basic" else EXPANSION
        # stochastic depth: one random source, shared by all blocks (drawn in block order)
        generator = (stochastic_depth_generator(self.seed)
                     if residual and survival < 1.0 else None)

        self.stem = _conv(1, width, 3, 1, not batchnorm)
        self.stem_norm = _norm(width, batchnorm) if order == "v1" else nn.Identity()
        blocks, c = [], width
        total = 3 * n
        for stage in range(3):
            for i in range(n):
                l = stage * n + i + 1  # block index, 1..total
                p = 1.0 - l / total * (1.0 - survival)
                out = width * 2**stage * grow
                blocks.append(Block(c, out, stride=2 if stage > 0 and i == 0 else 1,
                                    residual=residual, order=order,
                                    shortcut=shortcut if residual else None,
                                    batchnorm=batchnorm, survival=p if residual else 1.0,
                                    _generator=generator))
                c = out
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = _norm(c, batchnorm) if order == "preact" else nn.Identity()
        self.head = _conv(c, classes, 1, 1, bias=True)
        self.classes, self.out_width = classes, c
        _he_init(self, None if self.seed is None else torch.Generator().manual_seed(self.seed))

    def _input(self, u: torch.Tensor) -> torch.Tensor:
        if u.dim() == 2:
            u = u[:, None]
        if u.dim() != 3 or u.shape[1] != 1:
            raise ValueError(f"input must have shape (batch, length) or (batch, 1, length), "
                             f"got {tuple(u.shape)}")
        return u

    def _stem(self, u: torch.Tensor) -> torch.Tensor:
        x = self.stem(self._input(u))
        # v1 normalizes and activates after the stem; pre-activation leaves that to the blocks
        return torch.relu(self.stem_norm(x)) if self.config["order"] == "v1" else x

    def stream(self, u: torch.Tensor) -> list[torch.Tensor]:
        """``[x_0, x_1, ..., x_L]``: the stream after the stem and after each block, shape
        ``(batch, channels, length)``."""
        xs = [self._stem(u)]
        for block in self.blocks:
            xs.append(block(xs[-1]))
        return xs

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        x = self._stem(u)
        for block in self.blocks:
            x = block(x)
        return self.read_out(x)

    def read_out(self, x: torch.Tensor) -> torch.Tensor:
        """The logits from the last stream ``x_L`` (``model(u)`` is ``model.read_out(x_L)``):
        a pre-activation network's final BN-ReLU, global average pooling, the linear head."""
        if self.config["order"] == "preact":
            x = torch.relu(self.final_norm(x))
        return self.head(x.mean(-1, keepdim=True))[..., 0]

    def targets(self, y: torch.Tensor) -> torch.Tensor:
        """The labels to train on: ``y`` itself. (:func:`train_resnet` trains on these, so that
        a :class:`~depthlab.fast.ResNetStack`, which repeats them once per network, trains the
        same way.)"""
        return y

    def block_weights(self) -> list[torch.Tensor]:
        """The first convolution's weight of each block (what :func:`depthlab.train` records
        per block)."""
        return [b.first_weight() for b in self.blocks]

    def survival_probabilities(self) -> np.ndarray:
        """Each block's survival probability ``p_l`` (all 1 without stochastic depth)."""
        return np.array([b.survival for b in self.blocks])


def train_resnet(model: ResNet1d, X: torch.Tensor, y: torch.Tensor, *, steps: int = 400,
                 lr: float = 0.1, drop_at: int | None = None, warmup: int = 0,
                 batch_size: int = 64, weight_decay: float = 1e-4, seed: int = 0,
                 device=None, record: bool = False) -> History:
    """He et al.'s recipe, shortened: SGD with momentum 0.9 and weight decay, the learning rate
    divided by 10 for the last part of training.

    Two calls of :func:`depthlab.train`: ``drop_at`` steps at ``lr`` (after a linear
    ``warmup``), then ``steps - drop_at`` steps at ``lr / 10`` (default ``drop_at``: three
    quarters of ``steps``). He et al. divide the rate by 10 twice, at half and three quarters of
    training; one drop serves a short run. The second call starts with a fresh momentum buffer
    and draws its minibatches from ``seed + 1000``. ``y`` holds one label per example (a
    :class:`~depthlab.fast.ResNetStack` repeats them per network, :meth:`ResNet1d.targets`).
    Returns one :class:`~depthlab.training.History` of all ``steps`` (losses and accuracies on
    the minibatches; for a stack, averaged over its networks, and its gradient norms and update
    ratios are those of all its networks together).

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    if not isinstance(model, ResNet1d):
        raise ValueError(f"model must be a ResNet1d, got {type(model).__name__}")
    steps = positive_int("steps", steps, minimum=2)
    drop_at = (3 * steps) // 4 if drop_at is None else positive_int("drop_at", drop_at)
    if drop_at >= steps:
        raise ValueError(f"drop_at must be < steps ({steps}), got {drop_at}")
    lr = finite_float("lr", lr, positive=True)
    seed = check_seed("seed", seed)
    common = dict(optimizer="sgd", batch_size=batch_size, weight_decay=weight_decay,
                  device=device, record=record)
    targets = model.targets(y)
    first = train(model, X, targets, steps=drop_at, lr=lr, warmup=warmup, seed=seed, **common)
    if first.diverged_at is not None:
        rest = None
    else:
        rest = train(model, X, targets, steps=steps - drop_at, lr=lr / 10, seed=seed + 1000,
                     **common)
    parts = [first] if rest is None else [first, rest]

    def joined(name):
        arrays = [getattr(h, name) for h in parts]
        if rest is None:  # diverged in the first phase: the rest of the run is NaN
            pad = np.full((steps - drop_at, *arrays[0].shape[1:]), np.nan)
            arrays.append(pad)
        return np.concatenate(arrays)

    meta = {**first.meta, "steps": steps, "drop_at": drop_at, "lr_after_drop": lr / 10}
    return History(loss=joined("loss"), accuracy=joined("accuracy"),
                   grad_norms=joined("grad_norms"), update_ratio=joined("update_ratio"),
                   alphas=joined("alphas"), lr=joined("lr"),
                   diverged_at=first.diverged_at if rest is None else (
                       None if rest.diverged_at is None else drop_at + rest.diverged_at),
                   meta=meta)
