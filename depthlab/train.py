"""A small, deterministic training loop that records what the course looks at.

:func:`train` runs a fixed number of optimizer steps on a classification problem and returns a
:class:`History` with, for every step: the loss and accuracy on the batch, the gradient norm of
each block's weight matrix, the update-to-data ratio of each block (``||Delta W|| / ||W||``,
Karpathy's favourite diagnostic) and, for models with learnable branch scales, each ``alpha``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ._checks import choice, finite_float, positive_int
from .reproduce import default_device

OPTIMIZERS = ("adam", "sgd")


def set_seed(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (CPU and CUDA) so a notebook re-runs identically."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Record:
    """What every training history shares: a per-step ``loss`` and ``diverged_at``."""

    loss: np.ndarray
    diverged_at: int | None

    @property
    def steps(self) -> int:
        return len(self.loss)

    def final_loss(self, last: int = 10) -> float:
        """Mean loss over the last ``last`` steps (``inf`` if training diverged)."""
        if self.diverged_at is not None:
            return math.inf
        return float(np.mean(self.loss[-last:]))


def warmup_factor(t: int, warmup: int) -> float:
    """Share of the peak learning rate at step ``t`` (0-based): a linear ramp over ``warmup``."""
    return min(1.0, (t + 1) / warmup) if warmup else 1.0


def check_batch_size(batch_size, n: int, what: str = "examples"):
    """``batch_size`` as an int in 1..n, or None (full batch); otherwise raise ValueError."""
    if batch_size is None:
        return None
    batch_size = positive_int("batch_size", batch_size)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= the number of {what} ({n}), got {batch_size}")
    return batch_size


def minibatch(generator: torch.Generator, X: torch.Tensor, y: torch.Tensor, batch_size, device):
    """One minibatch ``(X[idx], y[idx])``: ``batch_size`` rows drawn without replacement from the
    seeded ``generator``; the whole of ``(X, y)`` when ``batch_size`` is None."""
    if batch_size is None:
        return X, y
    idx = torch.randperm(len(X), generator=generator)[:batch_size].to(device)
    return X[idx], y[idx]


def set_lr(optimizer: torch.optim.Optimizer, lr: float, t: int, warmup: int) -> float:
    """Set the learning rate of step ``t`` (warmup ramp included) on ``optimizer``; return it."""
    step_lr = lr * warmup_factor(t, warmup)
    for group in optimizer.param_groups:
        group["lr"] = step_lr
    return step_lr


def check_recipe(steps, optimizer, warmup, X, y, batch_size, weight_decay, adam_eps):
    """Validate the arguments shared by :func:`train` and ``sweep.train_many``.

    Returns ``(steps, warmup, batch_size, weight_decay, adam_eps)`` (``batch_size`` may be None).
    """
    steps = positive_int("steps", steps)
    choice("optimizer", optimizer, OPTIMIZERS)
    warmup = positive_int("warmup", warmup, minimum=0)
    if len(X) != len(y):
        raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}")
    weight_decay = finite_float("weight_decay", weight_decay, nonnegative=True)
    adam_eps = finite_float("adam_eps", adam_eps, nonnegative=True)
    return steps, warmup, check_batch_size(batch_size, len(X)), weight_decay, adam_eps


@dataclass
class History(Record):
    """What :func:`train` recorded; arrays have one row per step."""

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

        Training is deterministic and, without warmup, has no schedule that depends on its
        length, so the first ``n`` steps of a long run are what an ``n``-step run would have
        recorded: a short run can be read off a long one instead of being trained again.
        """
        steps = positive_int("steps", steps)
        if steps > self.steps:
            raise ValueError(f"steps must be <= the {self.steps} steps recorded, got {steps}")
        if self.meta.get("warmup"):
            raise ValueError("a run with warmup has a schedule that depends on its length; "
                             "its first steps are not a shorter run")
        diverged = self.diverged_at
        if diverged is not None and diverged >= steps:
            diverged = None
        return History(loss=self.loss[:steps], accuracy=self.accuracy[:steps],
                       grad_norms=self.grad_norms[:steps], update_ratio=self.update_ratio[:steps],
                       alphas=self.alphas[:steps], lr=self.lr[:steps], diverged_at=diverged,
                       meta={**self.meta, "steps": steps})



def _make_optimizer(name, params, lr, weight_decay=0.0, adam_eps=1e-8):
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, eps=adam_eps, weight_decay=weight_decay)
    return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay)


