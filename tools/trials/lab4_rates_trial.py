"""The trial behind two controls of Lab 4 that ran at one rate, kept so that its account can be
checked.

    python tools/trials/lab4_rates_trial.py K0 K1     seeds K0 to K1-1 (about a minute a seed,
                                                      one thread)
    python tools/trials/lab4_rates_trial.py summary   the claims below, judged from the runs
                                                      recorded in lab4_rates_trial.txt

Question, written down before this trial ran (2026-11-27). Two comparisons of Lab 4 and its
solutions were made at one learning rate for one arm, and a referee asked for each arm at its
own best rate:

1. After 500 steps (the solutions' longer budget) Pre-LN ran only at 5e-3, its best rate after
   250 steps. The lab says that Pre-LN "stays ahead of both" Post-LN arms after 500 steps and
   that "its lead narrows as every loss falls". A better rate could only widen Pre-LN's lead at
   500 steps, so the first sentence cannot flip; the second can.
2. The solutions' 30-step warm-up ran only at 2e-3, the best rate of the 60-step one. They say
   that with 30 steps the warm-up and no warm-up "are level" after 250 steps, and that neither
   length gives tuned Post-LN a clear gain within 250 steps.

The trial trains, per seed, every arm of the lab's sweep and the 30-step warm-up at the lab's
five rates (1e-3 to 2e-2) for 500 steps, as the lab does: the Post-LN models of a seed (three
warm-ups times five rates) side by side from the same weights and on the same batches, the
Pre-LN ones on the same batches. It prints every run's score: the training loss averaged over
the 25 steps before 125, 250 and 500 steps (a diverged run counts as ln 16). Each arm's best
rate is the one with the lowest median over the seeds, per budget (the lab's rule,
``dl.best_rates``). The claims, fixed before the run, at the page's seeds (the lab's 0-2, the
solutions' 0-4):

* pre_ahead_500: after 500 steps, each arm at its own best rate (seeds 0-2), Pre-LN's median
  is below both Post-LN arms' (no warm-up, 60 steps): the better Post-LN median minus Pre-LN's
  is above 0;
* lead_narrows: Pre-LN's lead over the better Post-LN arm, each arm at its own best rate for
  that budget (seeds 0-2), is smaller after 500 steps than after 250: lead(250) - lead(500) > 0;
* short_level_250: after 250 steps, no warm-up and the 30-step warm-up each at its own best
  rate (seeds 0-4), the median over the seeds of the paired difference (no warm-up minus
  30-step warm-up) is within 0.05 of 0 in absolute value.

The summary judges the same claims on the other windows of consecutive seeds too, for the
record: the verdict is the page's seeds'.

(After the run, the claims unchanged: the summary now judges the two lead claims on every window
of three consecutive seeds, where it first stopped at the last window of five.)
"""

import re
import sys
import time
from pathlib import Path

import numpy as np
from _lab4 import V, side_by_side, task  # tools/trials/_lab4.py, beside this script
from _trial import judge  # tools/trials/_trial.py, beside this script

import depthlab as dl

RATES, BUDGETS = [1e-3, 2e-3, 5e-3, 1e-2, 2e-2], [125, 250, 500]
POST_WARMUPS = [0, 60, 30]   # no warm-up, the lab's, the solutions' shorter one
ARMS = ["post0", "post60", "post30", "pre"]
RECORD = Path(__file__).with_name("lab4_rates_trial.txt")


def train(first, last):
    dl.setup(threads=1)
    X, Y = task()
    for seed in range(first, last):
        start = time.perf_counter()
        for norm, warmups in [("post", POST_WARMUPS), ("pre", [0])]:
            settings = [(lr, w) for w in warmups for lr in RATES]
            histories = side_by_side(X, Y, settings, seed, BUDGETS[-1], norm=norm)
            for (lr, w), h in zip(settings, histories):
                scores = []
                for b in BUDGETS:
                    value = float(np.mean(h.loss[b - 25:b]))
                    scores.append(value if np.isfinite(value) else float(np.log(V)))
                arm = f"{norm}{w}" if norm == "post" else "pre"
                print(f"seed {seed} arm {arm} lr {lr:g} "
                      + " ".join(f"{s:.4f}" for s in scores), flush=True)
        print(f"seed {seed} took {time.perf_counter() - start:.0f} s", flush=True)


def best(runs, budget, seeds, arms):
    """Each arm's best rate after ``budget`` steps, by the median over ``seeds``."""
    return dl.best_rates({(arm, lr, s): runs[s, arm, lr, budget]
                          for arm in arms for lr in RATES for s in seeds})


def lead_claims(runs, seeds3):
    """pre_ahead_500 and lead_narrows on three seeds, and the best rates after 500 steps."""
    def lead(budget):
        there = best(runs, budget, seeds3, ["post0", "post60", "pre"])
        return (min(there["post0"]["median"], there["post60"]["median"])
                - there["pre"]["median"]), there

    lead250, _ = lead(250)
    lead500, at500 = lead(500)
    rates = ", ".join(f"{a} {at500[a]['lr']:g} ({at500[a]['median']:.3f})" for a in at500)
    return {"pre_ahead_500": (lead500, ">", 0),
            "lead_narrows": (lead250 - lead500, ">", 0)}, f"best rates after 500: {rates}"


def short_claim(runs, seeds5):
    """short_level_250 on five seeds, and the two arms' best rates after 250 steps."""
    short = best(runs, 250, seeds5, ["post0", "post30"])
    paired = np.array([runs[s, "post0", short["post0"]["lr"], 250]
                       - runs[s, "post30", short["post30"]["lr"], 250] for s in seeds5])
    rates = (", ".join(f"{a} {short[a]['lr']:g}" for a in short)
             + f"; none minus 30-step per seed {np.round(paired, 3)}")
    return ({"short_level_250": (abs(float(np.median(paired))), "<", 0.05)},
            f"best rates after 250: {rates}")


def summary(path=RECORD):
    # the verdict is the page's seeds' (0-2 for the lead, 0-4 for the 30-step warm-up); every
    # other window of consecutive seeds is judged too, for the record
    runs = {}
    for line in path.read_text().splitlines():
        m = re.match(r"seed (\d+) arm (\w+) lr (\S+) (\S+) (\S+) (\S+)$", line)
        if m:
            for b, value in zip(BUDGETS, m.group(4, 5, 6)):
                runs[int(m[1]), m[2], float(m[3]), b] = float(value)
    seeds = sorted({s for s, *_ in runs})
    held = True
    for size, judged in [(3, lead_claims), (5, short_claim)]:
        for k in range(len(seeds) - size + 1):
            window = seeds[k:k + size]
            found, rates = judged(runs, window)
            label = "the page's seeds" if k == 0 else "for the record"
            print(f"seeds {window[0]}-{window[-1]} ({label}): {rates}")
            ok = judge(found, 16)
            held = held and ok if k == 0 else held
    return held


if __name__ == "__main__":
    if sys.argv[1:] == ["summary"]:
        sys.exit(0 if summary() else 1)
    train(int(sys.argv[1]), int(sys.argv[2]))
