"""Measuring the memory a training step keeps for backward, portably (CPU or GPU).

Between the forward and the backward pass, autograd keeps the tensors that the backward pass will
need ("saved tensors"): layer inputs, activation outputs and so on. That is the *activation
memory* of training, and it is exactly what gradient checkpointing trades for recomputation.
``torch.cuda.max_memory_allocated`` only exists on a GPU; the hooks used here,
:func:`torch.autograd.graph.saved_tensors_hooks`, work on every device:

* :class:`SavedTensorMeter` counts the bytes of every distinct storage saved for backward while
  it is active, leaving out the ones you name (usually the parameters, which are kept anyway);
* :func:`saved_bytes` runs a function under a meter and returns its output and the count;
* :func:`format_bytes` prints a byte count in KiB or MiB.

Tensors saved inside a region wrapped in ``torch.utils.checkpoint.checkpoint(...,
use_reentrant=False)`` are *not* kept (checkpointing installs its own, inner hooks and recomputes
them during backward), so the meter sees only what checkpointing really stores: the inputs of the
checkpointed segments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch


def _storage_key(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


class SavedTensorMeter:
    """Count the bytes of the tensors autograd saves for backward inside a ``with`` block.

    Each storage is counted once, however many operations save it (a ReLU output that is also
    the next layer's input is one tensor in memory), and at its full size (a saved view keeps its
    whole storage alive). Storages of the tensors in ``exclude`` are not counted.

    Parameters
    ----------
    exclude:
        Tensors not to count, typically ``model.parameters()`` and ``model.buffers()``: they
        live in memory whether or not a backward pass is coming.

    Example::

        with SavedTensorMeter(exclude=model.parameters()) as meter:
            loss = model(x).square().mean()
        meter.bytes        # activation memory kept until loss.backward()
        meter.count        # number of distinct saved storages

    Introduced in Chapter 6 (chapters/06_tradeoffs).
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = ()):
        excluded = list(exclude)
        for t in excluded:
            if not isinstance(t, torch.Tensor):
                raise ValueError("exclude must be an iterable of tensors (for example "
                                 f"model.parameters()), got an item of type {type(t).__name__}")
        self._excluded = {_storage_key(t) for t in excluded}
        self._seen: dict[tuple[int, int], int] = {}
        self._hooks = None

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        if key not in self._excluded:
            self._seen.setdefault(key, key[1])
        return t  # keep the tensor itself: the meter observes, it does not change autograd

    @staticmethod
    def _unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    def __enter__(self):
        self._seen.clear()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)
        self._hooks = None

    @property
    def bytes(self) -> int:
        """Total bytes of the distinct storages saved for backward (excluded ones left out)."""
        return int(sum(self._seen.values()))

    @property
    def count(self) -> int:
        """Number of distinct storages saved for backward (excluded ones left out)."""
        return len(self._seen)


def saved_bytes(fn: Callable, *args, exclude: Iterable[torch.Tensor] = (), **kwargs):
    """Run ``fn(*args, **kwargs)`` under a :class:`SavedTensorMeter`.

    Returns ``(output, bytes)``: what ``fn`` returned and the bytes it left saved for backward.

    Introduced in Chapter 6 (chapters/06_tradeoffs).
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    with SavedTensorMeter(exclude=exclude) as meter:
        out = fn(*args, **kwargs)
    return out, meter.bytes



def format_bytes(n: int | float) -> str:
    """``n`` bytes as a short string in B, KiB or MiB (binary units), e.g. ``'1.5 MiB'``.

    Introduced in Chapter 6 (chapters/06_tradeoffs).
    """
    if isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0:
        raise ValueError(f"n must be a number of bytes >= 0, got {n!r}")
    if n < 1024:
        return f"{int(n)} B"
    if n < 1024 ** 2:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 ** 2:.1f} MiB"
