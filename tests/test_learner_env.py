"""The course runs where a learner opens it, with only what it teaches with.

A fresh virtual environment gets what Colab has preinstalled and nothing else: torch, numpy,
matplotlib, ipywidgets and ipykernel (plus scipy and requests, which mnist1d needs, and a current
pip), at the versions of requirements.txt, offline, from the wheels that `make` keeps in .venv/wheelhouse. No
myst-nb, no nbval, no Jupyter Book; the repository is not on ``sys.path``.

In a kernel of that environment, a chapter and a lab then run top to bottom with nbclient, each
starting with its own first cell, the Colab install cell (tools/colab_cell.py). A stand-in
``google.colab`` module makes that cell run, and its repository URL points at this clone instead
of GitHub (there is no network here), so the notebook installs depthlab itself, exactly as it
does in Colab: ``%pip install "depthlab @ git+file://<this clone>"``, which builds the package from
the committed files. (Where depthlab/ or pyproject.toml have uncommitted changes, as on a
contributor's machine, it installs them from a snapshot of the working tree instead.)

The Binder configuration is checked against the same wheels: binder/requirements.txt resolves to
the runtime set of requirements.txt with the CPU build of torch and no developer tool.

The two notebooks run at the same time, one kernel per core, each on one thread (the second
starts once the first has installed depthlab). `make learner` runs this file; `make test`
includes it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
# The lab first: it takes longest, and each notebook starts once the one before it has installed
# depthlab. Chapter 7 generates MNIST-1D (mnist1d, and the scipy it needs); Lab 1 is the first lab,
# with its exercise checks and an interactive panel.
NOTEBOOKS = ["labs/lab1_fifty_layers.ipynb", "chapters/07_resnets_as_built.ipynb"]
# What Colab brings preinstalled (of what the course uses), what mnist1d needs from it, and a
# current pip, as Colab has (the one Python 3.11's venv brings rejects `name @ git+file:///...`).
COLAB_PACKAGES = ["torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "scipy", "requests",
                  "pip"]
# Never in a learner's environment, never installed by Binder.
DEVELOPER_ONLY = ["myst-nb", "jupyter-book", "sphinx", "nbval", "pytest", "playwright", "ruff",
                  "pre-commit", "check-jsonschema", "zizmor", "uv", "axe-playwright-python"]
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
CPU_CONSTRAINT = Path(sys.prefix) / "torch-cpu.txt"
KERNEL = "depthlab-learner"


def colab_cell_module():
    spec = importlib.util.spec_from_file_location("colab_cell", ROOT / "tools" / "colab_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(cmd, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    assert result.returncode == 0, (
        f"failed: {' '.join(map(str, cmd))}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result


def pip_env(extra: dict | None = None) -> dict:
    """The environment of everything that runs in the learner's venv: offline, from the wheels,
    with no pip configuration of this machine, nothing of .venv on PATH, no PYTHONPATH."""
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != Path(venv_bin).resolve())  # fmt: skip
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("PIP_")}  # fmt: skip
    env.update(PATH=path, PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1",
               PIP_FIND_LINKS=str(WHEELHOUSE), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_CACHE_DIR="1", **(extra or {}))  # fmt: skip
    return env


def depthlab_source(tmp: Path) -> str:
    """The git URL the notebooks' install cell gets here: this clone, or a snapshot of its
    working tree when depthlab/ or pyproject.toml have uncommitted changes."""
    if not shutil.which("git"):
        pytest.fail("git is needed (the Colab install cell installs depthlab from a git URL)")
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "depthlab", "pyproject.toml"],
                           cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    if dirty.returncode == 0 and not dirty.stdout.strip():
        return f"git+{ROOT.as_uri()}"
    snapshot = tmp / "snapshot"
    shutil.copytree(ROOT / "depthlab", snapshot / "depthlab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    shutil.copy2(ROOT / "pyproject.toml", snapshot / "pyproject.toml")
    git = ["git", "-c", "user.name=learner test", "-c", "user.email=learner@localhost",
           "-c", "commit.gpgsign=false"]  # fmt: skip
    run(git + ["init", "--quiet"], cwd=snapshot)
    run(git + ["add", "--all"], cwd=snapshot)
    run(git + ["commit", "--quiet", "-m", "working tree of depthlab"], cwd=snapshot)
    print(f"depthlab/ or pyproject.toml have uncommitted changes: installing them from {snapshot}")
    return f"git+{snapshot.as_uri()}"


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    """A fresh venv with Colab's packages only, and a kernel spec for it."""
    if not WHEELHOUSE.is_dir():
        pytest.fail(f"no {WHEELHOUSE}: run `make setup` (it fetches the wheels this test uses)")
    tmp = Path(tempfile.mkdtemp(prefix="learner-"))
    try:
        venv = tmp / "venv"
        start = time.perf_counter()
        # the interpreter .venv was made from, so that no package of .venv can leak in
        base = getattr(sys, "_base_executable", sys.executable)
        run([base, "-m", "venv", str(venv)])
        python = venv / "bin" / "python"
        constraints = ["-c", str(ROOT / "requirements.txt")]
        if CPU_CONSTRAINT.exists():
            constraints += ["-c", str(CPU_CONSTRAINT)]
        uv = shutil.which("uv", path=str(Path(sys.prefix) / "bin"))
        if uv:  # uv installs the same wheels as pip, in a quarter of the time
            run([uv, "pip", "install", "--quiet", "--python", str(python), "--offline",
                 "--no-index", "--find-links", str(WHEELHOUSE), *constraints, *COLAB_PACKAGES],
                env=pip_env({"UV_CACHE_DIR": str(tmp / "uv-cache")}))  # fmt: skip
        else:
            run([str(python), "-m", "pip", "install", "--quiet", *constraints, *COLAB_PACKAGES],
                env=pip_env())  # fmt: skip
        installed = time.perf_counter() - start
        kernels = tmp / "kernels"
        (kernels / KERNEL).mkdir(parents=True)
        spec = {"argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "learner (Colab's packages only)", "language": "python"}  # fmt: skip
        (kernels / KERNEL / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
        print(f"learner venv with {', '.join(COLAB_PACKAGES)} in {installed:.0f} s")
        yield {"tmp": tmp, "venv": venv, "python": python, "kernels": kernels,
               "source": depthlab_source(tmp)}  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_learner_venv_has_only_colabs_packages(learner):
    out = run([str(learner["python"]), "-m", "pip", "list", "--format=json"], env=pip_env())
    names = {p["name"].lower().replace("_", "-") for p in json.loads(out.stdout)}
    assert {"torch", "numpy", "matplotlib", "ipywidgets", "ipykernel"} <= names
    assert not names & {n.lower() for n in DEVELOPER_ONLY}, names & set(DEVELOPER_ONLY)
    assert "depthlab" not in names and "mnist1d" not in names, (
        "depthlab and mnist1d must come from the notebooks' own install cell"
    )


# Runs first in the kernel (the test's stand-in for Colab): makes the install cell run.
COLAB_STAND_IN = 'import sys, types\nsys.modules["google.colab"] = types.ModuleType("google.colab")'

# Runs last: where everything came from.
WHERE_FROM = """\
import importlib.metadata, importlib.util, json, os, sys
import depthlab
print("LEARNER-ENV " + json.dumps({
    "depthlab": depthlab.__file__,
    "direct_url": json.loads(importlib.metadata.distribution("depthlab").read_text("direct_url.json")),
    "myst_nb": importlib.util.find_spec("myst_nb") is not None,
    "sys_path": [os.path.abspath(p or os.getcwd()) for p in sys.path],
    "prefix": sys.prefix,
}))"""


def slowest_cells(nb, n: int = 3) -> str:
    """The ``n`` slowest cells as "index: seconds", from nbclient's timing metadata."""
    from datetime import datetime

    times = []
    for i, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            begin, end = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                          for k in ("iopub.execute_input", "shell.execute_reply"))  # fmt: skip
            times.append(((end - begin).total_seconds(), i))
    return ", ".join(f"cell {i}: {s:.0f} s" for s, i in sorted(times, reverse=True)[:n])


def run_in_learner_env(learner, notebook, wait_for=None, installed=None):
    """``notebook`` with the Colab stand-in first and the where-from cell last, executed top to
    bottom in a kernel of the learner venv; returns the executed notebook. It starts once the
    event ``wait_for`` is set, and sets ``installed`` once its install cell and the cell after it
    (the first import of depthlab) have run, or it stopped."""
    nb = nbformat.read(ROOT / notebook, as_version=4)
    colab = colab_cell_module()
    url = colab.repository_url(ROOT)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert colab.is_colab_cell(first), f"{notebook}: the first code cell is not the Colab cell"
    assert f"git+{url}" in first.source, f"{notebook}: the Colab cell does not install from {url}"
    first.source = first.source.replace(f"git+{url}", learner["source"])
    nb.cells.insert(0, nbformat.v4.new_code_cell(COLAB_STAND_IN))
    nb.cells.append(nbformat.v4.new_code_cell(WHERE_FROM))

    # the notebook runs in a folder of its own, as a notebook opened alone in Colab does
    workdir = learner["tmp"] / Path(notebook).stem
    workdir.mkdir()
    km = KernelManager(kernel_name=KERNEL,
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(learner["kernels"])]))  # fmt: skip
    install = nb.cells.index(first)

    def after_cell(cell, cell_index, execute_reply):
        if installed is not None and cell_index > install and cell.cell_type == "code":
            installed.set()

    client = NotebookClient(nb, km=km, timeout=600, allow_errors=False,
                            on_cell_executed=after_cell,
                            resources={"metadata": {"path": str(workdir)}})  # fmt: skip
    if wait_for is not None:
        wait_for.wait(timeout=600)
    start = time.perf_counter()
    # one thread, as nbval runs: on a busy machine two OpenMP threads per kernel can crawl
    try:
        client.execute(env=pip_env({"DEPTHLAB_DEVICE": "cpu", "DEPTHLAB_SEED": "0",
                                    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}))  # fmt: skip
    finally:
        if installed is not None:
            installed.set()
        if km.has_kernel:  # nbclient leaves a kernel it was handed running
            km.shutdown_kernel(now=True)
    print(f"{notebook}: ran top to bottom in the learner env in {time.perf_counter() - start:.0f} s"
          f" (slowest cells: {slowest_cells(nb)})")
    return nb


