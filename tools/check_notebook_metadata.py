"""Fail on notebooks that carry stray metadata: state of one machine or one session, not content.

    python tools/check_notebook_metadata.py [NOTEBOOK.ipynb ...]

With no arguments it checks every notebook in chapters/, labs/ and solutions/. The pre-commit
hook ``notebook-metadata`` runs it on the notebooks being committed. It reports, per notebook:

* widget state: ``metadata.widgets`` (the ``application/vnd.jupyter.widget-state+json`` blob
  that Jupyter saves with a live ``ipywidgets`` panel; it changes on every run and the static site
  does not use it) or widget state anywhere else in the notebook's or a cell's metadata;
* a kernel other than the course's: ``metadata.kernelspec`` must be ``name: python3``,
  ``display_name: Python 3``, ``language: python`` (what nbval and ``make execute`` start);
* editor state tied to one machine: ``metadata.vscode`` (a hash of a local interpreter);
* a local path anywhere in the notebook's or a cell's metadata (``kernelspec``,
  ``language_info``, tags, ...): a home folder (``/home/...``, ``/root/...``, ``/Users/...``,
  ``C:\\Users\\...``), a temporary folder, a virtual environment (``.venv``, ``site-packages``,
  ``conda`` environments).

Outputs are not inspected (the structure tests and nbval check those). Exit status 1 when a
problem is found, with one line per problem; to fix a notebook, re-execute it with
``make execute NB=...``, which writes clean metadata, or delete the reported keys.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chapters", "labs", "solutions")
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
WIDGET_MIME = "application/vnd.jupyter.widget-state+json"
# Notebook-level keys that only record the state of one machine or editor session.
STRAY_KEYS = {
    "widgets": "widget state (ipywidgets) is stored in the notebook metadata",
    "vscode": "VS Code interpreter state (a hash of a local interpreter) is stored in metadata",
}
LOCAL_PATH = re.compile(
    r"""(?:^|[\s"'=:(\[,])(?:/home/|/root(?:/|$)|/Users/|/tmp/|/private/var/|/var/folders/)"""
    r"""|[A-Za-z]:\\+(?:Users|Documents and Settings)\\"""
    r"""|(?:^|[/\\])\.?venv(?:[/\\]|$)|site-packages|(?:ana|mini)conda|[/\\]envs[/\\]""",
    re.IGNORECASE,
)


def _strings(node, where: str) -> Iterator[tuple[str, str]]:
    """Every string (keys included) in a JSON tree, with a readable location."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{where}.{key}", str(key)
            yield from _strings(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, f"{where}[{i}]")
    elif isinstance(node, str):
        yield where, node


def _contains_widget_state(node) -> bool:
    return any(WIDGET_MIME in text for _, text in _strings(node, ""))


def problems(nb: dict) -> list[str]:
    """The stray metadata of the notebook ``nb`` (parsed JSON), one message per problem."""
    found = []
    meta = nb.get("metadata", {})
    for key, why in STRAY_KEYS.items():
        if key in meta:
            found.append(f"metadata.{key}: {why}; remove it")
    if "widgets" not in meta and _contains_widget_state(meta):
        found.append(f"metadata: widget state ({WIDGET_MIME}) is stored; remove it")

    spec = meta.get("kernelspec")
    if not isinstance(spec, dict):
        found.append("metadata.kernelspec is missing: run the notebook with the python3 kernel")
    else:
        for key, want in KERNELSPEC.items():
            if spec.get(key) != want:
                found.append(
                    f"metadata.kernelspec.{key} is {spec.get(key)!r}, not {want!r}: the course's "
                    "notebooks run in the python3 kernel (make execute NB=... sets it)"
                )

    for where, text in _strings(meta, "metadata"):
        if LOCAL_PATH.search(text):
            found.append(f"{where}: a local path is stored ({text[:80]!r})")

    for i, cell in enumerate(nb.get("cells", [])):
        cell_meta = cell.get("metadata", {})
        label = f"cell {i}" + (f" (id {cell['id']})" if cell.get("id") else "")
        if "widgets" in cell_meta or _contains_widget_state(cell_meta):
            found.append(f"{label}: widget state is stored in the cell metadata; remove it")
        for where, text in _strings(cell_meta, "metadata"):
            if LOCAL_PATH.search(text):
                found.append(f"{label}: {where}: a local path is stored ({text[:80]!r})")
    return found


def check(path: Path) -> list[str]:
    """Problems of the notebook file at ``path``, each prefixed with the file name."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return [f"{path}: cannot be read as a notebook: {err}"]
    return [f"{path}: {message}" for message in problems(nb)]


def default_notebooks() -> list[Path]:
    return sorted(p for d in FOLDERS for p in (ROOT / d).glob("*.ipynb"))


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or default_notebooks()
    report = [line for path in paths if path.suffix == ".ipynb" for line in check(path)]
    for line in report:
        print(line)
    if report:
        print(
            f"{len(report)} stray-metadata problem(s): re-execute with `make execute NB=...` "
            "(which stores clean metadata) or delete the reported keys",
            file=sys.stderr,
        )
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
