"""Tests of tools/execute.py (``make execute``): outputs stored, widget state and timestamps
left out, a time limit on every cell, and a failing notebook left as it was."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import execute  # noqa: E402


@pytest.fixture(autouse=True)
def kernel_imports_this_checkout(monkeypatch):
    # the kernel starts in the notebook's folder: make it import the depthlab under test
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def notebook(tmp_path, *sources, name="nb.ipynb"):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_outputs_are_stored_without_widget_state_or_timestamps(tmp_path):
    path = notebook(tmp_path, "import os\nprint(os.getcwd())", "6 * 7")
    seconds = execute.execute(path)
    nb = nbformat.read(path, as_version=4)
    assert seconds > 0
    # the kernel ran in the notebook's own folder, and every cell's output was stored
    assert nb.cells[0].outputs[0].text.strip() == str(tmp_path)
    assert nb.cells[1].outputs[0].data["text/plain"] == "42"
    assert [c.execution_count for c in nb.cells] == [1, 2]
    assert "widgets" not in nb.metadata
    assert all("execution" not in c.metadata for c in nb.cells)


def test_a_cell_past_the_time_limit_stops_and_the_notebook_is_left_unchanged(tmp_path):
    path = notebook(tmp_path, "import time\ntime.sleep(60)")
    before = path.read_text()
    with pytest.raises(RuntimeError, match="a cell ran longer than 2 s"):
        execute.execute(path, timeout=2)
    assert path.read_text() == before


def test_the_watchdog_stops_a_cell_when_nbclient_does_not(tmp_path):
    path = notebook(tmp_path, "import time\ntime.sleep(60)")
    nb = nbformat.read(path, as_version=4)
    client = execute.new_client(nb, path, timeout=1, grace=1)
    client.timeout = None  # as if nbclient never noticed: only the watchdog is left (2 s)
    with pytest.raises(Exception) as error:
        try:
            client.execute()
        finally:
            execute.finish(client)
    assert client.watchdog.fired
    assert "ran longer than 1 s" in execute.failure(error.value, client, 1)


def test_command_line_runs_every_notebook_and_reports_the_failures(tmp_path, capsys):
    good = notebook(tmp_path, "1 + 1", name="good.ipynb")
    bad = notebook(tmp_path, "raise KeyError('oops')", name="bad.ipynb")
    before = bad.read_text()
    assert execute.main([str(bad), str(good)]) == 1
    err = capsys.readouterr().err
    assert "bad.ipynb: FAILED, left unchanged: a cell raised KeyError: 'oops'" in err
    assert "1 of 2 notebooks failed" in err
    assert bad.read_text() == before
    assert nbformat.read(good, as_version=4).cells[0].outputs[0].data["text/plain"] == "2"


def test_command_line_rejects_what_is_not_a_notebook(tmp_path, capsys):
    with pytest.raises(SystemExit):
        execute.main([str(tmp_path / "missing.ipynb")])
    assert "not a notebook file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        execute.main(["--timeout", "0", str(notebook(tmp_path, "1"))])
    assert "--timeout must be at least 1" in capsys.readouterr().err
