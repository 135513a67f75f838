"""A small, deterministic training loop that records what the course looks at.

:func:`train` runs a fixed number of optimizer steps on a classification problem and returns a
:class:`History` with, for every step: the loss and accuracy on the batch, the gradient norm of
each block's weight matrix, the update-to-data ratio of each block (``||Delta W|| / ||W||``,
Karpathy's favourite diagnostic) and each block's branch scale ``alpha``.

There is one training loop, :func:`_fit` (read it first: a minibatch, a step, a check for
divergence), shared by :func:`train`, :func:`depthlab.train_sequence` (sequence models) and
:func:`depthlab.train_many` (many networks of one architecture at once, :mod:`depthlab.fast`).
What differs between them is the thing the loop steps: one model with a ``torch.optim``
optimizer (:class:`_OneModel`, here: the reference arithmetic), or ``K`` models stacked and run
together (``depthlab.fast.sweep._ManyModels``). Each step returns one row of numbers per model,
copied to the host once; what a row records of each block comes from
:func:`depthlab.probes.gradient_norms` and :func:`depthlab.probes.update_ratios`, for both.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from . import _checks
from ._checks import finite_float, positive_int
from .probes import each_norm, gradient_norms, update_ratios
from .seeds import default_device

MOMENTUM = 0.9  # SGD's momentum
ADAM_BETAS = (0.9, 0.999)  # PyTorch's defaults


# ---------------------------------------------------------------- what training records


class Record:
    """What every training history shares: a per-step ``loss`` and ``diverged_at``."""

    loss: np.ndarray
    diverged_at: int | None

    @property
    def steps(self) -> int:
        return len(self.loss)

    def _last(self, last) -> int:
        last = positive_int("last", last)
        if last > self.steps:
            raise ValueError(f"last must be <= the {self.steps} steps recorded, got {last}")
        return last

    def final_loss(self, last: int = 10) -> float:
        """Mean loss over the last ``last`` steps (``inf`` if training diverged)."""
        last = self._last(last)
        if self.diverged_at is not None:
            return math.inf
        return float(np.mean(self.loss[-last:]))


@dataclass
class History(Record):
    """What :func:`train` recorded; arrays have one row per step.

    Introduced with :func:`train` in Chapter 1 (chapters/01_depth_problem).
    """

    loss: np.ndarray
    accuracy: np.ndarray
    grad_norms: np.ndarray        # (steps, L): ||dL/dW_l|| before each update
    update_ratio: np.ndarray      # (steps, L): ||W_l(after) - W_l(before)|| / ||W_l(before)||
    alphas: np.ndarray            # (steps, L): branch scales after each update
    lr: np.ndarray                # (steps,): learning rate used at each step
    diverged_at: int | None = None  # first step whose loss was not finite, if any
    meta: dict = field(default_factory=dict)

    def first(self, steps: int) -> History:
        """The first ``steps`` steps of this history, as a History of their own.

        Training is deterministic and its learning rate does not depend on the run's length
        (the warm-up ramps over its own number of steps, then stays), so the first ``n`` steps
        of a long run are what an ``n``-step run would have recorded: a short run can be read
        off a long one instead of being trained again.
        """
        steps = positive_int("steps", steps)
        if steps > self.steps:
            raise ValueError(f"steps must be <= the {self.steps} steps recorded, got {steps}")
        diverged = self.diverged_at
        if diverged is not None and diverged >= steps:
            diverged = None
        return History(loss=self.loss[:steps], accuracy=self.accuracy[:steps],
                       grad_norms=self.grad_norms[:steps], update_ratio=self.update_ratio[:steps],
                       alphas=self.alphas[:steps], lr=self.lr[:steps], diverged_at=diverged,
                       meta={**self.meta, "steps": steps})


# ---------------------------------------------------------------- the loop and its helpers


def _warmup_factor(t: int, warmup: int) -> float:
    """Share of the peak learning rate at step ``t`` (0-based): a linear ramp over ``warmup``."""
    return min(1.0, (t + 1) / warmup) if warmup else 1.0


def _minibatch(generator: torch.Generator, X: torch.Tensor, y: torch.Tensor, batch_size, device):
    """``batch_size`` rows drawn without replacement from the seeded ``generator``; all of
    ``(X, y)`` when ``batch_size`` is None."""
    if batch_size is None:
        return X, y
    idx = torch.randperm(len(X), generator=generator)[:batch_size].to(device)
    return X[idx], y[idx]


def _batch_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every prediction: one per example, or one per token."""
    return nn.functional.cross_entropy(logits.flatten(0, -2), y.flatten())


