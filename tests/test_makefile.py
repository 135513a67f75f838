"""`make`'s environment: the Python check, the stamp, the torch index and the pinned requirements.

The Makefile's `setup` runs tools/setup_venv.py. These tests run it through `make` itself, in a
copy of the repository's files with a stand-in virtual environment whose pip only records what it
is asked to do, on a PATH with no `sha256sum` or `shasum` (stock macOS has no `sha256sum`): a
stale or missing stamp must install, an up-to-date one must not, and a Python older than 3.11
must stop with a clear message. Then the locks: runtime and developer sets apart and consistent,
none of the CUDA build's packages, and every package depthlab imports declared in pyproject.toml.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
MAKE = shutil.which("make")
COPIED = ["Makefile", "requirements.txt", "requirements-dev.txt", "pyproject.toml",
          "tools/setup_venv.py"]  # fmt: skip


def setup_venv():
    spec = importlib.util.spec_from_file_location("setup_venv", ROOT / "tools" / "setup_venv.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sv = setup_venv()


# --- the pieces ----------------------------------------------------------------------------------


def test_python_version_check(tmp_path):
    assert sv.python_problem((3, 11, 0), "python3") is None
    assert sv.python_problem((3, 13, 1), "python3") is None
    empty = str(tmp_path)  # a PATH with no other Python on it
    message = sv.python_problem((3, 10, 12), "/usr/bin/python3", path=empty)
    assert "needs Python 3.11 or newer" in message and "/usr/bin/python3 is Python 3.10.12" in message
    assert "make PYTHON=" in message
    # a newer Python on PATH is named in the hint
    (tmp_path / "python3.12").symlink_to(BASE_PYTHON)
    assert "run `make PYTHON=python3.12 ...`" in sv.python_problem((3, 9, 6), "python3", empty)


def test_digest_covers_every_input_and_the_torch_index(tmp_path):
    for name in COPIED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    first = sv.inputs_digest(tmp_path)
    assert first == sv.inputs_digest(tmp_path) and re.fullmatch(r"[0-9a-f]{64}", first)
    assert sv.inputs_digest(tmp_path, "https://example.invalid/whl/cu128") != first
    for name in sv.INPUTS:
        path = tmp_path / name
        original = path.read_bytes()
        path.write_bytes(original + b"\n# changed\n")
        assert sv.inputs_digest(tmp_path) != first, f"a change to {name} goes unnoticed"
        path.unlink()
        assert sv.inputs_digest(tmp_path) != first, f"a missing {name} goes unnoticed"
        path.write_bytes(original)
    assert sv.inputs_digest(tmp_path) == first


def fake_venv(path: Path, log: Path) -> Path:
    """A virtual environment whose python is the real one, except that `python -m pip ...`
    only appends its arguments to ``log``."""
    (path / "bin").mkdir(parents=True)
    python = path / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then shift 2; echo "pip $*" >> "' + str(log) + '"; exit 0; fi\n'
        f'exec "{BASE_PYTHON}" "$@"\n'
    )  # fmt: skip
    python.chmod(0o755)
    return path


def test_why_install(tmp_path):
    venv = tmp_path / "venv"
    digest = "a" * 64
    assert "no working Python" in sv.why_install(venv, digest)
    fake_venv(venv, tmp_path / "pip.log")
    assert "never been installed" in sv.why_install(venv, digest)
    (venv / sv.STAMP).write_text("\n")  # an empty stamp (what a missing hash tool used to give)
    assert "never been installed" in sv.why_install(venv, digest)
    (venv / sv.STAMP).write_text("b" * 64 + "\n")
    assert "changed" in sv.why_install(venv, digest)
    (venv / sv.STAMP).write_text(digest + "\n")
    assert "wheelhouse" in sv.why_install(venv, digest)
    (venv / sv.WHEELHOUSE).mkdir()
    assert sv.why_install(venv, digest) is None


def test_torch_index():
    assert sv.torch_index("", "Linux", nvidia=False)[0] == sv.CPU_INDEX
    assert sv.torch_index("", "Linux", nvidia=True)[0] is None
    assert sv.torch_index("", "Darwin", nvidia=False)[0] is None
    assert sv.torch_index("default", "Linux", nvidia=False)[0] is None
    url = "https://download.pytorch.org/whl/cu128"
    assert sv.torch_index(url, "Linux", nvidia=False)[0] == url


def test_an_unreachable_index_is_given_up_quickly():
    # a port on this machine that nothing listens on: refused at once
    start = time.perf_counter()
    problem = sv.reachable("http://127.0.0.1:9/whl/cpu", timeout=2)
    assert problem and time.perf_counter() - start < 3
    assert sv.reachable("http://127.0.0.1:9/whl/cpu", timeout=2).startswith("URLError")


def test_pinned(tmp_path):
    assert sv.pinned(ROOT / "requirements.txt", "torch") == torch_pin()
    lock = tmp_path / "r.txt"
    lock.write_text("numpy==2.0 ; python_version >= '3.11'\n    # via x\n")
    assert sv.pinned(lock, "numpy") == "2.0"
    with pytest.raises(SystemExit, match="pins no torch"):
        sv.pinned(lock, "torch")


# --- the Makefile, run --------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path):
    """A copy of the files `make setup` reads, a stand-in .venv, and a PATH without sha256sum
    or shasum."""
    if MAKE is None:
        pytest.skip("make is not installed")
    root = tmp_path / "project"
    for name in COPIED:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    # every command of /usr/bin and /bin, as on a stock macOS, but no hash tool, and python3 is
    # the interpreter running these tests
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for folder in (Path("/usr/bin"), Path("/bin")):
        for command in folder.iterdir() if folder.is_dir() else []:
            name = command.name
            if name in ("sha256sum", "shasum") or name.startswith("python"):
                continue
            if not (bin_ / name).exists():
                (bin_ / name).symlink_to(command)
    if not (bin_ / "make").exists():
        (bin_ / "make").symlink_to(MAKE)
    (bin_ / "python3").symlink_to(BASE_PYTHON)
    log = tmp_path / "pip.log"
    fake_venv(root / ".venv", log)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(PATH=str(bin_), TORCH_INDEX_URL="default")  # no network probe in these tests
    for tool in ("sha256sum", "shasum"):
        assert shutil.which(tool, path=env["PATH"]) is None
    return root, env, log


def make(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MAKE, "--no-print-directory", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_make_installs_without_a_hash_tool_and_then_skips(project):
    root, env, log = project
    first = make(root, env, "setup")
    assert first.returncode == 0, first.stderr
    assert "never been installed" in first.stdout and "up to date" not in first.stdout
    calls = [c for c in log.read_text().splitlines() if sv.CPU_INDEX not in c]
    # torch first (TORCH_INDEX_URL=default), then the learner's set as wheels, offline from
    # them, then the developer set
    assert calls[0].startswith("pip --disable-pip-version-check install --quiet torch==")
    assert re.search(r"\bwheel\b.*-r \S*requirements\.txt", calls[1])
    assert re.search(r"\binstall\b.*--no-index -r \S*requirements\.txt", calls[2])
    assert re.search(r"\binstall\b.*-r \S*requirements-dev\.txt", calls[3])
    stamp = (root / ".venv" / sv.STAMP).read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", stamp)

    log.unlink()
    second = make(root, env, "setup")
    assert second.returncode == 0 and "up to date" in second.stdout, second.stdout
    assert not log.exists(), "pip ran although nothing changed"

    (root / "requirements.txt").write_text((root / "requirements.txt").read_text() + "\n")
    third = make(root, env, "setup")
    assert "the requirements changed" in third.stdout and log.exists()


def test_an_empty_stamp_is_never_up_to_date(project):
    root, env, log = project
    (root / ".venv" / sv.WHEELHOUSE).mkdir()
    (root / ".venv" / sv.STAMP).write_text("")
    result = make(root, env, "setup")
    assert result.returncode == 0 and "up to date" not in result.stdout
    assert log.exists()


def test_make_stops_on_an_old_python_with_a_clear_message(project, tmp_path):
    root, env, _ = project
    # a python3 that reports 3.10.12 to the script it runs
    old = tmp_path / "bin" / "python3"
    old.unlink()
    old.write_text(
        "#!/bin/sh\n"
        f'exec "{BASE_PYTHON}" -c "import runpy, sys; sys.version_info = (3, 10, 12, \'final\', 0); '
        'sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name=\'__main__\')" "$@"\n'
    )  # fmt: skip
    old.chmod(0o755)
    shutil.rmtree(root / ".venv")
    result = make(root, env, "setup")
    assert result.returncode != 0
    assert "needs Python 3.11 or newer" in result.stderr and "Python 3.10.12" in result.stderr
    assert not (root / ".venv").exists(), "a venv was made with the old Python"


def test_make_names_a_missing_python(project):
    root, env, _ = project
    result = make(root, env, "setup", "PYTHON=python3.99")
    assert result.returncode != 0 and "python3.99 not found" in result.stderr


def test_the_recipes_need_nothing_linux_only(project):
    """What `make` runs for the main targets, expanded: no /proc, no GNU-only tools."""
    root, env, _ = project
    result = make(root, env, "-n", "book", "test", "lab", "bench", "execute-all")
    assert result.returncode == 0, result.stderr
    for linux_only in ("/proc", "sha256sum", "shasum", "nproc", "readlink -f", "sed -i"):
        assert linux_only not in result.stdout, f"`make` runs {linux_only!r}"


def test_only_storing_and_the_strict_comparison_pin_the_kernels(project):
    """`make execute` and `make nbval-strict` pin the x86-64 kernels (outputs stored on one CPU are
    compared digit for digit on that CPU); `make test` runs the kernels the machine has (what it
    compares does not depend on them), and on ARM nothing is pinned at all."""
    import platform

    root, env, _ = project
    x86 = platform.machine().lower() in ("x86_64", "amd64", "i686")
    pinned = "ATEN_CPU_CAPABILITY=avx2"
    for target in ("execute NB=chapters/x.ipynb", "nbval-strict"):
        result = make(root, env, "-n", *target.split())
        assert result.returncode == 0, result.stderr
        assert (pinned in result.stdout) == x86, f"make {target}: {result.stdout}"
    result = make(root, env, "-n", "nbval")
    assert result.returncode == 0, result.stderr
    assert "ATEN_CPU_CAPABILITY" not in result.stdout, result.stdout
    assert "portable.cfg" in result.stdout


# --- the locks ----------------------------------------------------------------------------------


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9][\w.-]*)==([^\s;]+)", line)
        if m:
            found[m[1].lower().replace("_", "-")] = m[2]
    return found


def torch_pin() -> str:
    return pins(ROOT / "requirements.txt")["torch"]


def test_runtime_and_developer_sets_are_apart_and_consistent():
    runtime, dev = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements-dev.txt")
    for name in ("torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "jupyterlab",
                 "mnist1d"):  # fmt: skip
        assert name in runtime, f"requirements.txt does not pin {name}"
    for tool in ("jupyter-book", "myst-nb", "nbval", "pytest", "pytest-xdist", "playwright",
                 "axe-playwright-python", "ruff", "pre-commit", "check-jsonschema", "zizmor"):  # fmt: skip
        assert tool not in runtime, f"the learner's requirements.txt installs {tool}"
        assert tool in dev, f"requirements-dev.txt does not pin {tool}"
    different = {n: (v, dev.get(n)) for n, v in runtime.items() if dev.get(n) != v}
    assert not different, f"requirements-dev.txt disagrees with requirements.txt: {different}"
    assert re.search(r"^-e \.$", (ROOT / "requirements-dev.txt").read_text(), re.MULTILINE)


def test_the_locks_hold_none_of_the_cuda_build():
    """A CPU install pulls no CUDA library: torch's CUDA dependencies stay out of the locks."""
    for lock in ("requirements.txt", "requirements-dev.txt"):
        cuda = [n for n in pins(ROOT / lock) if re.match(r"nvidia-|cuda-|triton$", n)]
        assert not cuda, f"{lock} pins {cuda}: add them to TORCH_CUDA_STACK in the Makefile"


