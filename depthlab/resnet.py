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

**Seeds side by side.** ``ResNet1d(..., seed=[0, 1, 2])`` holds three networks of the same
architecture, one per seed, computed together with grouped convolutions (their channels never
mix): it returns logits of shape ``(batch, 3, classes)``, trains with :func:`depthlab.train` on
``model.targets(y)`` as if each network were trained alone on the same minibatches, and
:func:`member_scores` measures each one. Member ``k`` is initialized exactly as
``ResNet1d(..., seed=seeds[k])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np
import torch
from torch import nn

from ._checks import boolean, choice, finite_float, positive_int
from ._checks import seed as check_seed
from .seeds import member_generators, seeded
from .training import History, _evaluating, train

ORDERS = ("v1", "preact")
BLOCKS = ("basic", "bottleneck")
SHORTCUTS = ("A", "B")
EXPANSION = 4  # a bottleneck block's output width over its inner width (He et al.)


# ---------------------------------------------------------------- layers of K members


def _conv(members: int, c_in: int, c_out: int, taps: int, stride: int = 1, bias: bool = False):
    """``members`` independent 1-D convolutions in one grouped ``nn.Conv1d`` ("same" padding)."""
    return nn.Conv1d(members * c_in, members * c_out, taps, stride=stride, padding=taps // 2,
                     groups=members, bias=bias)