def _batch_accuracy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (logits.argmax(-1) == y).float().mean()


def _branch_scales(model: nn.Module) -> list[torch.Tensor] | None:
    """Each block's branch scale ``alpha`` (a parameter if learned, a buffer if fixed), or None
    if the model's blocks have none."""
    scales = [getattr(block, "alpha", None) for block in getattr(model, "blocks", [])]
    if not scales or any(not isinstance(a, torch.Tensor) for a in scales):
        return None
    return scales


def _fit(trainee, X, y, *, steps: int, warmup: int, batch_size, seed: int, device,
         columns: int, after_step=lambda n: None):
    """The training loop: ``steps`` steps of ``trainee`` on minibatches of ``(X, y)``.

    ``trainee.step(xb, yb, lr_factor)`` runs one step of each of its ``K`` models and returns
    ``(rows, alive)``: a ``(K, columns)`` array of what the step recorded (loss and accuracy
    first), and which models had a finite loss and were stepped. A model whose loss is not finite
    stops there. ``warmup`` is one number of warm-up steps for all, or one per model. Returns
    ``(rows (K, steps, columns), lr_factors (K, steps), diverged_at)``: rows of steps not taken
    are NaN. ``after_step(n)`` is called after the ``n``-th step taken (n = 1, 2, ...).
    """
    k = trainee.k
    warmups = [warmup] * k if isinstance(warmup, int) else list(warmup)
    g = torch.Generator().manual_seed(seed)
    rows = np.full((k, steps, columns), np.nan)
    factors = np.array([[_warmup_factor(t, w) for t in range(steps)] for w in warmups])
    diverged: list[int | None] = [None] * k
    for t in range(steps):
        xb, yb = _minibatch(g, X, y, batch_size, device)
        row, alive = trainee.step(xb, yb, factors[:, t])
        for i in range(k):
            if not alive[i] and diverged[i] is None:
                diverged[i] = t
        if not alive.any():
            break
        rows[alive, t] = row[alive]
        after_step(t + 1)
    return rows, factors, diverged


