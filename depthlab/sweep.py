"""Train several networks of one architecture at once, and the sweeps the labs build on it.

Labs compare many small networks: the same architecture under several seeds, inits, branch
scales or learning rates. Trained one after the other, their cost is dominated by Python overhead
(a few hundred tiny operations per step), so :func:`train_many` trains ``K`` models *together*:
their parameters are stacked along a new leading axis (``torch.func.stack_module_state``) and one
``torch.vmap`` of the model's own ``forward`` runs all of them in each operation. Every member
still sees what :func:`depthlab.train` would give it (same data order, same optimizer arithmetic,
its own learning rate and its own divergence check), up to float rounding, and gets the same
:class:`~depthlab.train.History`.

* :func:`train_together` takes a dict of models of *different* architectures, groups the ones
  that can share a batch and calls :func:`train_many` once per group.
* :func:`depth_sweep` builds, trains and measures every (family, depth, seed) combination.
* :func:`first_steps` reads a short run off a long one; :func:`markdown_table` shows a table.

What may differ inside one batch: the initial values of the parameters and buffers (seed,
``init``, a fixed ``alpha`` such as ``1.0`` or ``"1/sqrt(L)"``) and the learning rate. What may
not: anything that changes the code path of ``forward`` (depth, width, ``residual``, ``norm``,
``shortcut``, ``activation``, whether ``alpha`` is learned). Models whose modules share (tie)
weights are not supported.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state

from ._checks import finite_float, positive_int
from .reproduce import default_device
from .train import (
    History,
    check_recipe,
    minibatch,
    warmup_factor,
)

_ADAM_BETAS, _MOMENTUM = (0.9, 0.999), 0.9


def architecture_key(model: nn.Module):
    """A hashable description of what decides ``model``'s code path (see the module docstring).

    Two models with the same key can be trained together by :func:`train_many`.
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


def _block_weight_names(model: nn.Module) -> list[str]:
    by_id = {id(p): n for n, p in model.named_parameters()}
    names = [by_id.get(id(w)) for w in model.block_weights()]
    if None in names:
        raise ValueError("block_weights() must return parameters of the model itself")
    return names