def _norm(members: int, channels: int, batchnorm: bool) -> nn.Module:
    """A BatchNorm over every channel of every member (its statistics are per channel, so the
    members stay independent), or nothing."""
    return nn.BatchNorm1d(members * channels) if batchnorm else nn.Identity()


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by ``factor`` backward."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


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
                 survival, members, seed, generators):
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
        self.members = positive_int("members", members)
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
            k = self.members
            proj = [_conv(k, self.in_width, self.out_width, 1, self.stride)]
            if order == "v1" and batchnorm:
                proj.append(_norm(k, self.out_width, True))
            self.projection = nn.Sequential(*proj)
        # stochastic depth draws from one generator per member, so that member k drops the
        # same blocks whether it is trained alone or beside others
        self._generators = None
        if residual and self.survival < 1.0:
            self._generators = (generators if generators is not None
                                else member_generators(seed, self.members))

    def branch(self, h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def shortcut(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """``S``: the identity, option A (from ``x``) or option B (a projection of ``h``, the
        input the branch reads: ``x`` itself, or BN-ReLU of ``x`` in pre-activation order)."""
        if self.shortcut_option is None:
            return x
        if self.shortcut_option == "B":
            return self.projection(h)
        # option A: subsample with the block's stride, then append zero channels per member
        n, _, length = x.shape
        x = x[:, :, ::self.stride].reshape(n, self.members, self.in_width, -1)
        x = nn.functional.pad(x, (0, 0, 0, self.out_width - self.in_width))
        return x.reshape(n, self.members * self.out_width, -1)

    def keep(self, x: torch.Tensor) -> torch.Tensor | float:
        """The factor on the branch: 1 without stochastic depth; in training a 0/1 draw per
        member (whole block, whole minibatch); in evaluation the survival probability."""
        if self.survival == 1.0:
            return 1.0
        if not self.training:
            return self.survival
        draws = torch.stack([torch.rand((), generator=g) for g in self._generators])
        keep = (draws < self.survival).to(x.dtype)
        return keep.repeat_interleave(self.out_width).to(x.device)[None, :, None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # shared by BasicBlock and BottleneckBlock (their base class, _Block)
        # pre-activation order: the branch, and option B's projection, read
        # h = ReLU(BN(x)); v1 order: they read x itself
        h = torch.relu(self.bn_in(x)) if self.order == "preact" else x
        F = self.branch(h)
        if self.detach_branch:  # a switch for measurements: no gradient through F
            F = F.detach()
        if self.residual:
            # keep is 1, or with stochastic depth a draw of 0 or 1 (in evaluation
            # the block's survival probability)
            out = self.shortcut(x, h) + self.keep(x) * F
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
    members:
        How many independent networks the block holds side by side (see :class:`ResNet1d`).
    seed:
        Seed of the stochastic-depth draws (an integer >= 0, one per member), or None.

    The weights are PyTorch's defaults; :class:`ResNet1d` re-initializes them (He init).

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """

    def __init__(self, in_width: int, out_width: int | None = None, *, stride: int = 1,
                 residual: bool = True, order: str = "v1", shortcut: str | None = None,
                 batchnorm: bool = True, survival: float = 1.0, members: int = 1, seed=None,
                 _generators=None):
        super().__init__(in_width, out_width, stride, residual, order, shortcut, batchnorm,
                         survival, members, seed, _generators)
        k, c_in, c_out, bias = self.members, self.in_width, self.out_width, not batchnorm
        self.bn_in = _norm(k, c_in, batchnorm) if order == "preact" else None
        self.conv1 = _conv(k, c_in, c_out, 3, self.stride, bias)
        self.bn1 = _norm(k, c_out, batchnorm)
        self.conv2 = _conv(k, c_out, c_out, 3, 1, bias)
        self.bn2 = _norm(k, c_out, batchnorm) if order == "v1" else None

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
                 batchnorm: bool = True, survival: float = 1.0, members: int = 1, seed=None,
                 _generators=None):
        super().__init__(in_width, out_width, stride, residual, order, shortcut, batchnorm,
                         survival, members, seed, _generators)
        if self.out_width % EXPANSION:
            raise ValueError(f"a bottleneck block's out_width must be a multiple of "
                             f"{EXPANSION}, got {self.out_width}")
        k, c_in, c_out, bias = self.members, self.in_width, self.out_width, not batchnorm
        mid = c_out // EXPANSION
        self.bn_in = _norm(k, c_in, batchnorm) if order == "preact" else None
        self.conv1 = _conv(k, c_in, mid, 1, 1, bias)
        self.bn1 = _norm(k, mid, batchnorm)
        self.conv2 = _conv(k, mid, mid, 3, self.stride, bias)
        self.bn2 = _norm(k, mid, batchnorm)
        self.conv3 = _conv(k, mid, c_out, 1, 1, bias)
        self.bn3 = _norm(k, c_out, batchnorm) if order == "v1" else None

    def branch(self, h: torch.Tensor) -> torch.Tensor:
        """``F``: 1-tap, 3-tap and 1-tap convolutions with BN-ReLU between them, then BN in v1
        order."""
        F = self.conv3(torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(h)))))))
        return self.bn3(F) if self.order == "v1" else F


# ---------------------------------------------------------------- seeds and initialization


def _seeds(seed) -> tuple[list[int | None], bool]:
    """``(seeds, stacked)``: one seed per member, and whether the model has a member axis."""
    if seed is None or isinstance(seed, Integral) and not isinstance(seed, bool):
        return [None if seed is None else check_seed("seed", seed)], False
    if isinstance(seed, Sequence) and not isinstance(seed, str) and len(seed) > 0:
        seeds = [check_seed("seed", s) for s in seed]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"the seeds of a stack of networks must differ, got {list(seed)}")
        return seeds, True
    raise ValueError(f"seed must be an integer >= 0, None, or a non-empty list of integers "
                     f">= 0 (one network per seed), got {seed!r}")


@torch.no_grad()
def _he_init(model: nn.Module, seeds: list[int | None]) -> None:
    """He initialization of every convolution, member by member, each from its own seed.

    Convolutions: N(0, 2 / fan_in) (He et al. 2015), biases 0; the head: PyTorch's default
    range U(-1/sqrt(fan_in), 1/sqrt(fan_in)), bias 0; BatchNorm: scale 1, shift 0. Member ``k``
    draws only from ``seeds[k]``, in module order, so it is the network a single-seed model with
    that seed would be.
    """
    k = len(seeds)
    gens = [None if s is None else torch.Generator().manual_seed(s) for s in seeds]
    for module in model.modules():
        if not isinstance(module, nn.Conv1d):
            continue
        per_member = module.weight.shape[0] // k
        for m, g in enumerate(gens):
            w = module.weight[m * per_member:(m + 1) * per_member]
            if module is model.head:
                bound = 1.0 / (w.shape[1] * w.shape[2]) ** 0.5
                nn.init.uniform_(w, -bound, bound, generator=g)
            else:
                nn.init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu", generator=g)
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
        An integer >= 0 (one network), a list of distinct integers (one network per seed, side
        by side: the logits get a member axis), or None (PyTorch's global random state).

    Input: signals of shape ``(batch, length)`` or ``(batch, 1, length)``. Output: logits
    ``(batch, classes)``, or ``(batch, members, classes)`` for a list of seeds.
    ``model.blocks`` lists the blocks; ``model.stream(u)`` returns the stream after the stem
    and after every block.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """

    def __init__(self, depth: int = 20, width: int = 16, classes: int = 10, *,
                 residual: bool = True, order: str = "v1", block: str = "basic",
                 shortcut: str | None = None, batchnorm: bool = True, survival: float = 1.0,
                 seed=None):
        super().__init__()
        seeds, self.stacked = _seeds(seed)
        # PyTorch's layers draw default weights from the global generator when they are built;
        # with a seed, draw those from a private one, so that building a model changes
        # nothing else (they are overwritten by He init below anyway)
        with seeded(seeds[0]):
            self._build(seeds, depth, width, classes, residual, order, block, shortcut,
                        batchnorm, survival)

    def _build(self, seeds, depth, width, classes, residual, order, block, shortcut, batchnorm,
               survival):
        self.seeds = seeds
        self.members = k = len(seeds)
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
        Block = BasicBlock if block == "basic" else BottleneckBlock
        grow = 1 if block == "basic" else EXPANSION
        # one random source per member, shared by all blocks (drawn in block order)
        gens = (member_generators(seeds if None not in seeds else None, k)
                if residual and survival < 1.0 else None)

        self.stem = _conv(k, 1, width, 3, 1, not batchnorm)
        self.stem_norm = _norm(k, width, batchnorm) if order == "v1" else nn.Identity()
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
                                    members=k, _generators=gens))
                c = out
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = _norm(k, c, batchnorm) if order == "preact" else nn.Identity()
        self.head = _conv(k, c, classes, 1, 1, bias=True)
        self.classes, self.out_width = classes, c
        _he_init(self, seeds)

    def _input(self, u: torch.Tensor) -> torch.Tensor:
        if u.dim() == 2:
            u = u[:, None]
        if u.dim() != 3 or u.shape[1] != 1:
            raise ValueError(f"input must have shape (batch, length) or (batch, 1, length), "
                             f"got {tuple(u.shape)}")
        return u.expand(-1, self.members, -1)  # every member reads the same signal

    def _stem(self, u: torch.Tensor) -> torch.Tensor:
        x = self.stem(self._input(u))
        # v1 normalizes and activates after the stem; pre-activation leaves that to the blocks
        return torch.relu(self.stem_norm(x)) if self.config["order"] == "v1" else x

    def stream(self, u: torch.Tensor) -> list[torch.Tensor]:
        """``[x_0, x_1, ..., x_L]``: the stream after the stem and after each block, shape
        ``(batch, members * channels, length)``."""
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
        logits = self.head(x.mean(-1, keepdim=True))[..., 0]      # (batch, members * classes)
        if not self.stacked:
            return logits
        logits = logits.view(len(logits), self.members, self.classes)
        # The training loss is the mean over members, which would give each member 1/K of its
        # own gradient; scaling the gradient back by K makes every member's update exactly
        # the one it would get if it were trained alone.
        return _ScaleGrad.apply(logits, float(self.members)) if self.members > 1 else logits

    def targets(self, y: torch.Tensor) -> torch.Tensor:
        """The labels to train on: ``y`` itself, or ``y`` once per member, shape
        ``(batch, members)``, for a stack of networks."""
        return y[:, None].expand(-1, self.members) if self.stacked else y

    def block_weights(self) -> list[torch.Tensor]:
        """The first convolution's weight of each block (what :func:`depthlab.train` records
        per block; for a stack, all members' weights together)."""
        return [b.first_weight() for b in self.blocks]

    def survival_probabilities(self) -> np.ndarray:
        """Each block's survival probability ``p_l`` (all 1 without stochastic depth)."""
        return np.array([b.survival for b in self.blocks])


@torch.no_grad()
def member_scores(model: ResNet1d, X: torch.Tensor, y: torch.Tensor, *,
                  batch_size: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Cross-entropy and accuracy of each network of ``model`` on ``(X, y)``, in evaluation mode.

    Returns ``(loss, accuracy)``, two arrays with one entry per member (one entry for a
    single network). The model keeps the mode (train or eval) it had.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    if not isinstance(model, ResNet1d):
        raise ValueError(f"model must be a ResNet1d, got {type(model).__name__}")
    if len(X) != len(y):
        raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}")
    batch_size = positive_int("batch_size", batch_size)
    device = next(model.parameters()).device
    with _evaluating(model):
        losses, hits = [], []
        for start in range(0, len(X), batch_size):
            xb = X[start:start + batch_size].to(device)
            yb = y[start:start + batch_size].to(device)
            logits = model(xb)
            if not model.stacked:
                logits = logits[:, None]
            ce = nn.functional.cross_entropy(logits.permute(0, 2, 1),
                                             yb[:, None].expand(-1, model.members),
                                             reduction="none")          # (batch, members)
            losses.append(ce.sum(0))
            hits.append((logits.argmax(-1) == yb[:, None]).sum(0))
        n = len(X)
        loss = (torch.stack(losses).sum(0) / n).double().cpu().numpy()
        acc = (torch.stack(hits).sum(0).double() / n).cpu().numpy()
    return loss, acc


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
    and draws its minibatches from ``seed + 1000``. ``y`` holds one label per example; a stack
    of networks gets them once per member (:meth:`ResNet1d.targets`). Returns one
    :class:`~depthlab.training.History` of all ``steps`` (losses and accuracies on the
    minibatches, averaged over the members of a stack).

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