class _OneModel:
    """One model stepped by a ``torch.optim`` optimizer: the reference arithmetic.

    ``record`` chooses the columns after loss and accuracy: ``"layers"`` (per block: weight
    gradient norm, update ratio, alpha), ``"total"`` (the norm of the whole gradient) or ``None``.
    """

    k = 1

    def __init__(self, model, optimizer, *, lr, weight_decay=0.0, adam_eps=1e-8,
                 betas=ADAM_BETAS, record="layers", loss_scale=1.0):
        self.model, self.lr, self.record = model, lr, record
        self.loss_scale = loss_scale
        # foreach=True: one call per operation for all the parameter tensors instead of a Python
        # loop over them (PyTorch's default on the GPU, not on the CPU). The arithmetic is the
        # same, bit for bit (tests/test_depthlab.py), and small models train about a third faster.
        if optimizer == "adam":
            self.opt = torch.optim.Adam(model.parameters(), lr=lr, betas=betas, eps=adam_eps,
                                        weight_decay=weight_decay, foreach=True)
        else:
            self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM,
                                       weight_decay=weight_decay, foreach=True)
        if record == "layers":
            self.weights = model.block_weights()
            self.scales = _branch_scales(model)
        self.params = [p for p in model.parameters() if p.requires_grad]

    @property
    def columns(self) -> int:
        if self.record == "layers":
            return 2 + 3 * len(self.weights)
        return 3 if self.record == "total" else 2

    def step(self, xb, yb, factor):
        for group in self.opt.param_groups:
            group["lr"] = self.lr * float(factor[0])
        logits = self.model(xb)
        loss = _batch_loss(logits, yb)
        if not torch.isfinite(loss):
            return None, np.array([False])
        self.opt.zero_grad(set_to_none=True)
        (loss * self.loss_scale).backward()  # a factor of 1 is exact
        if self.record == "layers":
            before = [w.detach().clone() for w in self.weights]
            grad_t = gradient_norms([w.grad for w in self.weights], self.loss_scale)
        elif self.record == "total":  # the norm of the whole gradient
            grads = [p.grad for p in self.params if p.grad is not None]
            grad_t = gradient_norms(grads, self.loss_scale, lambda g: each_norm(g).norm()[None])
        self.opt.step()
        row = [loss.detach(), _batch_accuracy(logits, yb)]
        if self.record == "layers":
            ratio_t = update_ratios(before, [w.detach() for w in self.weights])
            alpha_t = (torch.stack([a.detach() for a in self.scales]) if self.scales
                       else grad_t * 0)
            row += [grad_t, ratio_t, alpha_t]
        elif self.record == "total":
            row.append(grad_t)
        # one transfer to the host per step
        rows = torch.cat([r.reshape(-1).double() for r in row]).cpu().numpy()[None]
        return rows, np.array([True])


@contextmanager
def _on(models, device):
    """Move ``models`` to ``device`` in training mode; hand each back to its own device and
    mode afterwards (a notebook keeps its data on the CPU)."""
    homes = [(next(m.parameters()).device, m.training) for m in models]
    for m in models:
        m.to(device).train()
    try:
        yield
    finally:
        for m, (home, mode) in zip(models, homes):
            m.to(home).train(mode)


# ---------------------------------------------------------------- the public functions


