"""The trial run that set Lab 6's budget, kept so that the lab's account of it can be checked.

    python tools/trials/lab6_trial.py        (about a minute on two cores)

It trains the lab's whole grid (five blocks, two learning rates, with and without warm-up) on
seeds 100 to 102, which the lab never uses, and prints the test token accuracy of every run.
Its recorded output, from the run the lab describes, is ``lab6_trial.txt`` next to this file:
run on 2026-11-25 on an Intel Xeon with two PyTorch threads and without the AVX2 cap of the
Makefile, so a re-run reproduces the orders of magnitude and the pattern, not every digit (the
recorded run printed its time without the thread count).
"""

import time

import torch

import depthlab as dl

V, T, D, HEADS, L = 16, 8, 16, 2, 24
STEPS, BATCH, WARMUP, LRS, SEEDS = 150, 32, 40, [3e-3, 1e-2], [100, 101, 102]
VARIANTS = {"Post-LN": dict(norm="post"), "Pre-LN": dict(norm="pre"),
            "GPT-2 init": dict(norm="pre", init="gpt2"), "DeepNorm": dict(norm="deepnorm"),
            "Pre-RMSNorm": dict(norm="pre", norm_layer="rms")}

X, Y = dl.sequence_task(4096, kind="reverse", length=T, vocab=V, seed=0)
X_test, Y_test = dl.sequence_task(512, kind="reverse", length=T, vocab=V, seed=1)
runs = [(v, lr, w, s) for v in VARIANTS for lr in LRS for w in (0, WARMUP) for s in SEEDS]
models = {r: dl.TinyTransformer(V, T, L, d_model=D, n_heads=HEADS, seed=r[3], **VARIANTS[r[0]])
          for r in runs}
start = time.time()
dl.train_together(models, X, Y, steps=STEPS, batch_size=BATCH, betas=(0.9, 0.98),
                  lr={r: r[1] for r in runs}, warmup={r: r[2] for r in runs}, seed=SEEDS[0],
                  device="cpu")
print(f"train time {time.time() - start:.1f} s ({torch.get_num_threads()} threads)")
acc = {r: dl.sequence_accuracy(m, X_test, Y_test)[0] for r, m in models.items()}
for v in VARIANTS:
    for lr in LRS:
        for w in (0, WARMUP):
            print(f"{v:12s} lr {lr:g} wu {w:3d} ",
                  " ".join(f"{acc[v, lr, w, s]:.2f}" for s in SEEDS))