@pytest.fixture(scope="module")
def learner_runs(learner):
    """Every notebook of NOTEBOOKS run in the learner env, at the same time (each kernel on one
    thread, one per core): notebook -> the executed notebook, or the exception that stopped it
    (the test of that notebook raises it)."""
    # every install cell installs depthlab into the one venv, and two pips must not write it at
    # once: each notebook starts once the one before it has installed and imported depthlab
    events = [threading.Event() for _ in NOTEBOOKS]
    with ThreadPoolExecutor(max_workers=len(NOTEBOOKS)) as pool:
        futures = {nb: pool.submit(run_in_learner_env, learner, nb,
                                   wait_for=events[k - 1] if k else None, installed=events[k])
                   for k, nb in enumerate(NOTEBOOKS)}
        results = {}
        for nb, future in futures.items():
            try:
                results[nb] = future.result()
            except Exception as error:  # noqa: BLE001 - handed to the notebook's own test
                results[nb] = error
    return results


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_a_notebook_runs_top_to_bottom_in_the_learner_env(learner, learner_runs, notebook):
    nb = learner_runs[notebook]
    if isinstance(nb, BaseException):
        raise nb

    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []) if o.get("output_type") == "stream")  # fmt: skip
    where = json.loads(re.search(r"^LEARNER-ENV (.*)$", text, re.MULTILINE)[1])
    site = Path(where["prefix"]).resolve()
    assert site == learner["venv"].resolve(), f"the kernel ran in {site}, not the learner venv"
    assert Path(where["depthlab"]).resolve().is_relative_to(site), (
        f"depthlab was imported from {where['depthlab']}, not from the learner venv"
    )
    assert where["direct_url"]["url"].startswith("file://") and "vcs_info" in where["direct_url"], (
        f"depthlab was not installed from a git URL by the notebook's cell: {where['direct_url']}"
    )
    assert not where["myst_nb"], "myst_nb is importable in the learner env"
    assert str(ROOT) not in where["sys_path"], "the repository is on the kernel's sys.path"
    # without myst-nb, glue shows each value as `name = value`
    assert re.search(r"^[A-Za-z_][\w]* = \S", text, re.MULTILINE), (
        "no `name = value` line from depthlab.glue in the outputs"
    )


