"""The first code cell of every notebook: in Colab it installs the course package; elsewhere
it does nothing.

    python tools/colab_cell.py NOTEBOOK.ipynb [...]   insert or update the cell in place

Colab opens a notebook alone, without the repository, so ``import depthlab`` would fail there.
This cell installs ``depthlab`` (and what it needs that Colab lacks) from the repository named
by ``repository.url`` in ``_config.yml``, the one setting a fork changes. It is tagged
``remove-cell``: readers of the site do not need it. ``tests/test_structure.py`` checks that
every notebook starts with exactly this cell; re-execute a notebook after inserting it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
TAG = "remove-cell"


def repository_url(root: Path = ROOT) -> str:
    """The repository URL of ``_config.yml`` (``repository.url``)."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return config["repository"]["url"].rstrip("/")


def install_command(root: Path = ROOT) -> str:
    """What the cell runs in Colab: ``pip install`` of the course package from its repository."""
    return f'pip install --quiet "depthlab @ git+{repository_url(root)}"'


def cell_source(root: Path = ROOT) -> str:
    return (
        "# In Colab, install the course package first (outside Colab this cell does nothing).\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f"    %{install_command(root)}"
    )


def is_colab_cell(cell) -> bool:
    return cell.cell_type == "code" and 'if "google.colab" in sys.modules' in cell.source


def ensure(path: Path) -> bool:
    """Insert (or update) the cell before the notebook's first code cell; True if changed."""
    nb = nbformat.read(path, as_version=4)
    wanted = cell_source()
    existing = [c for c in nb.cells if is_colab_cell(c)]
    if existing:
        cell = existing[0]
        if cell.source == wanted and TAG in cell.metadata.get("tags", []):
            return False
        cell.source = wanted
    else:
        cell = nbformat.v4.new_code_cell(wanted)
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"),
                          len(nb.cells))
        nb.cells.insert(first_code, cell)
    cell.metadata["tags"] = sorted(set(cell.metadata.get("tags", [])) | {TAG})
    nbformat.write(nb, path)
    return True


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for name in argv:
        changed = ensure(Path(name))
        print(f"{name}: {'cell inserted or updated' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