def train_many(models: Sequence[nn.Module], X: torch.Tensor, y: torch.Tensor, *,
               steps: int = 200, lr=1e-3, optimizer: str = "adam",
               batch_size: int | None = None, warmup: int = 0, weight_decay: float = 0.0,
               adam_eps: float = 1e-8, seed: int = 0, device=None) -> list[History]:
    """Train ``K`` models of one architecture together; return one History per model.

    Equivalent to ``[dl.train(m, X, y, ...) for m in models]`` (up to float rounding) and
    usually 1.5 to 3 times faster. The models are trained in place.

    Parameters
    ----------
    models:
        Models with the same :func:`architecture_key` (e.g. DeepMLPs that differ only in seed,
        ``init`` or a fixed ``alpha``).
    lr:
        One learning rate for all, or a list with one learning rate per model.
    steps, optimizer, batch_size, warmup, weight_decay, adam_eps, seed, device:
        As in :func:`depthlab.train` (Adam with PyTorch's defaults, or SGD with momentum 0.9;
        every model sees the same minibatches). Per-layer gradient norms, update ratios and
        alphas are always recorded.

    A model whose loss becomes NaN or infinite stops there (its ``diverged_at`` is set and its
    later rows are NaN, as with :func:`depthlab.train`); the others go on unaffected.
    """
    models = list(models)
    if not models:
        raise ValueError("models must hold at least one model")
    keys = {architecture_key(m) for m in models}
    if len(keys) != 1:
        raise ValueError("train_many needs models of one architecture (same depth, width, "
                         "residual, norm, shortcut, activation and learned-or-fixed alpha); "
                         "use train_together to group models of several architectures")
    k = len(models)
    steps, warmup, batch_size, weight_decay, adam_eps = check_recipe(
        steps, optimizer, warmup, X, y, batch_size, weight_decay, adam_eps)
    lrs = _learning_rates(lr, k)
    device = default_device() if device is None else torch.device(device)
    homes = [next(m.parameters()).device for m in models]  # where the caller keeps them
    for m in models:
        m.to(device).train()
    X, y = X.to(device), y.to(device)

    params, buffers = stack_module_state(models)
    names = list(params)
    w_names = _block_weight_names(models[0])
    n_layers = len(w_names)
    same_shape = len({params[n].shape for n in w_names}) == 1
    a_names = [f"blocks.{i}.alpha" for i in range(n_layers)]
    has_alpha = all(n in params or n in buffers for n in a_names)
    base = copy.deepcopy(models[0]).to("meta")

    def forward(p, b, xb):
        # DeepMLP shares no weights between modules, so there is nothing to tie
        return functional_call(base, (p, b), (xb,), tie_weights=False)

    batched = torch.vmap(forward, in_dims=(0, 0, None))
    lr0 = torch.tensor(lrs, dtype=params[names[0]].dtype, device=device)
    active = torch.ones(k, dtype=torch.bool, device=device)
    # per-parameter views of a (K,) vector, so that it broadcasts against (K, ...) tensors
    views = {n: (k,) + (1,) * (params[n].dim() - 1) for n in names}
    state1 = {n: torch.zeros_like(params[n]) for n in names}  # Adam m, or SGD momentum
    state2 = {n: torch.zeros_like(params[n]) for n in names}  # Adam v

    g = torch.Generator().manual_seed(int(seed))
    losses_h = np.full((k, steps), np.nan)
    acc_h = np.full((k, steps), np.nan)
    grads_h, ratios_h, alphas_h = (np.full((k, steps, n_layers), np.nan) for _ in range(3))
    lr_h = np.zeros(steps)
    diverged: list[int | None] = [None] * k

    for t in range(steps):
        factor = warmup_factor(t, warmup)
        lr_h[t] = factor
        xb, yb = minibatch(g, X, y, batch_size, device)
        logits = batched(params, buffers, xb)                       # (K, B, classes)
        per_example = nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), yb.repeat(k), reduction="none")
        losses = per_example.view(k, -1).mean(1)                    # (K,)
        finite = torch.isfinite(losses)
        newly = (active & ~finite).cpu().numpy()
        for i in np.flatnonzero(newly):
            diverged[i] = t
        active = active & finite
        if not bool(active.any()):
            break
        total = torch.where(active, losses, torch.zeros_like(losses)).sum()
        grads = dict(zip(names, torch.autograd.grad(total, [params[n] for n in names])))
        if not bool(active.all()):
            # a diverged model keeps its last finite weights: no gradient, no step
            grads = {n: torch.where(active.view(views[n]), gr, torch.zeros_like(gr))
                     for n, gr in grads.items()}

        with torch.no_grad():
            if same_shape:
                before = torch.stack([params[n] for n in w_names], 1).clone()
                grad_t = torch.stack([grads[n] for n in w_names], 1).double()
                grad_t = grad_t.flatten(2).norm(dim=2)               # (K, L), float64
            else:
                before = [params[n].clone() for n in w_names]
                grad_t = torch.stack([grads[n].double().flatten(1).norm(dim=1)
                                      for n in w_names], 1)
            step_lr = lr0 * factor * active
            if weight_decay:
                # L2 on the gradient, as torch.optim does (after the gradient norms are read);
                # a diverged model still gets no step
                grads = {n: torch.where(active.view(views[n]),
                                        gr.add(params[n], alpha=weight_decay), 0.0)
                         for n, gr in grads.items()}
            _step(optimizer, t + 1, params, grads, state1, state2,
                  {n: step_lr.view(views[n]) for n in names}, adam_eps)
            if same_shape:
                after = torch.stack([params[n] for n in w_names], 1)
                ratio_t = ((after - before).flatten(2).norm(dim=2)
                           / before.flatten(2).norm(dim=2).clamp_min(1e-30))
            else:
                ratio_t = torch.stack([(params[n] - b).flatten(1).norm(dim=1)
                                       / b.flatten(1).norm(dim=1).clamp_min(1e-30)
                                       for n, b in zip(w_names, before)], 1)
            if has_alpha:
                pool = {**buffers, **params}
                alpha_t = torch.stack([pool[n] for n in a_names], 1)
            else:
                alpha_t = torch.zeros_like(grad_t)
            acc = (logits.argmax(2) == yb).float().mean(1)
            row = torch.cat([losses.double()[:, None], acc.double()[:, None], grad_t,
                             ratio_t.double(), alpha_t.double()], 1).cpu().numpy()
        alive = active.cpu().numpy()
        losses_h[alive, t], acc_h[alive, t] = row[alive, 0], row[alive, 1]
        grads_h[alive, t] = row[alive, 2:2 + n_layers]
        ratios_h[alive, t] = row[alive, 2 + n_layers:2 + 2 * n_layers]
        alphas_h[alive, t] = row[alive, 2 + 2 * n_layers:]

    with torch.no_grad():
        for i, m in enumerate(models):
            for n, p in m.named_parameters():
                p.copy_(params[n][i])
    for m, home in zip(models, homes):
        m.to(home)  # trained on `device`, handed back where it was

    return [History(loss=losses_h[i], accuracy=acc_h[i], grad_norms=grads_h[i],
                    update_ratio=ratios_h[i], alphas=alphas_h[i], lr=lrs[i] * lr_h,
                    diverged_at=diverged[i],
                    meta=dict(steps=steps, lr=lrs[i], optimizer=optimizer,
                              batch_size=batch_size, warmup=warmup, weight_decay=weight_decay,
                              adam_eps=adam_eps, seed=seed, device=str(device),
                              trained_together=k))
            for i in range(k)]