def train(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, steps: int = 200,
          lr: float = 1e-3, optimizer: str = "adam", batch_size: int | None = None,
          warmup: int = 0, weight_decay: float = 0.0, adam_eps: float = 1e-8,
          loss_scale: float = 1.0, seed: int = 0, device=None, record: bool = True) -> History:
    """Train ``model`` on ``(X, y)`` with cross-entropy for ``steps`` steps and record a History.

    Parameters
    ----------
    model:
        A :class:`~depthlab.models.DeepMLP` (anything with ``blocks`` and ``block_weights()``).
    X, y:
        Inputs (float32, or float64 for a float64 model) and integer class labels.
    steps:
        Number of optimizer steps, >= 1.
    lr:
        Peak learning rate, > 0.
    optimizer:
        ``"adam"`` or ``"sgd"`` (with momentum 0.9).
    batch_size:
        Minibatch size, drawn without replacement each step from a seeded generator; ``None``
        uses the full data set every step.
    warmup:
        Number of steps over which the learning rate rises linearly from ``lr / warmup`` to ``lr``.
    weight_decay:
        L2 penalty, >= 0: ``weight_decay * W`` is added to the gradient of every parameter before
        the optimizer uses it (as ``torch.optim.SGD`` and ``torch.optim.Adam`` do; not AdamW).
    adam_eps:
        Adam's epsilon, >= 0, added to the root of its second-moment estimate (PyTorch's default
        1e-8). Near 0 (in float64) Adam's step no longer shrinks for tiny gradients.
    loss_scale:
        A factor, > 0, that multiplies the loss before the backward pass; the optimizer gets the
        scaled gradient (it is not divided back, unlike mixed-precision loss scaling). Adam's
        step then changes only through ``adam_eps`` and ``weight_decay``, which act as
        ``adam_eps / loss_scale`` and ``weight_decay / loss_scale``, and through what the number
        format can represent: with a large factor, squares of tiny gradients no longer underflow,
        but in float32 a scaled gradient entry above about 2**64 makes Adam's running square
        infinite, and that weight stops moving without any error. SGD's step is multiplied by
        it. The recorded loss and gradient norms are those of the unscaled loss. A power of 2
        scales exactly (unless something overflows, or an unscaled value is subnormal).
    seed:
        Seed for the minibatch order (an integer >= 0).
    device:
        Where to train; default :func:`default_device`. The model is moved there for training
        and back to its own device afterwards, so a notebook can keep its data on the CPU.
    record:
        Record per-layer gradient norms, update ratios and alphas (slightly slower); with
        ``False`` those arrays stay NaN, and the loss and accuracy are the same.

    Training stops early, with the rest of the history filled with NaN and ``diverged_at`` set,
    if the loss becomes NaN or infinite. The model is left in the mode (train or eval) it had.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    _checks.trainable(model)
    recipe = _checks.recipe(steps, optimizer, warmup, X, y, batch_size, weight_decay, adam_eps,
                            seed, loss_scale)
    lr = finite_float("lr", lr, positive=True)
    _checks.boolean("record", record)
    _checks.same_dtype(model, X)
    device = default_device() if device is None else torch.device(device)
    L = len(model.blocks)
    with _on([model], device):
        trainee = _OneModel(model, optimizer, lr=lr, weight_decay=recipe["weight_decay"],
                            adam_eps=recipe["adam_eps"], record="layers" if record else None,
                            loss_scale=recipe["loss_scale"])
        rows, factors, (diverged_at,) = _fit(
            trainee, X.to(device), y.to(device), steps=recipe["steps"], warmup=recipe["warmup"],
            batch_size=recipe["batch_size"], seed=recipe["seed"], device=device,
            columns=trainee.columns)
    rows = rows[0]
    layers = rows[:, 2:] if record else np.full((recipe["steps"], 3 * L), np.nan)
    return History(loss=rows[:, 0], accuracy=rows[:, 1], grad_norms=layers[:, :L],
                   update_ratio=layers[:, L:2 * L], alphas=layers[:, 2 * L:], lr=lr * factors[0],
                   diverged_at=diverged_at, meta=dict(lr=lr, device=str(device), **recipe))


@contextmanager
def _evaluating(model: nn.Module):
    """Eval mode inside, the model's own mode afterwards."""
    mode = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(mode)


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``X`` that ``model`` classifies correctly (evaluated in one batch, in eval
    mode; the model keeps the mode it had).

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    device = next(model.parameters()).device
    with _evaluating(model):
        logits = model(X.to(device))
    if logits.dim() != 2:
        raise ValueError(f"accuracy needs logits of shape (n, classes), got {tuple(logits.shape)}"
                         f" (a sequence model: dl.sequence_accuracy; a dl.ResNetStack: "
                         f"dl.member_scores)")
    return float((logits.argmax(1).cpu() == y.cpu()).float().mean())


@torch.no_grad()
def evaluate_loss(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Mean cross-entropy of ``model`` on ``(X, y)`` (evaluated in one batch, in eval mode; the
    model keeps the mode it had). For a sequence model (logits ``(n, length, vocab)``, targets
    ``(n, length)``) the mean runs over every position. NaN for a diverged model.

    Introduced in Lab 1 (labs/lab1_fifty_layers); Lab 6 uses it on sequences.
    """
    device = next(model.parameters()).device
    with _evaluating(model):
        logits = model(X.to(device))
    if logits.dim() == 3:  # (n, length, vocab): one prediction per position
        if y.shape != logits.shape[:2]:
            raise ValueError(f"logits of shape {tuple(logits.shape)} need targets of shape "
                             f"{tuple(logits.shape[:2])}, got {tuple(y.shape)} (a "
                             f"dl.ResNetStack's networks: dl.member_scores)")
        logits = logits.flatten(0, 1)
    return nn.functional.cross_entropy(logits, y.to(device).flatten()).item()
