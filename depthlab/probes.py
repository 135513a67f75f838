"""Instruments for looking inside a deep network: activations, gradients, Jacobians.

* :class:`Probe` hooks every block of a model and records, for one forward/backward pass, each
  block's output ``x_l`` and the gradient of the loss with respect to it, ``dL/dx_l``.
* :func:`weight_grad_norms` reads the gradient norm of each block's weight matrix.
* :func:`gradient_norms` and :func:`update_ratios`: what the training loops record of every
  step, per block (one implementation for :func:`depthlab.train` and :mod:`depthlab.fast`).
* :func:`jacobian` and :func:`jacobian_singular_values` compute the input-output Jacobian of a
  (small) function at one input and its singular values.
* :func:`position_similarity` says how alike the positions of a sequence are (1 when every
  position carries the same vector: the rank collapse of deep attention stacks), and
  :func:`distance_from_rank_one` how far a sequence is from that collapse; :func:`input_share`
  measures the same thing across the inputs of a batch, layer by layer.
* :func:`block_contributions` measures what each block of a trained residual MLP adds to the
  stream; :func:`forward_through` and :func:`accuracy_without` run it with blocks deleted or
  reordered.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from ._checks import block_indices
from .models import DeepMLP


class Probe:
    """Record each block's output and, after ``backward()``, the gradient with respect to it.

    Use it as a context manager around one forward and backward pass::

        with Probe(model) as probe:
            loss = loss_fn(model(u), y)
            loss.backward()
        probe.activation_stats()      # per-layer mean, std and RMS of x_1 .. x_L
        probe.stream_grad_norms()     # per-layer ||dL/dx_l||

    The hooks are removed when the ``with`` block ends. Each ``with`` block records a pass of its
    own: ``with probe:`` again hooks the same blocks anew and forgets the previous pass.

    Introduced in Chapter 1 (chapters/01_depth_problem).
    """

    def __init__(self, model: nn.Module, modules=None):
        self._modules = list(model.blocks if modules is None else modules)
        if not self._modules:
            raise ValueError("Probe needs a model with at least one block (model.blocks is empty)")
        self.outputs: list[torch.Tensor] = []
        self._handles = []
        self._attach()

    def _attach(self) -> None:
        self._handles = [m.register_forward_hook(self._keep) for m in self._modules]

    def _keep(self, module, inputs, output):
        if output.requires_grad:
            output.retain_grad()  # so that dL/dx_l survives the backward pass
        self.outputs.append(output)

    def __enter__(self):
        if not self._handles:  # a second `with`: the first one removed the hooks
            self._attach()
        self.outputs = []
        return self

    def __exit__(self, *exc):
        self.remove()

    def remove(self) -> None:
        """Remove the hooks (done for you by the ``with`` statement)."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def _recorded(self) -> list[torch.Tensor]:
        if not self.outputs:
            raise ValueError("no forward pass was recorded: run the model inside the Probe first")
        if len(self.outputs) != len(self._modules):
            raise ValueError(f"the Probe recorded {len(self.outputs)} block outputs from "
                             f"{len(self._modules)} blocks: run exactly one forward pass inside "
                             "each `with probe:` block")
        return self.outputs

    def activation_stats(self) -> dict[str, np.ndarray]:
        """Mean, standard deviation and root-mean-square of each recorded output, per layer."""
        xs = [x.detach().float() for x in self._recorded()]
        return {
            "mean": np.array([x.mean().item() for x in xs]),
            "std": np.array([x.std().item() for x in xs]),
            "rms": np.array([rms(x) for x in xs]),
        }

    def stream_grad_norms(self) -> np.ndarray:
        """``||dL/dx_l||`` (Frobenius norm over the batch) for each recorded output."""
        if self._recorded()[0].grad is None:
            raise ValueError("no gradients were recorded: call loss.backward() inside the Probe")
        # float64: in a vanishing network the entries are ~1e-24 and their squares underflow float32
        return np.array([x.grad.double().norm().item() for x in self.outputs])


def each_norm(tensors) -> torch.Tensor:
    """The norm of each tensor of a list (over all its entries), stacked: one per layer."""
    return torch.stack([t.norm() for t in tensors])


