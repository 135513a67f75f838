"""Where the committed outputs of the notebooks come from, on the book's Running page.

``tools/execute.py`` (``make execute``) records in each notebook's metadata the machine and the
software that produced its stored outputs (``depthlab.executed``: CPU, operating system, Python,
PyTorch, thread count, PyTorch's kernel set, device, date). The directive

    ```{stored-outputs}
    ```

turns that into an item per machine and date naming its notebooks, when the book is
built, so the page can never disagree with the notebooks. A notebook without the record is listed
as "not recorded".
"""

from __future__ import annotations

import json
from pathlib import Path

from sphinx.util.docutils import SphinxDirective

FOLDERS = ("chapters", "labs", "solutions")
MACHINE_KEYS = ("cpu", "system", "python", "torch", "threads", "kernels", "device")


def records(root: Path) -> list[tuple[str, dict | None]]:
    """(notebook path, its ``depthlab.executed`` record or None) for every notebook."""
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).glob("*.ipynb")):
            meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
            found.append((f"{folder}/{path.name}", meta.get("depthlab", {}).get("executed")))
    return found


def machine_text(record: dict) -> str:
    threads = record.get("threads")
    return (f"{record.get('cpu', '?')} ({record.get('system', '?')}), Python "
            f"{record.get('python', '?')}, PyTorch {record.get('torch', '?')}, "
            f"{threads} thread{'' if threads == 1 else 's'}, "
            f"{record.get('kernels', '?')} kernels, device {record.get('device', '?')}")


def markdown(found: list[tuple[str, dict | None]]) -> str:
    """One item per machine and date, naming its notebooks (a narrow page reads a list better
    than a six-column table)."""
    groups: dict[str, list[str]] = {}
    for path, r in found:
        key = (f"{machine_text(r)}, executed {r.get('date', '?')}" if r else
               "not recorded (executed before `make execute` recorded it)")
        groups.setdefault(key, []).append(f"`{path}`")
    lines = []
    for key, paths in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        n = len(paths)
        lines.append(f"* **{n} notebook{'' if n == 1 else 's'}**: {key}. "
                     + ("All of them." if n == len(found) else ", ".join(paths) + "."))
    if len(groups) == 1:
        lines += ["", "The notebooks: " + ", ".join(f"`{path}`" for path, _ in found) + "."]
    return "\n".join(lines)


class StoredOutputs(SphinxDirective):
    """``{stored-outputs}``: the machines the committed outputs come from, per notebook."""

    has_content = False

    def run(self):
        root = Path(self.env.srcdir)
        found = records(root)
        for path, _ in found:
            self.env.note_dependency(str(root / path))
        return self.parse_text_to_nodes(markdown(found))


def setup(app):
    app.add_directive("stored-outputs", StoredOutputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