def test_the_locks_say_how_they_are_made():
    for lock, source in (("requirements.txt", "requirements.in"),
                         ("requirements-dev.txt", "requirements-dev.in")):  # fmt: skip
        head = (ROOT / lock).read_text(encoding="utf-8").splitlines()[:2]
        assert head == ["# This file was autogenerated by uv via the following command:",
                        "#    make lock"], f"{lock} was not written by `make lock`"  # fmt: skip
        assert (ROOT / source).exists()
    lock_recipe = make_dry_run("lock")
    assert "uv pip compile" in lock_recipe and "requirements.in -o requirements.txt" in lock_recipe


def make_dry_run(target: str) -> str:
    if MAKE is None:
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run([MAKE, "-n", "--no-print-directory", target], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def imported_distributions() -> set[str]:
    """The distributions of every third-party module depthlab imports."""
    modules = set()
    for path in (ROOT / "depthlab").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    modules -= set(sys.stdlib_module_names) | {"depthlab", "__future__"}
    # myst_nb is optional: glue uses it when present and prints the value when it is not
    modules.discard("myst_nb")
    by_module = importlib.metadata.packages_distributions()
    missing = sorted(m for m in modules if m not in by_module)
    assert not missing, f"depthlab imports {missing}, which no installed distribution provides"
    return {by_module[m][0].lower() for m in modules}


def test_pyproject_declares_every_package_depthlab_imports():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    undeclared = imported_distributions() - declared
    assert not undeclared, f"depthlab imports {sorted(undeclared)}; declare them in pyproject.toml"
    assert project["requires-python"] == ">=3.11"
    for dependency in project["dependencies"]:
        assert "==" not in dependency, f"{dependency}: loose bounds, so Colab keeps its own torch"


def test_the_browser_tests_run_two_at_a_time(project):
    """One Chromium per worker: the page visits are spread over two processes (pytest-xdist)."""
    root, env, _ = project
    (root / "_build" / "html").mkdir(parents=True, exist_ok=True)
    (root / "_build" / "html" / "index.html").write_text("<html></html>")
    result = make(root, env, "-n", "browser")
    assert result.returncode == 0, result.stderr
    assert re.search(r"pytest tests/browser .*-n 2\b", result.stdout), result.stdout
