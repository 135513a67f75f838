"""A pytest plugin for the nbval runs of the Makefile: the slowest notebooks start first.

pytest-xdist (``--dist loadfile``) hands each worker whole notebooks in the order they were
collected. In folder order the slowest notebooks (labs and their solutions) come last, and one
worker finishes them alone while the other idles. Longest first, the last notebooks to start are
the short ones, so both workers finish at about the same time.

The order comes from ``durations.json`` beside this file: seconds per notebook as ``make bench``
last measured them (it rewrites the file). A notebook missing from it goes first, as if slow.
"""

from __future__ import annotations

import json
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")


def durations() -> dict[str, float]:
    try:
        return json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def pytest_collection_modifyitems(session, config, items):
    seconds = durations()
    root = Path(str(config.rootpath))

    def notebook(item) -> str:
        return Path(str(item.fspath)).resolve().relative_to(root).as_posix()

    # a stable sort: the cells of one notebook stay together and in order
    items.sort(key=lambda item: -seconds.get(notebook(item), float("inf")))
