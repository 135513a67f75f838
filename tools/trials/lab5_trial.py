"""The trial behind the 56-layer control that Lab 5's verdict names and does not run, kept so that
its account can be checked.

    python tools/trials/lab5_trial.py ARM [ARM ...]   train the arms named (plain56, residual56,
                                                      plain20) at every rate and budget that the
                                                      record does not hold yet, one line per run
                                                      (plain20 about five minutes on one thread
                                                      per three rates, each 56-layer arm about
                                                      twelve)
    python tools/trials/lab5_trial.py summary         the claims below, judged from the runs
                                                      recorded in lab5_trial.txt

Question, written down before this trial ran (2026-11-27). Lab 5 trains plain and residual
networks of 8, 20 and 56 layers with one recipe (width 8, SGD, lr 0.1, warm-up 50, 400 steps, the
rate divided by 10 for the last quarter, three seeds side by side). Its controls (five rates,
three times the budget) cover the 8- and 20-layer plain networks only; its verdict says that the
56-layer networks "were trained at one rate and for 400 steps only". This trial runs that
control: the 56-layer plain and residual networks and the 20-layer plain ones at the rates
0.025, 0.05 and 0.1, for 400 and for 1,200 steps (warm-up 50 and the drop at three quarters in
both), seeds 0 to 2, scored as the lab scores them (training loss over the 4,000 training
signals, in evaluation mode; a diverged network counts as infinite loss).

Each arm's best rate is the one with the lowest median training loss, per budget. The claims,
fixed before the run, the lab's 56-layer clauses at each arm's best rate:

* plain_56_above_20: after 400 and after 1,200 steps, every 56-layer plain network ends with a
  higher training loss than every 20-layer plain network (H1's second clause);
* residual_56_below_fifth_of_plain: after 400 and after 1,200 steps, the median 56-layer residual
  network's training loss is below a fifth of the median 56-layer plain network's (H2's
  comparison of the families at 56 layers, on medians; the lab's own check of it, on the
  extremes, was dropped after other seeds. This parenthesis was corrected after the run: it
  said "the form the lab keeps"; the claim itself is unchanged).

Extended the same day, written before the new runs: at 1,200 steps the 56-layer plain networks'
best rate was the grid's highest (0.1) and they were still improving, so the grid gains 0.0125
and 0.2 (five rates, each twice the last), for every arm and both budgets. The claims are
unchanged; each arm's best rate is now chosen among the five.
"""

import re
import time
from pathlib import Path

import numpy as np
from _trial import judge, main  # tools/trials/_trial.py, beside this script

import depthlab as dl

ARMS = {"plain56": (56, False), "residual56": (56, True), "plain20": (20, False)}
RATES, BUDGETS, SEEDS, WIDTH = [0.0125, 0.025, 0.05, 0.1, 0.2], [400, 1200], [0, 1, 2], 8
RECORD = Path(__file__).with_name("lab5_trial.txt")


def train(arms):
    dl.setup(threads=1)
    X, y, _, _ = dl.load_mnist1d()
    done = set(recorded())
    for arm in arms:
        depth, residual = ARMS[arm]
        for steps in BUDGETS:
            for lr in RATES:
                if (arm, steps, lr) in done:
                    continue
                start = time.perf_counter()
                model = dl.ResNetStack(depth, WIDTH, residual=residual, seeds=SEEDS)
                dl.train_resnet(model, X, y, steps=steps, lr=lr, warmup=50, batch_size=64,
                                weight_decay=1e-4, seed=SEEDS[0], device="cpu")
                loss = np.nan_to_num(dl.member_scores(model, X, y)[0], nan=np.inf)
                print(f"arm {arm} steps {steps} lr {lr:g} loss "
                      + " ".join(f"{v:.4f}" for v in loss)
                      + f" ({time.perf_counter() - start:.0f} s)", flush=True)


def recorded(path=RECORD):
    """(arm, steps, lr) -> the training losses recorded in ``path``."""
    runs = {}
    for line in path.read_text().splitlines():
        m = re.match(r"arm (\S+) steps (\d+) lr (\S+) loss (.+) \(", line)
        if m:
            runs[m[1], int(m[2]), float(m[3])] = np.array(m[4].split(), float)
    return runs


def summary(path=RECORD):
    runs = recorded(path)  # (arm, steps, lr) -> training losses

    def best(arm, steps):  # the arm's best rate (lowest median loss) and its losses there
        lr = dl.best_rates({(arm, lr, k): value for (a, b, lr), losses in runs.items()
                            if (a, b) == (arm, steps) for k, value in enumerate(losses)})[arm]["lr"]
        return lr, runs[arm, steps, lr]

    held = True
    for steps in BUDGETS:
        print(f"after {steps} steps: each arm's best rate and its training losses there")
        losses = {}
        for arm in ARMS:
            lr, losses[arm] = best(arm, steps)
            print(f"  {arm:10s} lr {lr:g}: " + " ".join(f"{v:.4f}" for v in losses[arm]))
        claims = {
            "plain_56_above_20": (losses["plain56"].min() - losses["plain20"].max(), ">", 0),
            "residual_56_below_fifth_of_plain": (
                np.median(losses["residual56"]) / np.median(losses["plain56"]), "<", 0.2),
        }
        held &= judge(claims, 32)
    return held


if __name__ == "__main__":
    main("lab5_trial.py", ARMS, train, summary)
