"""Re-execute notebooks top to bottom in a fresh kernel and store their outputs in place.

    python -m depthlab.execute chapters/01_depth_problem.ipynb [more.ipynb ...]

This is what ``make execute NB=...`` runs. Each notebook gets a new ``python3`` kernel started in
the notebook's own folder (as nbval does), every cell is run in order, and the notebook is written
back with its outputs, without widget state (a blob that changes on every run and that the static
site does not need: its twin panels are plain HTML). Cells tagged ``raises-exception`` may raise; any other error stops with a
message. Prints the wall time of each notebook.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 900) -> float:
    """Execute the notebook at ``path`` in place; return its wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}},
                            # nbclient needs the state while it runs (its Output-widget capture
                            # fails without it); it is dropped from the file below
                            store_widget_state=True,
                            # no per-cell timestamps: they change on every run
                            record_timing=False)
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return seconds


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for name in argv:
        path = Path(name)
        if path.suffix != ".ipynb" or not path.exists():
            print(f"not a notebook file: {name}", file=sys.stderr)
            return 2
        seconds = execute(path)
        print(f"{path}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
