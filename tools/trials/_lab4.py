"""What the Lab 4 trials share: the lab's sorting task and its side-by-side sweep of one
placement (``sweep()`` in labs/lab4_preln_postln.ipynb)."""

import depthlab as dl

V, T, D, DEPTH, BATCH = 16, 8, 32, 6, 16   # vocabulary, length, width, depth, minibatch


def task():
    """The lab's 4,096 training sequences."""
    return dl.sequence_task(4096, kind="sort", length=T, vocab=V, seed=0)


def side_by_side(X, Y, settings, seed, steps, norm="post"):
    """One model per ``(rate, warm-up)`` of ``settings``, all from seed ``seed``'s weights and
    on its batches, trained together for ``steps``; returns their histories."""
    models = [dl.TinyTransformer(V, T, DEPTH, d_model=D, norm=norm, seed=seed)
              for _ in settings]
    return dl.train_many(models, X, Y, steps=steps, lr=[lr for lr, _ in settings],
                         warmup=[w for _, w in settings], batch_size=BATCH,
                         betas=(0.9, 0.98), seed=seed)
