"""Deep MLPs whose blocks can be plain or residual, normalized or not, scaled or not.

One block maps a stream vector ``x`` (width ``d``) to the next one. Its *branch* is a
pre-activation layer, ``F(x) = W phi(x) + b`` (He et al. 2016, "Identity Mappings"), so that the
plain and the residual network contain exactly the same weights:

=================  =================================================
plain              ``x_next = F(x)``
residual           ``x_next = lam * x + alpha * F(x)``
residual, pre-LN   ``x_next = lam * x + alpha * F(LN(x))``
residual, post-LN  ``x_next = LN(lam * x + alpha * F(x))``
plain, pre-LN      ``x_next = F(LN(x))``
plain, post-LN     ``x_next = LN(F(x))``
=================  =================================================

``alpha`` is the branch scale: a fixed number; ``"1/sqrt(L)"``, fixed at ``1/sqrt(L)``;
``"learned"``, a learnable scalar per block that *starts at* ``1/sqrt(L)``, so that a learned and
a fixed ``1/sqrt(L)`` network are the same network until training moves alpha; or ``"rezero"``,
a learnable scalar that starts at 0 (Bachlechner et al. 2020). ``lam`` is the shortcut scale (1
unless you are studying why scaling the shortcut is a bad idea).

A :class:`DeepMLP` is ``u -> x_0 = W_in u -> L blocks -> logits = W_out x_L`` (with a final
LayerNorm before the head when the blocks are pre-norm, as in pre-norm transformers).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import boolean, choice, finite_float, positive_int
from .seeds import seeded

NORMS = ("none", "pre", "post")
INITS = ("default", "he", "orthogonal")
ACTIVATIONS = ("relu", "tanh")
ALPHA_WORDS = ("1/sqrt(L)", "learned", "rezero")

_ACT = {"relu": nn.ReLU, "tanh": nn.Tanh}


def _alpha_value(alpha, depth: int) -> tuple[float, bool]:
    """Turn an ``alpha`` setting into (initial value, learnable?)."""
    if isinstance(alpha, str):
        choice("alpha", alpha, ALPHA_WORDS)
        if alpha == "1/sqrt(L)":
            return 1.0 / math.sqrt(depth), False
        if alpha == "learned":
            return 1.0 / math.sqrt(depth), True
        return 0.0, True  # rezero
    try:
        value = finite_float("alpha", alpha, nonnegative=True)
    except ValueError:
        raise ValueError(
            "alpha must be a finite number >= 0 or one of "
            f"{', '.join(repr(a) for a in ALPHA_WORDS)}; got {alpha!r}"
        ) from None
    return value, False


def init_linear(layer: nn.Linear, init: str) -> None:
    """Re-initialize ``layer`` in place.

    ``"default"`` keeps PyTorch's own init (weights uniform with variance ``1/(3 fan_in)``, biases
    uniform); ``"he"`` draws weights from N(0, 2/fan_in) and zeroes the bias (He et al. 2015,
    "Delving Deep into Rectifiers"); ``"orthogonal"`` uses a random orthogonal matrix times
    ``sqrt(2)`` (the ReLU gain) and zeroes the bias (Saxe et al. 2014).

    Introduced in Chapter 2 (chapters/02_residual_learning).
    """
    choice("init", init, INITS)
    if init == "he":
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    elif init == "orthogonal":
        nn.init.orthogonal_(layer.weight, gain=math.sqrt(2.0))
    if init != "default" and layer.bias is not None:
        nn.init.zeros_(layer.bias)


class Block(nn.Module):
    """One layer of the stack; see the module docstring for the formulas.

    Parameters
    ----------
    width, out_width:
        Input and output width (``out_width`` defaults to ``width``); equal in a residual block
        unless ``projection=True``.
    residual:
        Add the shortcut (``True``) or not (``False``, a plain layer).
    norm:
        ``"none"``, ``"pre"`` (LayerNorm inside the branch) or ``"post"`` (LayerNorm after the sum).
    alpha:
        Branch scale: a number >= 0, ``"1/sqrt(L)"``, ``"learned"`` (a learnable scalar starting at
        ``1/sqrt(L)``) or ``"rezero"`` (one starting at 0). ``model.alphas()`` reads them.
    shortcut:
        Shortcut scale ``lam`` > 0 (residual blocks only).
    projection:
        ``True`` to use ``W_s x`` as the shortcut (a bias-free linear map), needed when widths
        differ; ``False`` for the identity.
    depth:
        The ``L`` used by ``"1/sqrt(L)"`` and ``"learned"``.
    init, activation:
        ``"default" | "he" | "orthogonal"`` and ``"relu" | "tanh"``.
    seed:
        Seed of the initial weights (an integer >= 0), or ``None`` to draw them from PyTorch's
        global random state.

    Introduced in Chapter 2 (chapters/02_residual_learning).
    """

    def __init__(self, width: int, out_width: int | None = None, *, residual: bool = True,
                 norm: str = "none", alpha=1.0, shortcut: float = 1.0, projection: bool = False,
                 depth: int = 1, init: str = "default", activation: str = "relu", seed=None):
        super().__init__()
        with seeded(seed):
            self._build(width, out_width, residual, norm, alpha, shortcut, projection, depth, init,
                        activation)

    def _build(self, width, out_width, residual, norm, alpha, shortcut, projection, depth, init,
               activation):
        width = positive_int("width", width)
        out_width = width if out_width is None else positive_int("out_width", out_width)
        depth = positive_int("depth", depth)
        boolean("residual", residual)
        boolean("projection", projection)
        choice("norm", norm, NORMS)
        choice("activation", activation, ACTIVATIONS)
        shortcut = finite_float("shortcut", shortcut, positive=True)
        if residual and width != out_width and not projection:
            raise ValueError(
                f"a residual block needs matching widths, got {width} -> {out_width}; "
                "pass projection=True to use the shortcut W_s x, or make the widths equal"
            )
        if not residual and (projection or shortcut != 1.0):
            raise ValueError("projection and shortcut apply to residual blocks only (residual=True)")
        if not residual and alpha != 1.0:
            raise ValueError("alpha scales the residual branch; a plain block (residual=False) "
                             "takes alpha=1.0 only")

        self.residual, self.norm_position, self.shortcut = residual, norm, shortcut
        self.phi = _ACT[activation]()
        self.linear = nn.Linear(width, out_width)
        init_linear(self.linear, init)
        self.norm = None
        if norm == "pre":
            self.norm = nn.LayerNorm(width)
        elif norm == "post":
            self.norm = nn.LayerNorm(out_width)
        self.proj = nn.Linear(width, out_width, bias=False) if projection else None

        value, learnable = _alpha_value(alpha, depth)
        if learnable:
            self.alpha = nn.Parameter(torch.tensor(value))
        else:
            self.register_buffer("alpha", torch.tensor(value))

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        """The branch ``F`` (with the pre-norm LayerNorm in front of it, if any)."""
        if self.norm_position == "pre":
            x = self.norm(x)
        return self.linear(self.phi(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.residual:
            y = self.branch(x)
            return self.norm(y) if self.norm_position == "post" else y
        skip = self.proj(x) if self.proj is not None else x
        if self.shortcut != 1.0:  # a factor of 1 is exact: no multiplication to pay for
            skip = self.shortcut * skip
        y = skip + self.alpha * self.branch(x)
        return self.norm(y) if self.norm_position == "post" else y


class DeepMLP(nn.Module):
    """``u -> W_in u -> L blocks -> W_out x_L``: the deep network every chapter experiments on.

    Parameters
    ----------
    depth:
        ``L``, the number of blocks (each holds one weight matrix of the stream), >= 1.
    width:
        Width ``d`` of the stream.
    in_dim, out_dim:
        Input features and output classes.
    residual, norm, alpha, shortcut, init, activation:
        Passed to every :class:`Block`. ``init`` also applies to the input layer.
    seed:
        Seed of the initial weights (an integer >= 0): ``DeepMLP(..., seed=s)`` is the same
        network every time. ``None`` draws them from PyTorch's global random state.

    ``model.blocks`` is the list of blocks; ``model.stream(u)`` returns ``[x_0, ..., x_L]``.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """

    def __init__(self, depth: int, width: int = 64, in_dim: int = 2, out_dim: int = 2, *,
                 residual: bool = True, norm: str = "none", alpha=1.0, shortcut: float = 1.0,
                 init: str = "default", activation: str = "relu", seed=None):
        super().__init__()
        with seeded(seed):
            self._build(depth, width, in_dim, out_dim, residual, norm, alpha, shortcut, init,
                        activation)

    def _build(self, depth, width, in_dim, out_dim, residual, norm, alpha, shortcut, init,
               activation):
        depth = positive_int("depth", depth)
        width = positive_int("width", width)
        self.depth, self.width = depth, width
        self.config = dict(depth=depth, width=width, in_dim=in_dim, out_dim=out_dim,
                           residual=residual, norm=norm, alpha=alpha, shortcut=shortcut,
                           init=init, activation=activation)
        self.embed = nn.Linear(positive_int("in_dim", in_dim), width)
        init_linear(self.embed, init)
        self.blocks = nn.ModuleList(
            Block(width, residual=residual, norm=norm, alpha=alpha, shortcut=shortcut,
                  depth=depth, init=init, activation=activation)
            for _ in range(depth)
        )
        self.final_norm = nn.LayerNorm(width) if norm == "pre" else nn.Identity()
        self.head = nn.Linear(width, positive_int("out_dim", out_dim))

    def stream(self, u: torch.Tensor) -> list[torch.Tensor]:
        """The stream ``[x_0, x_1, ..., x_L]`` for input ``u`` (x_0 is the embedded input)."""
        xs = [self.embed(u)]
        for block in self.blocks:
            xs.append(block(xs[-1]))
        return xs

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        x = self.embed(u)
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x))

    def block_weights(self) -> list[torch.Tensor]:
        """The weight matrix ``W_l`` of each block's branch, first block first."""
        return [b.linear.weight for b in self.blocks]

    def alphas(self) -> torch.Tensor:
        """The current branch scale of every block, shape ``(L,)``."""
        return torch.stack([b.alpha.detach() for b in self.blocks])
