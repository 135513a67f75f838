"""Chapter 2's three ways to stack a layer: plain, residual and Highway.

The smallest versions of the blocks that Chapter 2 compares, as the chapter shows them (with
``dl.show_source``) and as its worked solutions train them:

* :func:`branch`: ``F``, the two-layer branch of the original ResNet (Linear, ReLU, Linear);
* :class:`PlainBlock`: ``y = F(x)``, which has to produce the whole map ``H(x)``;
* :class:`ResidualBlock`: ``y = x + F(x)``, which only has to produce ``H(x) - x``;
* :class:`HighwayBlock`: ``y = T * H(x) + (1 - T) * x`` with a learned gate ``T``.

They keep PyTorch's default initialization (the Highway transform excepted, which is He's):
:class:`~depthlab.Block` and :class:`~depthlab.DeepMLP` are the course's configurable versions.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import finite_float, positive_int
from .models import init_linear


def branch(d, h):
    """The branch F: width d to h hidden units and back.

    Introduced in Chapter 2 (chapters/02_residual_learning).
    """
    d, h = positive_int("d", d), positive_int("h", h)
    # F: Linear -> ReLU -> Linear, the two-layer branch of the original ResNet
    return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, d))


class PlainBlock(nn.Module):
    """y = F(x): the block alone.

    Introduced in Chapter 2 (chapters/02_residual_learning).
    """
    def __init__(self, d, h):
        super().__init__()
        self.F = branch(d, h)

    def forward(self, x):
        return self.F(x)  # has to produce H(x) on its own


class ResidualBlock(PlainBlock):
    """y = x + F(x): the same branch, with the shortcut.

    Introduced in Chapter 2 (chapters/02_residual_learning).
    """
    def forward(self, x):
        return x + self.F(x)  # only has to produce H(x) - x


class HighwayBlock(nn.Module):
    """y = T * H(x) + (1 - T) * x, with the gate T = sigmoid(W_T x + b_T).

    Introduced in Chapter 2 (chapters/02_residual_learning).
    """
    def __init__(self, width, gate_bias):
        super().__init__()
        width = positive_int("width", width)
        gate_bias = finite_float("gate_bias", gate_bias)
        self.H = nn.Linear(width, width)  # transform: H(x) = W relu(x) + b
        init_linear(self.H, "he")
        self.gate = nn.Linear(width, width)
        nn.init.constant_(self.gate.bias, gate_bias)

    def forward(self, x):
        T = torch.sigmoid(self.gate(x))
        return T * self.H(torch.relu(x)) + (1 - T) * x
