"""Several seeds' ResNets side by side, computed as one model: :class:`ResNetStack`.

A *stack* here is a stack of networks, one per seed (its *members*), not the stack of layers
inside one network. ``ResNetStack(20, 8, seeds=[0, 1, 2])`` holds the three networks
``ResNet1d(20, 8, seed=s)``, built by :class:`depthlab.ResNet1d` itself, with each layer of the
three laid side by side in one layer: a convolution becomes one grouped convolution
(``groups=3``: the networks' channels never mix), a BatchNorm one BatchNorm over all their
channels (its statistics are per channel). The stack returns logits of shape
``(batch, 3, classes)``; :func:`depthlab.train` trains it on ``model.targets(y)`` as each
network would be trained alone on the same minibatches (on the CPU to float rounding; on a GPU,
cuDNN's default TF32 convolutions round more coarsely), and :func:`member_scores` measures each
network. ``tests/test_resnet.py`` checks both against networks trained alone.

Two differences from training the networks one by one:

* the training loop stops the whole stack when its loss stops being finite, so one network
  that diverges ends the others' training at that step too (``History.diverged_at``);
* the gradient of the logits is scaled by ``K`` (see :meth:`ResNetStack.read_out`), right for
  the training loss, the mean over the networks, and ``K`` times too large for anything else
  differentiated through a stack's logits.

Why grouped convolutions and not ``torch.vmap``, which :mod:`depthlab.fast.sweep` uses for
MLPs and transformers: BatchNorm updates its running statistics in place, and ``vmap``'s ways
around that (PyTorch's "Patching Batch Norm") all drop the running statistics, which a ResNet
needs in evaluation mode.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .._checks import positive_int
from .._checks import seed as check_seed
from ..resnet import BasicBlock, BottleneckBlock, ResNet1d
from ..seeds import seeded
from ..training import _evaluating


def _side_by_side(layers: list[nn.Module]) -> nn.Module:
    """One layer computing ``layers`` (the same layer of K networks) on K groups of channels."""
    first, k = layers[0], len(layers)
    if isinstance(first, nn.Conv1d):
        wide = nn.Conv1d(k * first.in_channels, k * first.out_channels, first.kernel_size,
                         stride=first.stride, padding=first.padding, groups=k,
                         bias=first.bias is not None)
    elif isinstance(first, nn.BatchNorm1d):
        wide = nn.BatchNorm1d(k * first.num_features, eps=first.eps, momentum=first.momentum)
    else:  # pragma: no cover - ResNet1d has no other layers with parameters
        raise TypeError(f"cannot lay {type(first).__name__} layers side by side")
    with torch.no_grad():
        for name, tensor in wide.state_dict().items():
            if name == "num_batches_tracked":
                continue
            tensor.copy_(torch.cat([layer.state_dict()[name] for layer in layers]))
    return wide


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by ``factor`` backward."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


def _check_seeds(seeds) -> list[int]:
    if (isinstance(seeds, Sequence) and not isinstance(seeds, str) and len(seeds) > 0):
        checked = [check_seed(f"seeds[{i}]", s) for i, s in enumerate(seeds)]
        if len(set(checked)) != len(checked):
            raise ValueError(f"the seeds of a stack of networks must differ, got {list(seeds)}")
        return checked
    raise ValueError(f"seeds must be a non-empty list of distinct integers >= 0, one network "
                     f"per seed, got {seeds!r} (one network is dl.ResNet1d(..., seed=s))")


class _Stacked:
    """What a block of a stack does differently: it holds ``members`` networks' channels side
    by side, and each network draws its own dropped blocks. (``ResNetStack`` sets ``members``
    and ``_generators`` after building the block; ``in_width`` and ``out_width`` stay one
    network's widths.)"""

    members: int
    _generators: list[torch.Generator] | None

    def keep(self, x: torch.Tensor) -> torch.Tensor | float:
        """One draw per network, each from its own generator, over that network's channels."""
        if self.survival == 1.0 or not self.training:
            return super().keep(x)
        draws = torch.stack([torch.rand((), generator=g) for g in self._generators])
        keep = (draws < self.survival).to(x.dtype)
        return keep.repeat_interleave(self.out_width).to(x.device)[None, :, None]

    def _zero_pad(self, x: torch.Tensor) -> torch.Tensor:
        """Option A's zero channels, appended to each network's channels."""
        n, _, length = x.shape
        x = super()._zero_pad(x.reshape(n, self.members, self.in_width, length))
        return x.reshape(n, self.members * self.out_width, length)


class _StackedBasicBlock(_Stacked, BasicBlock):
    pass


class _StackedBottleneckBlock(_Stacked, BottleneckBlock):
    pass


class ResNetStack(ResNet1d):
    """The networks ``ResNet1d(depth, width, classes, seed=s, **options)``, one per seed in
    ``seeds``, computed side by side as one model (see the module docstring).

    Input: signals ``(batch, length)`` or ``(batch, 1, length)``, which every network reads.
    Output: logits ``(batch, K, classes)`` for ``K`` seeds. ``model.stream(u)`` returns streams
    of shape ``(batch, K * channels, length)``, network ``k``'s channels in the ``k``-th block
    of ``channels``; each layer's weights (``model.block_weights()`` too) likewise hold network
    ``k``'s in their ``k``-th block along the first axis. ``model.members`` is ``K``,
    ``model.seeds`` the seeds; ``width``, ``out_width`` and ``classes`` are one network's.

    Introduced in Chapter 7 (chapters/07_resnets_as_built); Lab 5 trains its networks so.
    """

    block_types = {"basic": _StackedBasicBlock, "bottleneck": _StackedBottleneckBlock}

    def __init__(self, depth: int = 20, width: int = 16, classes: int = 10, *, seeds=None,
                 **options):
        if "seed" in options:
            raise ValueError("a ResNetStack takes seeds=[...], one network per seed, not seed")
        seeds = _check_seeds(seeds)
        # the networks, each exactly as ResNet1d builds and initializes it alone
        networks = [ResNet1d(depth, width, classes, seed=s, **options) for s in seeds]
        # a skeleton of the same architecture, with the stack's block classes; every layer of
        # it is replaced below by the networks' layers side by side
        super().__init__(depth, width, classes, seed=seeds[0], **options)
        del self.seed
        self.seeds, self.members = seeds, len(seeds)
        with seeded(seeds[0]):  # building layers draws nothing from the global generator
            self._lay_side_by_side(networks)

    def _lay_side_by_side(self, networks: list[ResNet1d]) -> None:
        layers = [dict(net.named_modules()) for net in networks]
        for name, module in list(self.named_modules()):
            if isinstance(module, (nn.Conv1d, nn.BatchNorm1d)):
                parent, _, attr = name.rpartition(".")
                setattr(self.get_submodule(parent), attr,
                        _side_by_side([net_layers[name] for net_layers in layers]))
        for l, block in enumerate(self.blocks):
            # each network's block draws its drops from that network's own generator
            block.members = self.members
            block._generator = None  # the skeleton's; the networks' own are these:
            block._generators = ([net.blocks[l]._generator for net in networks]
                                 if block.survival < 1.0 else None)

    def _input(self, u: torch.Tensor) -> torch.Tensor:
        return super()._input(u).expand(-1, self.members, -1)  # every network reads u

    def read_out(self, x: torch.Tensor) -> torch.Tensor:
        """The logits ``(batch, K, classes)``; their gradient is scaled by ``K`` (below)."""
        logits = super().read_out(x)                            # (batch, K * classes)
        logits = logits.view(len(logits), self.members, self.classes)
        # The training loss is the mean over the K networks, which would give each 1/K of its
        # own gradient; scaling the gradient back by K makes every network's update exactly
        # the one it would get if it were trained alone.
        return _ScaleGrad.apply(logits, float(self.members)) if self.members > 1 else logits

    def targets(self, y: torch.Tensor) -> torch.Tensor:
        """``y`` once per network, shape ``(batch, K)``."""
        return y[:, None].expand(-1, self.members)


@torch.no_grad()
def member_scores(model: ResNetStack, X: torch.Tensor, y: torch.Tensor, *,
                  batch_size: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Cross-entropy and accuracy of each network of a :class:`ResNetStack` on ``(X, y)``, in
    evaluation mode (one network: :func:`depthlab.evaluate_loss` and :func:`depthlab.accuracy`).

    Returns ``(loss, accuracy)``, two arrays with one entry per network. The model keeps the
    mode (train or eval) it had.

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    if not isinstance(model, ResNetStack):
        raise ValueError(f"model must be a dl.ResNetStack, got {type(model).__name__} (one "
                         f"network: dl.evaluate_loss and dl.accuracy)")
    if len(X) != len(y):
        raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}")
    batch_size = positive_int("batch_size", batch_size)
    device = next(model.parameters()).device
    with _evaluating(model):
        losses, hits = [], []
        for start in range(0, len(X), batch_size):
            xb = X[start:start + batch_size].to(device)
            yb = y[start:start + batch_size].to(device)
            logits = model(xb)                                         # (batch, K, classes)
            ce = nn.functional.cross_entropy(logits.permute(0, 2, 1), model.targets(yb),
                                             reduction="none")          # (batch, K)
            losses.append(ce.sum(0))
            hits.append((logits.argmax(-1) == yb[:, None]).sum(0))
        n = len(X)
        loss = (torch.stack(losses).sum(0) / n).double().cpu().numpy()
        acc = (torch.stack(hits).sum(0).double() / n).cpu().numpy()
    return loss, acc