def gradient_norms(grads, loss_scale: float = 1.0, norms=each_norm) -> torch.Tensor:
    """``||dL/dW_l||`` of each layer, in float64, of the loss itself.

    ``grads`` holds one gradient per layer (a list, or a stacked tensor that ``norms`` reads);
    ``norms`` turns them into one norm per layer (default :func:`each_norm`; the fast path
    passes its own, for ``K`` models at once). A gradient of ``loss_scale`` times the loss is
    divided back, so the record is the loss's own gradient.
    """
    # float64 norms: squares of vanishing float32 gradients (~1e-23) would underflow to zero
    doubled = grads.double() if isinstance(grads, torch.Tensor) else [g.double() for g in grads]
    return norms(doubled) / loss_scale


def update_ratios(before, after, norms=each_norm) -> torch.Tensor:
    """Each layer's update-to-data ratio ``||W_l(after) - W_l(before)|| / ||W_l(before)||``
    (Karpathy's favourite diagnostic); ``before``, ``after`` and ``norms`` as in
    :func:`gradient_norms`."""
    change = (after - before if isinstance(after, torch.Tensor)
              else [a - b for a, b in zip(after, before)])
    return norms(change) / norms(before).clamp_min(1e-30)


def rms(t: torch.Tensor) -> float:
    """The root mean square of a tensor's entries, ``sqrt(mean(t^2))``, as a float: the typical
    size of one entry, whatever the tensor's shape.

    Introduced in Chapter 8 (chapters/08_transformers).
    """
    if not isinstance(t, torch.Tensor) or t.numel() == 0:
        raise ValueError(f"t must be a tensor with at least one entry, got {t!r}")
    return float(t.detach().pow(2).mean().sqrt())


