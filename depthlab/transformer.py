"""A tiny transformer with the LayerNorm before (pre-LN) or after (post-LN) each residual sum.

Each block has two sub-layers, self-attention ``A`` and a feed-forward network
``FFN(x) = W_2 relu(W_1 x + b_1) + b_2``, each wrapped in a residual connection. The two
placements of LayerNorm differ only in where ``LN`` sits:

=========  ===========================================================
post-LN    ``x <- LN(x + A(x))``,      then ``x <- LN(x + FFN(x))``
pre-LN     ``x <- x + A(LN(x))``,      then ``x <- x + FFN(LN(x))``
=========  ===========================================================

Post-LN is the original transformer (Vaswani et al. 2017); pre-LN is what most large models use
today, with one extra LayerNorm after the last block (Xiong et al. 2020). Two variants found in
published models are options: DeepNorm (Wang et al. 2022, ``norm="deepnorm"``: post-LN with the
shortcut multiplied by ``alpha = (2L)^(1/4)`` and some weights initialized smaller by
``beta = (8L)^(-1/4)``, the constants of their encoder-only models) and RMSNorm in place of
LayerNorm (Zhang and Sennrich 2019, ``norm_layer="rms"``). ``init="gpt2"`` is GPT-2's
initialization (Radford et al. 2019): every weight from N(0, 0.02^2), and the two matrices that
write into the residual stream (the attention output and ``W_2``) from N(0, (0.02 / sqrt(2L))^2).
``residual=False`` removes both skips of every block, and ``layer_drop=p`` skips each block with
probability ``p`` at every training step (LayerDrop, Fan et al. 2020). The model is an encoder
(every position attends to every other, no mask) that reads a sequence of tokens and predicts one
token per position, which is all the generated tasks of :func:`sequence_task` need.

* :class:`TransformerBlock` and :class:`TinyTransformer`: the model;
* :func:`sequence_task`: a seeded copy / reverse / sort data set;
* :func:`train_sequence`: Adam with optional linear warm-up, returning a :class:`SeqHistory`.

``TinyTransformer.block_weights()`` returns each block's FFN output matrix ``W_2``, whose gradient
norms :func:`depthlab.weight_grad_norms` reads, as Xiong et al. analyse them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from . import _checks
from ._checks import choice, finite_float, positive_int
from ._checks import seed as check_seed
from .seeds import default_device, seeded
from .training import Record, _evaluating, _fit, _on, _OneModel

TRANSFORMER_NORMS = ("pre", "post", "deepnorm")  # where a transformer block's norms sit
TRANSFORMER_NORM_LAYERS = ("layer", "rms")         # LayerNorm or RMSNorm
TRANSFORMER_INITS = ("xavier", "default", "gpt2")
GPT2_STD = 0.02  # GPT-2's standard deviation for every weight
TASKS = ("copy", "reverse", "sort")


def _check_heads(d_model: int, n_heads: int) -> None:
    if d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(f"n_heads must divide d_model={d_model}; got n_heads={n_heads} "
                         f"(allowed: {', '.join(map(str, divisors))})")


class TransformerBlock(nn.Module):
    """One encoder block: self-attention and a feed-forward network, each with a residual sum.

    Parameters
    ----------
    d_model:
        Width of the residual stream.
    n_heads:
        Number of attention heads; must divide ``d_model``.
    d_ff:
        Hidden width of the feed-forward network (default ``2 * d_model``).
    norm:
        ``"pre"`` (``x + F(LN(x))``), ``"post"`` (``LN(x + F(x))``) or ``"deepnorm"``
        (``LN(alpha x + F(x))`` with DeepNorm's initialization; needs ``n_layers``); see the
        module docstring.
    init:
        ``"xavier"`` (every weight matrix from Xavier's normal distribution, biases zero: the
        setting of Xiong et al.'s analysis), ``"default"`` (PyTorch's own initialization) or
        ``"gpt2"`` (GPT-2's; needs ``n_layers``).
    norm_layer:
        ``"layer"`` (LayerNorm) or ``"rms"`` (RMSNorm: no centring, no bias).
    residual:
        ``False`` drops both skips: ``x <- A(LN(x))`` (pre) or ``x <- LN(A(x))`` (post).
    n_layers:
        The number of blocks ``L`` of the model the block sits in; DeepNorm and GPT-2's init
        scale with it (default 1).
    seed:
        Seed of the initial weights (an integer >= 0), or ``None`` for PyTorch's global state.

    Introduced in Lab 4 (labs/lab4_preln_postln).
    """

    def __init__(self, d_model: int = 64, n_heads: int = 4, d_ff: int | None = None, *,
                 norm: str = "pre", init: str = "xavier", norm_layer: str = "layer",
                 residual: bool = True, n_layers: int = 1, seed=None):
        super().__init__()
        with seeded(seed):
            self._build(d_model, n_heads, d_ff, norm, init, norm_layer, residual, n_layers)

    def _build(self, d_model, n_heads, d_ff, norm, init, norm_layer, residual, n_layers):
        d_model = positive_int("d_model", d_model)
        n_heads = positive_int("n_heads", n_heads)
        _check_heads(d_model, n_heads)
        d_ff = 2 * d_model if d_ff is None else positive_int("d_ff", d_ff)
        self.norm_position = choice("norm", norm, TRANSFORMER_NORMS)
        choice("init", init, TRANSFORMER_INITS)
        choice("norm_layer", norm_layer, TRANSFORMER_NORM_LAYERS)
        _checks.boolean("residual", residual)
        n_layers = positive_int("n_layers", n_layers)
        if norm == "deepnorm" and init != "xavier":
            raise ValueError(f"norm='deepnorm' brings its own initialization (Xavier scaled by "
                             f"beta); use init='xavier' with it, got init={init!r}")
        self.residual = residual
        # False: attention by nn.MultiheadAttention's own (fused) kernel; True: by the
        # written-out formula, which torch.vmap can batch (train_many sets it on its copy)
        self.written_out = False
        # DeepNorm's constants for an encoder of L blocks (Wang et al. 2022)
        self.alpha = (2 * n_layers) ** 0.25 if norm == "deepnorm" else 1.0
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.norm1 = _norm_layer(norm_layer, d_model)
        self.norm2 = _norm_layer(norm_layer, d_model)
        if init == "xavier":
            self._xavier(d_model, beta=(8 * n_layers) ** -0.25 if norm == "deepnorm" else 1.0)
        elif init == "gpt2":
            self._gpt2(d_model, n_layers)

    def _qkv(self, d_model: int):
        # the query, key and value maps are stacked in one (3d, d) matrix: initialize each
        # d x d piece on its own, as three separate Linear layers would be
        return self.attn.in_proj_weight.split(d_model)

    def _xavier(self, d_model: int, beta: float = 1.0) -> None:
        # beta != 1 is DeepNorm: the value map, the attention output and the FFN start smaller
        with torch.no_grad():
            q, k, v = self._qkv(d_model)
            nn.init.xavier_normal_(q)
            nn.init.xavier_normal_(k)
            nn.init.xavier_normal_(v, gain=beta)
            nn.init.zeros_(self.attn.in_proj_bias)
            for layer in (self.attn.out_proj, self.ff1, self.ff2):
                nn.init.xavier_normal_(layer.weight, gain=beta)
                nn.init.zeros_(layer.bias)

    def _gpt2(self, d_model: int, n_layers: int) -> None:
        with torch.no_grad():
            for piece in self._qkv(d_model):
                nn.init.normal_(piece, std=GPT2_STD)
            nn.init.zeros_(self.attn.in_proj_bias)
            nn.init.normal_(self.ff1.weight, std=GPT2_STD)
            # the two writes into the residual stream: 2L of them add up over the model
            for layer in (self.attn.out_proj, self.ff2):
                nn.init.normal_(layer.weight, std=GPT2_STD / (2 * n_layers) ** 0.5)
            for layer in (self.attn.out_proj, self.ff1, self.ff2):
                nn.init.zeros_(layer.bias)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """The self-attention sub-layer ``A(x)`` (no mask: every position sees every other).

        Each head maps every position to a query, a key and a value, replaces every position
        by the average of the values weighted by ``softmax(query . key / sqrt(d_head))``, and
        ``out_proj`` mixes the heads. ``self.attn`` (``nn.MultiheadAttention``) holds the
        weights and computes it with PyTorch's fused kernel; with ``written_out = True`` the
        formula below computes it (equal up to float rounding; its softmax written out, faster
        on short rows), which ``torch.vmap`` can batch, as :func:`depthlab.train_many` does.
        """
        if not self.written_out:
            return self.attn(x, x, x, need_weights=False)[0]
        heads = self.attn.num_heads
        d_head = x.shape[-1] // heads
        qkv = nn.functional.linear(x, self.attn.in_proj_weight, self.attn.in_proj_bias)
        # (..., T, 3d) -> three (..., heads, T, d_head)
        q, k, v = qkv.unflatten(-1, (3, heads, d_head)).movedim(-4, -2).unbind(-4)
        scores = q @ k.transpose(-1, -2) / d_head ** 0.5
        e = (scores - scores.amax(-1, keepdim=True).detach()).exp()   # softmax, written out
        weights = e / e.sum(-1, keepdim=True)
        mixed = (weights @ v).movedim(-3, -2).flatten(-2)      # (..., T, d)
        return self.attn.out_proj(mixed)

    def ffn(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward sub-layer ``FFN(x) = W_2 relu(W_1 x + b_1) + b_2``."""
        return self.ff2(torch.relu(self.ff1(x)))

    def _skip(self, x: torch.Tensor) -> torch.Tensor | float:
        if not self.residual:
            return 0.0
        return x if self.alpha == 1.0 else self.alpha * x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.norm_position == "pre":
            x = self._skip(x) + self.attention(self.norm1(x))
            return self._skip(x) + self.ffn(self.norm2(x))
        x = self.norm1(self._skip(x) + self.attention(x))
        return self.norm2(self._skip(x) + self.ffn(x))


def _norm_layer(kind: str, d_model: int) -> nn.Module:
    return nn.LayerNorm(d_model) if kind == "layer" else nn.RMSNorm(d_model, eps=1e-5)


class TinyTransformer(nn.Module):
    """Token and position embeddings, ``depth`` blocks, and a linear read-out at every position.

    Parameters
    ----------
    vocab:
        Number of distinct tokens (inputs and outputs share the vocabulary), >= 2.
    seq_len:
        Longest sequence the position embedding covers.
    depth:
        Number of blocks ``L``, >= 1.
    d_model, n_heads, d_ff, norm, init, norm_layer, residual:
        Passed to every :class:`TransformerBlock` (with ``n_layers = depth``). ``init="gpt2"``
        also draws the token and position embeddings from N(0, 0.02^2).
    layer_drop:
        Probability, in [0, 1), that a block is skipped (the stream passes it unchanged) at a
        training step; every block runs in evaluation mode. The draws come from a generator
        seeded with ``seed``, so a run is repeatable.
    seed:
        Seed of the initial weights (an integer >= 0): the same model every time. ``None`` draws
        them from PyTorch's global random state.

    Pre-LN models get a final norm before the read-out (post-LN and DeepNorm blocks already end
    in one). Embeddings start from N(0, 1), as ``nn.Embedding`` does, except with
    ``init="gpt2"``. ``model.blocks`` is the list of blocks, ``model.stream(tokens)`` returns
    ``[x_0, ..., x_L]`` and ``model.logit_lens(tokens)`` the read-out of each of them.

    Introduced in Chapter 8 (chapters/08_transformers).
    """

    def __init__(self, vocab: int, seq_len: int, depth: int = 2, *, d_model: int = 64,
                 n_heads: int = 4, d_ff: int | None = None, norm: str = "pre",
                 init: str = "xavier", norm_layer: str = "layer", residual: bool = True,
                 layer_drop: float = 0.0, seed=None):
        super().__init__()
        layer_drop = finite_float("layer_drop", layer_drop, nonnegative=True)
        if layer_drop >= 1:
            raise ValueError(f"layer_drop must be in [0, 1) (a probability of skipping a "
                             f"block), got {layer_drop!r}")
        self.layer_drop = layer_drop
        self._drop_seed = 0 if seed is None else check_seed("seed", seed)
        self._drop_generator = None  # made at the first training step that drops blocks
        with seeded(seed):
            self._build(vocab, seq_len, depth, d_model, n_heads, d_ff, norm, init, norm_layer,
                        residual)

    def _build(self, vocab, seq_len, depth, d_model, n_heads, d_ff, norm, init, norm_layer,
               residual):
        vocab = positive_int("vocab", vocab, minimum=2)
        seq_len = positive_int("seq_len", seq_len)
        depth = positive_int("depth", depth)
        d_model = positive_int("d_model", d_model)
        self.norm_position = choice("norm", norm, TRANSFORMER_NORMS)
        choice("norm_layer", norm_layer, TRANSFORMER_NORM_LAYERS)
        self.config = dict(vocab=vocab, seq_len=seq_len, depth=depth, d_model=d_model,
                           n_heads=n_heads, d_ff=d_ff, norm=norm, init=init,
                           norm_layer=norm_layer, residual=residual,
                           layer_drop=self.layer_drop)
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq_len, d_model))
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff, norm=norm, init=init,
                             norm_layer=norm_layer, residual=residual, n_layers=depth)
            for _ in range(depth)
        )
        self.final_norm = (_norm_layer(norm_layer, d_model) if norm == "pre"
                           else nn.Identity())
        self.head = nn.Linear(d_model, vocab)
        if init == "gpt2":
            with torch.no_grad():
                for weight in (self.embed.weight, self.pos, self.head.weight):
                    nn.init.normal_(weight, std=GPT2_STD)
                nn.init.zeros_(self.head.bias)

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2:
            raise ValueError(f"tokens must be a (batch, length) tensor of token ids, "
                             f"got shape {tuple(tokens.shape)}")
        if tokens.shape[1] > self.pos.shape[0]:
            raise ValueError(f"sequences of length {tokens.shape[1]} are longer than "
                             f"seq_len={self.pos.shape[0]}")
        return self.embed(tokens) + self.pos[: tokens.shape[1]]

    def _kept(self) -> list[bool]:
        # LayerDrop: which blocks run at this training step (all of them when evaluating)
        if not (self.training and self.layer_drop > 0):
            return [True] * len(self.blocks)
        if self._drop_generator is None:
            self._drop_generator = torch.Generator().manual_seed(self._drop_seed)
        draws = torch.rand(len(self.blocks), generator=self._drop_generator)
        return (draws >= self.layer_drop).tolist()

    def stream(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream ``[x_0, x_1, ..., x_L]`` (x_0 = token + position embedding)."""
        xs = [self._embed(tokens)]
        for block, kept in zip(self.blocks, self._kept()):
            xs.append(block(xs[-1]) if kept else xs[-1])
        return xs

    def top(self, tokens: torch.Tensor) -> torch.Tensor:
        """The top of the stream as the read-out sees it: ``x_L`` after the final norm (the
        identity for Post-LN and DeepNorm, whose blocks end in their own norm).

        Introduced in Lab 6 (labs/lab6_which_block).
        """
        return self.final_norm(self.stream(tokens)[-1])

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits of shape ``(batch, length, vocab)``."""
        x = self._embed(tokens)
        for block, kept in zip(self.blocks, self._kept()):
            if kept:
                x = block(x)
        return self.head(self.final_norm(x))

    def logit_lens(self, tokens: torch.Tensor) -> torch.Tensor:
        """The read-out applied to every ``x_l`` of the stream: ``(L + 1, batch, length, vocab)``.

        Each ``x_l`` goes through the model's final norm and ``head``, as if the blocks above it
        were not there (the "logit lens"); the last entry is the model's own output.
        """
        return torch.stack([self.head(self.final_norm(x)) for x in self.stream(tokens)])

    def block_weights(self) -> list[torch.Tensor]:
        """The FFN output matrix ``W_2`` of each block, first block first."""
        return [b.ff2.weight for b in self.blocks]


def sequence_task(n: int, *, kind: str = "sort", length: int = 8, vocab: int = 16,
                  seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A generated sequence-to-sequence data set: inputs and the target token at every position.

    Parameters
    ----------
    n:
        Number of sequences.
    kind:
        ``"copy"`` (target = input), ``"reverse"`` (the input read backwards) or ``"sort"``
        (the input's tokens in increasing order).
    length:
        Tokens per sequence, >= 2.
    vocab:
        Tokens are drawn uniformly from ``0 .. vocab - 1``, >= 2.
    seed:
        Seed of the generator: the same arguments always give the same data.

    Returns ``(X, Y)``, two int64 tensors of shape ``(n, length)``.

    Introduced in Chapter 8 (chapters/08_transformers).
    """
    n = positive_int("n", n)
    choice("kind", kind, TASKS)
    length = positive_int("length", length, minimum=2)
    vocab = positive_int("vocab", vocab, minimum=2)
    g = torch.Generator().manual_seed(check_seed("seed", seed))
    X = torch.randint(0, vocab, (n, length), generator=g)
    if kind == "copy":
        Y = X.clone()
    elif kind == "reverse":
        Y = X.flip(1)
    else:
        Y = X.sort(dim=1).values
    return X, Y


@dataclass
class SeqHistory(Record):
    """What :func:`train_sequence` recorded; arrays have one entry per step.

    Introduced with :func:`train_sequence` in Chapter 8 (chapters/08_transformers).
    """

    loss: np.ndarray          # cross-entropy on the batch, per token
    accuracy: np.ndarray      # fraction of the batch's tokens predicted correctly
    grad_norm: np.ndarray     # norm of the whole gradient (all parameters) before each update
    lr: np.ndarray            # learning rate used at each step
    diverged_at: int | None = None
    meta: dict = field(default_factory=dict)
    snapshots: dict = field(default_factory=dict)  # step n -> the model after n steps


def train_sequence(model: nn.Module, X: torch.Tensor, Y: torch.Tensor, *, steps: int = 200,
                   lr: float = 1e-3, warmup: int = 0, batch_size: int = 64,
                   betas: tuple[float, float] = (0.9, 0.98), seed: int = 0,
                   snapshots=(), device=None) -> SeqHistory:
    """Train ``model`` to predict ``Y`` from ``X`` (cross-entropy at every position) with Adam.

    Parameters
    ----------
    model:
        A :class:`TinyTransformer` (anything mapping ``(batch, length)`` token ids to
        ``(batch, length, vocab)`` logits).
    X, Y:
        Inputs and targets from :func:`sequence_task`.
    steps:
        Number of optimizer steps, >= 1.
    lr:
        Peak learning rate, > 0.
    warmup:
        Number of steps over which the learning rate rises linearly from ``lr / warmup`` to ``lr``
        (0: the full rate from the first step).
    batch_size:
        Sequences per step, drawn without replacement each step from a seeded generator.
    betas:
        Adam's ``(beta1, beta2)``; the default ``(0.9, 0.98)`` is the original transformer's.
    seed:
        Seed for the batch order.
    snapshots:
        Step counts ``n`` (each in ``1 .. steps``) after which a copy of the model is kept, in
        ``history.snapshots[n]``. Such a copy is the model a run of ``n`` steps would return:
        the warm-up's ramp does not depend on the length of the run, and the batches and
        LayerDrop's draws come from seeded generators, so one long run gives the shorter runs
        too, without training them again. A run that diverges keeps none after that step. A
        snapshot holds the model, not Adam's state: training it further is a new run.
    device:
        Where to train; default CUDA when available, else the CPU.

    Training stops early, leaving the rest of the history as NaN and setting ``diverged_at``, if
    the loss becomes NaN or infinite.

    Introduced in Chapter 8 (chapters/08_transformers).
    """
    steps = positive_int("steps", steps)
    lr = finite_float("lr", lr, positive=True)
    warmup = positive_int("warmup", warmup, minimum=0)
    seed = check_seed("seed", seed)
    if X.shape != Y.shape or X.dim() != 2:
        raise ValueError(f"X and Y must be (n, length) tensors of the same shape, "
                         f"got {tuple(X.shape)} and {tuple(Y.shape)}")
    if batch_size is None:
        raise ValueError("batch_size must be an integer >= 1, got None")
    batch_size = _checks.batch_size(batch_size, len(X), "sequences")
    betas = _checks.betas(betas)
    _checks.same_dtype(model, X)
    keep = _snapshot_steps(snapshots, steps)
    device = default_device() if device is None else torch.device(device)
    home, mode, kept = next(model.parameters()).device, model.training, {}

    def after_step(n):  # a copy of the weights (not of this step's gradients), kept at home
        if n in keep:
            kept[n] = copy.deepcopy(model).to(home).train(mode)
            kept[n].zero_grad(set_to_none=True)

    with _on([model], device):
        trainee = _OneModel(model, "adam", lr=lr, betas=tuple(betas), record="total")
        rows, factors, (diverged_at,) = _fit(
            trainee, X.to(device), Y.to(device), steps=steps, warmup=warmup,
            batch_size=batch_size, seed=seed, device=device, columns=trainee.columns,
            after_step=after_step)
    rows = rows[0]
    return SeqHistory(loss=rows[:, 0], accuracy=rows[:, 1], grad_norm=rows[:, 2],
                      lr=lr * factors[0], diverged_at=diverged_at,
                      meta=dict(steps=steps, lr=lr, warmup=warmup, batch_size=batch_size,
                                betas=tuple(betas), seed=seed, device=str(device)),
                      snapshots=kept)


def _snapshot_steps(snapshots, steps: int) -> set[int]:
    if isinstance(snapshots, (str, bytes)) or not hasattr(snapshots, "__iter__"):
        raise ValueError(f"snapshots must be a list of step counts in 1..{steps}, got {snapshots!r}")
    keep = {positive_int("each of snapshots", n) for n in snapshots}
    if keep and max(keep) > steps:
        raise ValueError(f"each of snapshots must be <= steps={steps}, got {max(keep)}")
    return keep


@torch.no_grad()
def sequence_accuracy(model: nn.Module, X: torch.Tensor, Y: torch.Tensor) -> tuple[float, float]:
    """``(token accuracy, whole-sequence accuracy)`` of ``model`` on ``(X, Y)``, in one batch.

    Introduced in Chapter 8 (chapters/08_transformers).
    """
    device = next(model.parameters()).device
    with _evaluating(model):
        pred = model(X.to(device)).argmax(-1).cpu()
    right = pred == Y.cpu()
    return float(right.float().mean()), float(right.all(dim=1).float().mean())
