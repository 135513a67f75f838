"""Train several networks of one architecture at once (the fast path of :func:`depthlab.train`).

Labs compare many small networks: the same architecture under several seeds, inits, branch
scales or learning rates. Trained one after the other, their cost is dominated by Python overhead
(a few hundred tiny operations per step), so :func:`train_many` trains ``K`` models *together*:
their parameters are stacked along a new leading axis (``torch.func.stack_module_state``) and one
``torch.vmap`` of the model's own ``forward`` runs all of them in each operation. Every member
still sees what :func:`depthlab.train` would give it (the same training loop, data order,
optimizer arithmetic, its own learning rate and its own divergence check), up to float rounding,
and gets the same :class:`~depthlab.training.History`; the loop itself is
:func:`depthlab.training._fit`, the one every training function runs.

* :func:`train_together` takes a dict of models of *different* architectures, groups the ones
  that can share a batch and calls :func:`train_many` once per group.

What may differ inside one batch: the initial values of the parameters and buffers (seed,
``init``, a fixed ``alpha`` such as ``1.0`` or ``"1/sqrt(L)"``), the learning rate and the
length of the warm-up. What may not: anything that changes the code path of ``forward`` (depth,
width, ``residual``, ``norm``, ``shortcut``, ``activation``, whether ``alpha`` is learned).
Models whose modules share (tie) weights, whose buffers change while training (BatchNorm's
running statistics), or that skip blocks at random (LayerDrop) cannot be trained together: train
them one by one with :func:`depthlab.train` or :func:`depthlab.train_sequence`.

Sequence models such as :class:`~depthlab.transformer.TinyTransformer` train together too: the
targets are then one token per position, ``(n, length)``, and the loss and accuracy are per
token, as in :func:`depthlab.train_sequence` (pass ``betas=(0.9, 0.98)`` for its Adam).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from numbers import Real

import torch
from torch import nn
from torch.func import functional_call, stack_module_state

from .. import _checks
from .._checks import finite_float, positive_int
from ..probes import gradient_norms, update_ratios
from ..seeds import default_device
from ..training import ADAM_BETAS, MOMENTUM, History, _branch_scales, _fit, _on


def architecture_key(model: nn.Module):
    """A hashable description of what decides ``model``'s code path (see the module docstring).

    Two models with the same key can be trained together by :func:`train_many`.

    Introduced with :func:`train_together` in Chapter 1 (chapters/01_depth_problem).
    """
    config = dict(getattr(model, "config", {}))
    config.pop("init", None)   # only changes initial values
    config.pop("alpha", None)  # a fixed alpha is a buffer, a learned one a parameter (below)
    params = tuple((n, tuple(p.shape)) for n, p in model.named_parameters())
    buffers = tuple((n, tuple(b.shape)) for n, b in model.named_buffers())
    return (type(model).__name__, repr(sorted(config.items())), params, buffers)


def _learning_rates(lr, k: int) -> list[float]:
    if isinstance(lr, Real) and not isinstance(lr, bool):
        return [finite_float("lr", lr, positive=True)] * k
    if isinstance(lr, Sequence) and not isinstance(lr, str) and len(lr) == k:
        return [finite_float("lr", v, positive=True) for v in lr]
    raise ValueError(f"lr must be a number > 0 or a list of {k} numbers > 0 (one per model), "
                     f"got {lr!r}")


def _warmups(warmup, k: int) -> list[int]:
    if isinstance(warmup, Sequence) and not isinstance(warmup, str):
        if len(warmup) != k:
            raise ValueError(f"warmup must be an integer >= 0 or a list of {k} of them (one "
                             f"per model), got {warmup!r}")
        return [positive_int("warmup", w, minimum=0) for w in warmup]
    return [positive_int("warmup", warmup, minimum=0)] * k


def _names(model: nn.Module, tensors, what: str) -> list[str]:
    """The names, in ``model``, of the parameters or buffers in ``tensors``."""
    by_id = {id(t): n for n, t in [*model.named_parameters(), *model.named_buffers()]}
    names = [by_id.get(id(t)) for t in tensors]
    if None in names:
        raise ValueError(f"{what} must return tensors of the model itself")
    return names


def _check_batchable(model: nn.Module) -> None:
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._NormBase) and module.track_running_stats:
            raise ValueError(f"{type(module).__name__} updates its running statistics while "
                             "training, which models trained together cannot do: train these "
                             "models one by one with depthlab.train")
    if getattr(model, "layer_drop", 0):
        raise ValueError("a model with layer_drop > 0 draws which blocks to skip at every step, "
                         "which models trained together cannot do each on their own: train "
                         "these models one by one with depthlab.train_sequence")


class _ManyModels:
    """``K`` models of one architecture, stepped together.

    All the parameters live in one ``(K, P)`` tensor ``theta`` (block weights first, then the
    rest), so that the optimizer's arithmetic, written out below as ``torch.optim`` does it, is a
    handful of operations per step however many tensors the model has. Each step, ``theta`` is
    split into views shaped like the model's parameters, and ``torch.vmap`` runs the model's own
    ``forward`` (``functional_call``) on all ``K`` sets of views at once.
    """

    def __init__(self, models, optimizer, *, lrs, weight_decay, adam_eps, loss_scale=1.0,
                 betas=ADAM_BETAS):
        self.k = k = len(models)
        self.loss_scale, self.betas = loss_scale, betas
        self.optimizer, self.weight_decay, self.adam_eps = optimizer, weight_decay, adam_eps
        first = models[0]
        params, self.buffers = stack_module_state(models)
        w_names = _names(first, first.block_weights(), "block_weights()")
        scales = _branch_scales(first)
        self.a_names = _names(first, scales, "each block's alpha") if scales else None
        self.names = w_names + [n for n in params if n not in set(w_names)]
        self.shapes = [(k, *params[n].shape[1:]) for n in self.names]
        self.sizes = [math.prod(s[1:]) for s in self.shapes]
        self.theta = torch.cat([params[n].detach().reshape(k, -1) for n in self.names], 1)
        self.theta.requires_grad_(True)
        self.n_layers = len(w_names)
        self.w_sizes = self.sizes[:self.n_layers]
        self.n_w = sum(self.w_sizes)  # block weights: the first n_w columns of theta
        self.same_shape = len(set(self.w_sizes)) == 1
        self.lr0 = torch.tensor(lrs, dtype=self.theta.dtype, device=self.theta.device)
        self.active = torch.ones(k, dtype=torch.bool, device=self.theta.device)
        self.m = torch.zeros_like(self.theta)  # Adam's first moment, or SGD's momentum
        self.v = torch.zeros_like(self.theta) if optimizer == "adam" else None
        self.t = 0
        base = copy.deepcopy(first).to("meta")
        for module in base.modules():
            # attention by its written-out formula: PyTorch's fused kernel has no vmap rule
            if hasattr(module, "written_out"):
                module.written_out = True

        def forward(p, b, xb):
            return functional_call(base, (p, b), (xb,), tie_weights=False)

        self.batched = torch.vmap(forward, in_dims=(0, 0, None))

    @property
    def columns(self) -> int:
        return 2 + 3 * self.n_layers

    def parameters(self) -> dict[str, torch.Tensor]:
        """Views of ``theta`` shaped like each stacked parameter ``(K, ...)``."""
        chunks = self.theta.split(self.sizes, dim=1)
        return {n: c.view(s) for n, c, s in zip(self.names, chunks, self.shapes)}

    def _per_layer(self, flat: torch.Tensor) -> list[torch.Tensor] | torch.Tensor:
        """The block-weight columns of a ``(K, P)`` tensor, as ``(K, L, size)`` or a list."""
        if self.same_shape:
            return flat[:, :self.n_w].view(self.k, self.n_layers, -1)
        return list(flat[:, :self.n_w].split(self.w_sizes, dim=1))

    def _norms(self, per_layer) -> torch.Tensor:
        if self.same_shape:
            return per_layer.norm(dim=2)
        return torch.stack([w.norm(dim=1) for w in per_layer], 1)

    def step(self, xb, yb, factor):
        k, active = self.k, self.active
        p = self.parameters()
        # (K, B, classes), or (K, B, length, vocab) for a sequence model: one prediction per
        # example or per token, and the loss is their mean, as in depthlab.train
        logits = self.batched(p, self.buffers, xb)
        per_example = nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), yb.expand(k, *yb.shape).reshape(-1),
            reduction="none")
        losses = per_example.view(k, -1).mean(1)                     # (K,)
        active = self.active = active & torch.isfinite(losses)
        alive = active.cpu().numpy()
        if not alive.any():
            return None, alive
        total = torch.where(active, losses, torch.zeros_like(losses)).sum() * self.loss_scale
        (grad,) = torch.autograd.grad(total, self.theta)
        if not alive.all():
            # a diverged model keeps its last finite weights: no gradient, no step
            grad = torch.where(active[:, None], grad, torch.zeros_like(grad))

        with torch.no_grad():
            before = self._per_layer(self.theta)
            before = before.clone() if self.same_shape else [b.clone() for b in before]
            # the same record as depthlab.train's, with norms taken per model: (K, L)
            grad_t = gradient_norms(self._per_layer(grad), self.loss_scale, self._norms)
            factor = torch.as_tensor(factor, dtype=self.lr0.dtype, device=self.lr0.device)
            self._update(grad, (self.lr0 * factor * active)[:, None])
            ratio_t = update_ratios(before, self._per_layer(self.theta), self._norms)
            if self.a_names:
                pool = {**self.buffers, **p}
                alpha_t = torch.stack([pool[n] for n in self.a_names], 1)
            else:
                alpha_t = torch.zeros_like(grad_t)
            acc = (logits.argmax(-1) == yb).float().flatten(1).mean(1)
            rows = torch.cat([losses.double()[:, None], acc.double()[:, None], grad_t,
                              ratio_t.double(), alpha_t.double()], 1)
        return rows.cpu().numpy(), alive  # one transfer to the host per step

    def _update(self, grad, lr):
        """One step of Adam or SGD with momentum on ``theta``, with ``torch.optim``'s arithmetic
        (``lr``: one learning rate per model, shape ``(K, 1)``, 0 for a diverged model).

        Why not ``torch.optim``: its optimizers take one learning rate per parameter tensor (per
        param group), while here the ``K`` models are the rows of one tensor ``theta``, each with
        its own learning rate and warm-up; and a model that diverged must stay frozen (a zero
        gradient, no weight decay and a learning rate of 0: its weights stop at their last
        finite values) while the others go on in the same tensor.
        Splitting ``theta`` into ``K`` param groups would bring back the per-tensor Python
        overhead this class exists to avoid. ``tests/test_layers.py`` checks this arithmetic
        against ``torch.optim.Adam`` and ``torch.optim.SGD`` step by step.
        """
        self.t += 1
        if self.weight_decay:
            # L2 on the gradient, as torch.optim does; a diverged model still gets no step
            grad = torch.where(self.active[:, None],
                               grad.add(self.theta, alpha=self.weight_decay), 0.0)
        m, theta = self.m, self.theta
        if self.optimizer == "adam":
            b1, b2 = self.betas
            c1, c2 = 1 - b1 ** self.t, math.sqrt(1 - b2 ** self.t)
            m.lerp_(grad, 1 - b1)
            self.v.mul_(b2)
            self.v.addcmul_(grad, grad, value=1 - b2)
            denom = self.v.sqrt()
            denom.div_(c2)
            denom.add_(self.adam_eps)
            update = m / denom
            update.mul_(lr / c1)
        else:
            if self.t == 1:
                m.copy_(grad)
            else:
                m.mul_(MOMENTUM)
                m.add_(grad)
            update = m * lr
        theta.sub_(update)

    def copy_to(self, models) -> None:
        """Write the trained parameters back into ``models``."""
        p = self.parameters()
        with torch.no_grad():
            for i, model in enumerate(models):
                for n, param in model.named_parameters():
                    param.copy_(p[n][i])


def train_many(models: Sequence[nn.Module], X: torch.Tensor, y: torch.Tensor, *,
               steps: int = 200, lr=1e-3, optimizer: str = "adam",
               batch_size: int | None = None, warmup=0, weight_decay: float = 0.0,
               adam_eps: float = 1e-8, loss_scale: float = 1.0, betas=ADAM_BETAS,
               seed: int = 0, device=None) -> list[History]:
    """Train ``K`` models of one architecture together; return one History per model.

    Equivalent to ``[dl.train(m, X, y, ...) for m in models]`` (up to float rounding) and
    usually 1.5 to 3 times faster. The models are trained in place.

    Parameters
    ----------
    models:
        Models with the same :func:`architecture_key` (e.g. DeepMLPs that differ only in seed,
        ``init`` or a fixed ``alpha``; or TinyTransformers that differ only in seed or ``init``).
    lr:
        One learning rate for all, or a list with one learning rate per model.
    warmup:
        One number of warm-up steps for all, or a list with one per model.
    betas:
        Adam's ``(beta1, beta2)``: PyTorch's default ``(0.9, 0.999)``, as in
        :func:`depthlab.train`, or ``(0.9, 0.98)``, as in :func:`depthlab.train_sequence`.
    steps, optimizer, batch_size, weight_decay, adam_eps, loss_scale, seed, device:
        As in :func:`depthlab.train` (Adam, or SGD with momentum 0.9; every model sees the same
        minibatches). Per-layer gradient norms, update ratios and alphas are always recorded.

    A model whose loss becomes NaN or infinite stops there (its ``diverged_at`` is set and its
    later rows are NaN, as with :func:`depthlab.train`); the others go on unaffected.

    Introduced in Chapter 5 (chapters/05_pre_post_norm).
    """
    models = list(models)
    if not models:
        raise ValueError("models must hold at least one model")
    for m in models:
        _checks.trainable(m)
    keys = {architecture_key(m) for m in models}
    if len(keys) != 1:
        raise ValueError("train_many needs models of one architecture (same depth, width, "
                         "residual, norm, shortcut, activation and learned-or-fixed alpha); "
                         "use train_together to group models of several architectures")
    _check_batchable(models[0])
    warmups = _warmups(warmup, len(models))
    recipe = _checks.recipe(steps, optimizer, 0, X, y, batch_size, weight_decay, adam_eps, seed,
                            loss_scale)
    del recipe["warmup"]  # one per model, above
    betas = _checks.betas(betas)
    lrs = _learning_rates(lr, len(models))
    _checks.same_dtype(models[0], X)
    device = default_device() if device is None else torch.device(device)
    with _on(models, device):
        trainee = _ManyModels(models, optimizer, lrs=lrs, weight_decay=recipe["weight_decay"],
                              adam_eps=recipe["adam_eps"], loss_scale=recipe["loss_scale"],
                              betas=betas)
        rows, factors, diverged = _fit(
            trainee, X.to(device), y.to(device), steps=recipe["steps"], warmup=warmups,
            batch_size=recipe["batch_size"], seed=recipe["seed"], device=device,
            columns=trainee.columns)
        trainee.copy_to(models)
    L = trainee.n_layers
    return [History(loss=r[:, 0], accuracy=r[:, 1], grad_norms=r[:, 2:2 + L],
                    update_ratio=r[:, 2 + L:2 + 2 * L], alphas=r[:, 2 + 2 * L:],
                    lr=lr_i * f, diverged_at=d,
                    meta=dict(lr=lr_i, warmup=w, device=str(device),
                              trained_together=len(models), **recipe,
                              **({"betas": betas} if optimizer == "adam" else {})))
            for r, lr_i, w, f, d in zip(rows, lrs, warmups, factors, diverged)]


def train_together(models: Mapping, X: torch.Tensor, y: torch.Tensor, *, lr=1e-3, warmup=0,
                   **kwargs) -> dict:
    """Train a dict of models, batching those that share an architecture; return their Histories.

    Parameters
    ----------
    models:
        ``{key: model}``; models with the same :func:`architecture_key` are trained together
        by :func:`train_many`, the others separately.
    lr:
        One learning rate for all, or a dict ``{key: lr}`` with the same keys as ``models``.
    warmup:
        One number of warm-up steps for all, or a dict ``{key: steps}`` with the same keys.
    **kwargs:
        Passed on to :func:`train_many` (``steps``, ``optimizer``, ``batch_size``, ...).

    Returns ``{key: History}`` in the order of ``models``.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """
    if not isinstance(models, Mapping) or not models:
        raise ValueError("models must be a non-empty dict {key: model}")
    lrs = _per_key("learning rates", lr, models)
    warmups = _per_key("warm-up lengths", warmup, models)
    groups: dict = {}
    for key, model in models.items():
        groups.setdefault(architecture_key(model), []).append(key)
    out = {}
    for keys in groups.values():
        histories = train_many([models[key] for key in keys], X, y,
                               lr=[lrs[key] for key in keys],
                               warmup=[warmups[key] for key in keys], **kwargs)
        out.update(zip(keys, histories))
    return {key: out[key] for key in models}


def _per_key(what: str, value, models: Mapping) -> dict:
    """``value`` for every key of ``models``: a dict with exactly those keys, or one value."""
    if isinstance(value, Mapping):
        if set(value) != set(models):
            raise ValueError(f"a dict of {what} needs exactly the keys of models")
        return dict(value)
    return {key: value for key in models}