def parameter_count(model: nn.Module) -> int:
    """The number of numbers in ``model``'s parameters (trainable or not; buffers excluded).

    Introduced in Chapter 7 (chapters/07_resnets_as_built).
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters())


def weight_grad_norms(model: nn.Module) -> np.ndarray:
    """The Frobenius norm of ``dL/dW_l`` for each block's weight, after ``loss.backward()``.

    Introduced in Lab 4 (labs/lab4_preln_postln).
    """
    weights = model.block_weights()
    if any(w.grad is None for w in weights):
        raise ValueError("some block weights have no gradient yet: call loss.backward() first")
    return gradient_norms([w.grad for w in weights]).cpu().numpy()


def jacobian(f, x: torch.Tensor) -> torch.Tensor:
    """The Jacobian ``df/dx`` at a single input vector ``x`` (shape ``(n_out, n_in)``).

    Introduced in Chapter 5 (chapters/05_pre_post_norm).
    """
    if x.dim() != 1:
        raise ValueError(f"jacobian expects one input vector (1-D tensor), got shape {tuple(x.shape)}")
    return torch.autograd.functional.jacobian(f, x)


def jacobian_singular_values(f, x: torch.Tensor) -> np.ndarray:
    """Singular values of the Jacobian of ``f`` at ``x``, largest first.

    Introduced in Chapter 3 (chapters/03_gradient_highway).
    """
    return torch.linalg.svdvals(jacobian(f, x).double()).cpu().numpy()


@torch.no_grad()
def position_similarity(z: torch.Tensor) -> float:
    """Mean cosine similarity between the positions of each sequence, averaged over sequences.

    ``z`` has shape ``(batch, length, width)``, e.g. a transformer's normalized top of the
    stream. Each vector is centred over its features first (as LayerNorm does), so that a shared
    offset does not count as similarity. 1 means every position of a sequence carries the same
    vector; independent random vectors give about 0.

    Introduced in Lab 4 (labs/lab4_preln_postln).
    """
    if z.dim() != 3 or z.shape[1] < 2:
        raise ValueError(f"z must be a (batch, length, width) tensor with length >= 2, "
                         f"got shape {tuple(z.shape)}")
    z = z - z.mean(-1, keepdim=True)
    z = z / z.norm(dim=-1, keepdim=True)
    cos = z @ z.transpose(1, 2)                                 # (batch, length, length)
    length = z.shape[1]
    return float(((cos.sum((1, 2)) - length) / (length * (length - 1))).mean())


@torch.no_grad()
def input_share(model: nn.Module, X: torch.Tensor) -> np.ndarray:
    """``s_l = ||x_l - mean(x_l)||_F / ||x_l||_F`` for ``l = 0..L``, the mean
    taken over the examples of ``X``: the share of the stream ``x_l`` that
    depends on the input (0 when every input gives the same ``x_l``).

    Computed on a float64 copy of ``model`` (a model with ``stream``, such as
    :class:`~depthlab.DeepMLP`), so that it shows the arithmetic and not
    float32's rounding.

    Introduced in Lab 1 (labs/lab1_fifty_layers).
    """
    if not callable(getattr(model, "stream", None)):
        raise ValueError(f"model must have a stream() method, such as "
                         f"dl.DeepMLP; got {type(model).__name__}")
    model64 = copy.deepcopy(model).double().cpu()
    xs = model64.stream(X.double().cpu())
    return np.array([((x - x.mean(0)).norm() / x.norm()).item() for x in xs])


def distance_from_rank_one(x: torch.Tensor) -> float:
    """``r(X) = ||X - 1 mean(X)^T||_F / ||X||_F`` for each sequence ``X`` of
    ``x`` (shape ``(batch, length, width)``), the median over the batch: 0
    when every position carries the same vector, 1 when the mean over
    positions is negligible.

    Introduced in Chapter 8 (chapters/08_transformers).
    """
    if x.dim() != 3:
        raise ValueError(f"x must be a (batch, length, width) tensor, got "
                         f"shape {tuple(x.shape)}")
    centred = x - x.mean(dim=1, keepdim=True)  # minus the sequence's mean
    return float((centred.norm(dim=(1, 2)) / x.norm(dim=(1, 2))).median())


def _residual_mlp(model: nn.Module) -> None:
    if not isinstance(model, DeepMLP) or not all(
            b.residual and b.proj is None and b.norm_position != "post" for b in model.blocks):
        raise ValueError("the model must be a residual dl.DeepMLP whose blocks add "
                         "alpha_l F_l(x) to the stream (no post-norm, no projection)")


@torch.no_grad()
def block_contributions(model: nn.Module, X: torch.Tensor) -> np.ndarray:
    """``r_l = ||alpha_l F_l(x_{l-1})|| / ||x_{l-1}||`` for each block
    ``l = 1..L`` of a residual :class:`~depthlab.DeepMLP` on the inputs ``X``:
    how much the block changes the stream it reads (norms over the batch).

    Introduced in Chapter 6 (chapters/06_tradeoffs).
    """
    _residual_mlp(model)
    x, r = model.embed(X), []
    for block in model.blocks:
        update = block.alpha * block.branch(x)
        r.append((update.norm() / x.norm()).item())
        x = block(x)
    return np.array(r)


def forward_through(model: nn.Module, X: torch.Tensor, order) -> torch.Tensor:
    """The logits of a :class:`~depthlab.DeepMLP` run through only the blocks
    listed in ``order`` (counted from 0), in that order: ``range(L)`` gives
    ``model(X)``; leaving ``l`` out deletes block ``l`` (the stream skips
    it); a permutation reorders the blocks.

    Introduced in Lab 2 (labs/lab2_ensembles); Chapter 6's
    :func:`accuracy_without` is built on it.
    """
    if not isinstance(model, DeepMLP):
        raise ValueError(f"model must be a dl.DeepMLP, got "
                         f"{type(model).__name__}")
    order = block_indices("order", order, len(model.blocks))
    x = model.embed(X)
    for l in order:
        x = model.blocks[l](x)
    return model.head(model.final_norm(x))


@torch.no_grad()
def accuracy_without(model: nn.Module, removed, X: torch.Tensor,
                     y: torch.Tensor) -> float:
    """Accuracy on ``(X, y)`` of a :class:`~depthlab.DeepMLP` with the blocks
    whose indices (counted from 0) are in ``removed`` deleted: the stream
    skips them.

    Introduced in Chapter 6 (chapters/06_tradeoffs).
    """
    removed = block_indices("removed", removed, len(model.blocks))
    kept = [l for l in range(len(model.blocks)) if l not in removed]
    return (forward_through(model, X, kept).argmax(1) == y).float().mean().item()