def train(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, steps: int = 200,
          lr: float = 1e-3, optimizer: str = "adam", batch_size: int | None = None,
          warmup: int = 0, weight_decay: float = 0.0, adam_eps: float = 1e-8, seed: int = 0,
          device=None, record: bool = True) -> History:
    """Train ``model`` on ``(X, y)`` with cross-entropy for ``steps`` steps and record a History.

    Parameters
    ----------
    model:
        A :class:`~depthlab.models.DeepMLP` (anything with ``blocks`` and ``block_weights()``).
    X, y:
        Inputs and integer class labels.
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
    seed:
        Seed for the minibatch order.
    device:
        Where to train; default :func:`default_device`. The model is moved there for training
        and back to its own device afterwards, so a notebook can keep its data on the CPU.
    record:
        Record per-layer gradient norms, update ratios and alphas (slightly slower).

    Training stops early, with the rest of the history filled with NaN and ``diverged_at`` set,
    if the loss becomes NaN or infinite.
    """
    steps, warmup, batch_size, weight_decay, adam_eps = check_recipe(
        steps, optimizer, warmup, X, y, batch_size, weight_decay, adam_eps)
    lr = finite_float("lr", lr, positive=True)
    device = default_device() if device is None else torch.device(device)
    home = next(model.parameters()).device  # where the caller keeps the model
    model.to(device)
    X, y = X.to(device), y.to(device)
    L = len(model.blocks)
    opt = _make_optimizer(optimizer, model.parameters(), lr, weight_decay, adam_eps)
    g = torch.Generator().manual_seed(int(seed))
    loss_fn = nn.CrossEntropyLoss()

    nan_row = np.full(L, np.nan)
    loss_h, acc_h, lr_h = np.full(steps, np.nan), np.full(steps, np.nan), np.zeros(steps)
    grads, ratios, alphas = (np.tile(nan_row, (steps, 1)) for _ in range(3))
    diverged_at = None
    model.train()
    for t in range(steps):
        lr_h[t] = set_lr(opt, lr, t, warmup)
        xb, yb = minibatch(g, X, y, batch_size, device)
        logits = model(xb)
        loss = loss_fn(logits, yb)
        if not torch.isfinite(loss):
            diverged_at = t
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if record:
            weights = model.block_weights()
            before = [w.detach().clone() for w in weights]
            # float64 norms: squares of vanishing float32 gradients would underflow to zero
            grad_t = torch.stack([w.grad.double().norm() for w in weights])
        opt.step()
        # one transfer to the host per step: the loss, accuracy and per-layer numbers together
        acc = (logits.argmax(1) == yb).float().mean()
        row = [loss.detach(), acc]
        if record:
            ratio_t = torch.stack([(w.detach() - b).norm() / b.norm().clamp_min(1e-30)
                                   for w, b in zip(weights, before)])
            row += [grad_t, ratio_t, model.alphas() if hasattr(model, "alphas") else grad_t * 0]
            flat = torch.cat([r.reshape(-1).double() for r in row]).cpu().numpy()
            loss_h[t], acc_h[t] = flat[0], flat[1]
            grads[t], ratios[t], alphas[t] = flat[2:2 + L], flat[2 + L:2 + 2 * L], flat[2 + 2 * L:]
        else:
            loss_h[t], acc_h[t] = (v.item() for v in row)
    model.to(home)  # trained on `device`, handed back where it was
    return History(loss=loss_h, accuracy=acc_h, grad_norms=grads, update_ratio=ratios,
                   alphas=alphas, lr=lr_h, diverged_at=diverged_at,
                   meta=dict(steps=steps, lr=lr, optimizer=optimizer, batch_size=batch_size,
                             warmup=warmup, weight_decay=weight_decay, adam_eps=adam_eps,
                             seed=seed, device=str(device)))


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``X`` that ``model`` classifies correctly (evaluated in one batch)."""
    device = next(model.parameters()).device
    model.eval()
    pred = model(X.to(device)).argmax(1).cpu()
    model.train()
    return float((pred == y.cpu()).float().mean())


@torch.no_grad()
def evaluate_loss(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Mean cross-entropy of ``model`` on ``(X, y)`` (evaluated in one batch)."""
    device = next(model.parameters()).device
    model.eval()
    loss = nn.functional.cross_entropy(model(X.to(device)), y.to(device)).item()
    model.train()
    return loss
