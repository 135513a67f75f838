"""The trial run behind the 500-step control of the Lab 4 solutions, kept so that its account can
be checked.

    python tools/trials/lab4_trial.py K0 K1     seeds K0 to K1-1 (about half a minute a seed,
                                                one thread)
    python tools/trials/lab4_trial.py summary   the summary at the end of lab4_trial.txt, from
                                                the runs recorded above it

Question, written down before this trial ran (2026-11-27): the solutions compare the two Post-LN
arms (no warm-up, a 60-step warm-up) after 500 steps at 2e-3, the best rate of both after 250
steps. A referee asked for the control the comparison needs: each arm at *its own* best rate
after 500 steps. This trial trains both arms at four rates (1e-3, 2e-3, 5e-3, 1e-2) for 500 steps,
the eight models of a seed from the same weights and on the same batches (as in the lab), and
prints every run's score (the training loss averaged over the last 25 steps before 125, 250 and
500 steps). The claim to test, fixed before the run: with each arm at its own best rate after 500
steps (the lowest median over the seeds), the warm-up ends lower at no fewer than four of five
seeds and by a median of more than 0.02.
"""

import re
import sys
import time
from pathlib import Path

import numpy as np
from _lab4 import side_by_side, task  # tools/trials/_lab4.py, beside this script

import depthlab as dl

WARMUP = 60
RATES, WARMUPS, BUDGETS = [1e-3, 2e-3, 5e-3, 1e-2], [0, WARMUP], [125, 250, 500]


def main(first, last):
    dl.setup(threads=1)
    X, Y = task()
    settings = [(lr, w) for w in WARMUPS for lr in RATES]
    for seed in range(first, last):
        start = time.perf_counter()
        histories = side_by_side(X, Y, settings, seed, BUDGETS[-1])
        for (lr, w), h in zip(settings, histories):
            scores = [float(np.mean(h.loss[b - 25:b])) for b in BUDGETS]
            print(f"seed {seed} lr {lr:g} warmup {w:>2} "
                  + " ".join(f"{s:.4f}" for s in scores), flush=True)
        print(f"seed {seed} took {time.perf_counter() - start:.0f} s", flush=True)


RECORD = Path(__file__).with_name("lab4_trial.txt")


def summary(path=RECORD):
    # each arm's best rate after 500 steps by the median over a window of five seeds, and the
    # paired differences (none minus warm-up, positive when the warm-up is ahead) at those rates
    runs = {}
    for line in path.read_text().splitlines():
        m = re.match(r"seed (\d+) lr (\S+) warmup\s+(\d+) (\S+) (\S+) (\S+)$", line)
        if m:
            runs[int(m[1]), float(m[2]), int(m[3])] = float(m[6])   # after 500 steps
    seeds = sorted({s for s, _, _ in runs})
    windows = [seeds[i:i + 5] for i in range(len(seeds) - 4)] + [seeds]
    for window in windows:
        # the lab's rule: the rate with the lowest median over the seeds, per arm (warm-up)
        best = {w: there["lr"] for w, there in dl.best_rates(
            {(w, lr, s): runs[s, lr, w] for s in window for lr in RATES for w in WARMUPS}).items()}
        diff = np.array([runs[s, best[0], 0] - runs[s, best[WARMUP], WARMUP] for s in window])
        print(f"seeds {window[0]}-{window[-1]} b500: best none {best[0]:g} warm "
              f"{best[WARMUP]:g}; none-warm per seed {np.round(diff, 3)} wins "
              f"{int(np.sum(diff > 0))} median {np.median(diff):+.3f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["summary"]:
        summary()
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))
