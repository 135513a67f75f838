"""What the recorded trials with claims share: judging the claims, and the command line."""

import sys

from depthlab.book.claims import OPERATORS


def judge(claims: dict, width: int) -> bool:
    """Print each claim ``name: (value, operator, threshold)`` with ``holds`` or ``FAILS``, as
    the recorded summaries show them; return whether every one holds."""
    held = True
    for name, (value, op, threshold) in claims.items():
        ok = bool(OPERATORS[op](value, threshold))
        held &= ok
        print(f"  {name:{width}s} {value:+.4f} {op} {threshold:g}  {'holds' if ok else 'FAILS'}")
    return held


def main(script: str, arms, train, summary) -> None:
    """``script ARM [ARM ...]`` trains the arms named; ``script summary`` judges the record (exit
    status 1 when a claim fails)."""
    argv = sys.argv[1:]
    if argv == ["summary"]:
        sys.exit(0 if summary() else 1)
    if not argv or set(argv) - set(arms):
        sys.exit(f"usage: {script} ARM [ARM ...] | summary  (arms: {', '.join(arms)})")
    train(argv)