def test_binder_installs_the_runtime_set_with_cpu_torch(learner):
    cpu_wheels = list(WHEELHOUSE.glob("torch-*+cpu-*.whl"))
    if not cpu_wheels:
        pytest.skip(f"no CPU build of torch in {WHEELHOUSE} (only Linux fetches one)")
    report = learner["tmp"] / "binder-report.json"
    run([str(learner["python"]), "-m", "pip", "install", "--dry-run", "--ignore-installed",
         "--quiet", "--report", str(report), "-r", "binder/requirements.txt"],
        cwd=ROOT, env=pip_env())  # fmt: skip
    wanted = json.loads(report.read_text(encoding="utf-8"))["install"]
    versions = {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
                for i in wanted}  # fmt: skip
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9][\w.-]*)==([^\s;]+)", line)
        if m:
            pins[m[1].lower().replace("_", "-")] = m[2]
    assert versions.get("torch", "").endswith("+cpu"), f"Binder's torch: {versions.get('torch')}"
    assert versions["torch"].split("+")[0] == pins["torch"], "binder/ and requirements.txt differ"
    for name in ("depthlab", "numpy", "matplotlib", "ipywidgets", "mnist1d"):
        assert name in versions, f"Binder would not install {name}"
    assert not set(versions) & {n.lower() for n in DEVELOPER_ONLY}, "a developer tool in Binder"
    for name, version in versions.items():
        if name not in ("depthlab", "torch"):
            assert pins.get(name) == version, (
                f"Binder would install {name} {version}, requirements.txt pins {pins.get(name)}"
            )