def _step(optimizer, t, params, grads, m, v, lr, adam_eps):
    """One in-place update of every stacked parameter, with PyTorch's Adam / SGD arithmetic.

    ``lr`` maps each parameter name to a learning rate that broadcasts against it (one per
    model). The ``torch._foreach_*`` calls are the multi-tensor kernels ``torch.optim`` uses.
    """
    names = list(params)
    p_, g_, m_, lr_ = ([d[n] for n in names] for d in (params, grads, m, lr))

    if optimizer == "adam":
        b1, b2 = _ADAM_BETAS
        c1, c2 = 1 - b1 ** t, math.sqrt(1 - b2 ** t)
        v_ = [v[n] for n in names]
        torch._foreach_lerp_(m_, g_, 1 - b1)
        torch._foreach_mul_(v_, b2)
        torch._foreach_addcmul_(v_, g_, g_, value=1 - b2)
        denom = torch._foreach_sqrt(v_)
        torch._foreach_div_(denom, c2)
        torch._foreach_add_(denom, adam_eps)
        update = torch._foreach_div(m_, denom)
        torch._foreach_mul_(update, [r / c1 for r in lr_])
    else:
        if t == 1:
            torch._foreach_copy_(m_, g_)
        else:
            torch._foreach_mul_(m_, _MOMENTUM)
            torch._foreach_add_(m_, g_)
        update = torch._foreach_mul(m_, lr_)
    torch._foreach_sub_(p_, update)


def train_together(models: Mapping, X: torch.Tensor, y: torch.Tensor, *, lr=1e-3,
                   **kwargs) -> dict:
    """Train a dict of models, batching those that share an architecture; return their Histories.

    Parameters
    ----------
    models:
        ``{key: model}``; models with the same :func:`architecture_key` are trained together
        by :func:`train_many`, the others separately.
    lr:
        One learning rate for all, or a dict ``{key: lr}`` with the same keys as ``models``.
    **kwargs:
        Passed on to :func:`train_many` (``steps``, ``optimizer``, ``batch_size``, ...).

    Returns ``{key: History}`` in the order of ``models``.
    """
    if not isinstance(models, Mapping) or not models:
        raise ValueError("models must be a non-empty dict {key: model}")
    if isinstance(lr, Mapping):
        if set(lr) != set(models):
            raise ValueError("a dict of learning rates needs exactly the keys of models")
        lrs = dict(lr)
    else:
        lrs = {key: lr for key in models}
    groups: dict = {}
    for key, model in models.items():
        groups.setdefault(architecture_key(model), []).append(key)
    out = {}
    for keys in groups.values():
        histories = train_many([models[key] for key in keys], X, y,
                               lr=[lrs[key] for key in keys], **kwargs)
        out.update(zip(keys, histories))
    return {key: out[key] for key in models}


def markdown_table(header: Sequence, rows: Sequence[Sequence]):
    """Show a table as Markdown (rendered as a real table in Jupyter and on the site).

    ``header`` is the list of column titles and ``rows`` a list of rows with one cell per column;
    cells are turned into text with ``str`` (format numbers before passing them). Returns an
    ``IPython.display.Markdown`` object: leave it last in a cell, or ``display`` it.
    """
    from IPython.display import Markdown

    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column")
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for i, row in enumerate(rows):
        cells = [str(c).replace("|", "\\|") for c in row]
        if len(cells) != len(header):
            raise ValueError(f"row {i} has {len(cells)} cells, the header has {len(header)}")
        lines.append("| " + " | ".join(cells) + " |")
    return Markdown("\n".join(lines))


def first_steps(history: History, steps: int) -> History:
    """``history.first(steps)``; kept for notebooks written before :meth:`History.first`."""
    return history.first(steps)


def depth_sweep(make, families: Sequence, depths: Sequence[int], seeds: Sequence[int],
                X: torch.Tensor, y: torch.Tensor, **train_kwargs):
    """Train ``make(family, depth, seed)`` for every combination and measure it on ``(X, y)``.

    Parameters
    ----------
    make:
        ``make(family, depth, seed) -> model``: builds one untrained network.
    families, depths, seeds:
        What to combine (``families`` can be any iterable of hashable names, e.g. a dict).
    X, y:
        Training data; each trained network's loss and accuracy are measured on all of it.
    **train_kwargs:
        Passed on to :func:`train_together` (``steps``, ``lr``, ``optimizer``, ``batch_size``,
        ``device``, ...). The seeds of one architecture are trained together.

    Returns ``(models, histories, losses, accuracies)``: four dicts keyed by
    ``(family, depth, seed)``, holding the trained models, their Histories, and their final
    training loss and accuracy on ``(X, y)``.
    """
    from .train import accuracy, evaluate_loss

    families, depths, seeds = list(families), list(depths), list(seeds)
    for name, values in [("families", families), ("depths", depths), ("seeds", seeds)]:
        if not values:
            raise ValueError(f"{name} must list at least one value")
    for d in depths:
        positive_int("depth", d)
    models = {(f, d, s): make(f, d, s) for f in families for d in depths for s in seeds}
    histories = train_together(models, X, y, **train_kwargs)
    losses = {key: evaluate_loss(m, X, y) for key, m in models.items()}
    accuracies = {key: accuracy(m, X, y) for key, m in models.items()}
    return models, histories, losses, accuracies
