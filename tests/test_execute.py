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


def clients_whose_first_kernels_die(monkeypatch, deaths):
    """Make the first ``deaths`` kernels die while starting, as the loser of a port race
    does; return the list of clients made."""
    made = []

    def new_client(*args, **kwargs):
        client = make(*args, **kwargs)
        made.append(client)
        if len(made) <= deaths:
            def setup_kernel(**_):
                raise RuntimeError("Kernel died before replying to kernel_info")
            client.setup_kernel = setup_kernel
        return client

    make = execute.new_client
    monkeypatch.setattr(execute, "new_client", new_client)
    return made


def test_a_kernel_that_dies_while_starting_is_started_again(tmp_path, monkeypatch):
    made = clients_whose_first_kernels_die(monkeypatch, execute.KERNEL_STARTS - 1)
    path = notebook(tmp_path, "6 * 7")
    execute.execute(path)
    assert len(made) == execute.KERNEL_STARTS
    assert nbformat.read(path, as_version=4).cells[0].outputs[0].data["text/plain"] == "42"


def test_kernels_that_keep_dying_fail_the_notebook(tmp_path, monkeypatch):
    made = clients_whose_first_kernels_die(monkeypatch, execute.KERNEL_STARTS)
    path = notebook(tmp_path, "6 * 7")
    before = path.read_text()
    with pytest.raises(RuntimeError, match="Kernel died before replying"):
        execute.execute(path)
    assert len(made) == execute.KERNEL_STARTS and path.read_text() == before


def test_a_cell_that_fails_is_not_run_again(tmp_path, monkeypatch):
    made = clients_whose_first_kernels_die(monkeypatch, 0)
    with pytest.raises(RuntimeError, match="a cell raised KeyError"):
        execute.execute(notebook(tmp_path, "raise KeyError('oops')"))
    assert len(made) == 1


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
