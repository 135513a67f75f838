"""Build .venv, or bring it up to date, for every `make` target (the Makefile's `setup`).

    python3 tools/setup_venv.py [--venv .venv] [--check]

1. Checks that this Python is 3.11 or newer (the pinned numpy needs it), with a clear error if not.
2. Creates the virtual environment if it is missing.
3. Installs only when the inputs changed: the SHA-256 of requirements.txt, requirements-dev.txt,
   pyproject.toml, this file and TORCH_INDEX_URL is kept in .venv/.setup-stamp (hashed here, in
   Python, so nothing depends on `sha256sum` or `shasum`). To install:
   a. the learner's set (requirements.txt) is fetched as wheels into .venv/wheelhouse, with the
      CPU build of torch on Linux from the PyTorch CPU wheel index (the default index would give
      the CUDA build, several GB), or from the default index, with a warning, where that one
      cannot be reached within a few seconds;
   b. .venv gets that set from the wheelhouse, offline (on a machine with an NVIDIA driver, or
      with TORCH_INDEX_URL set, its torch comes from the default index or that URL instead),
      then the developer set (requirements-dev.txt: book build, test runners, browser, linters)
      and depthlab, editable;
   c. the stamp is written, only once everything installed.
   The wheelhouse is what the learner-environment test (tests/test_learner_env.py) installs from,
   offline, into a fresh virtual environment.

--check only reports: exit 0 when .venv is up to date, 1 when `make` would install.

TORCH_INDEX_URL chooses where .venv's torch comes from: unset (automatic, as above), ``default``
(the default index: on Linux x86-64 the CUDA build), or an index URL such as
https://download.pytorch.org/whl/cu128 for another CUDA version.

This file runs under whatever `python3` is first on PATH, so it must still parse, and fail with
its message, on an old Python: no syntax newer than 3.6 here.
"""

import argparse
import hashlib
import os
import platform
import shutil
import ssl
import subprocess
import sys
import urllib.request

MIN_PYTHON = (3, 11)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIME = "requirements.txt"
DEV = "requirements-dev.txt"
INPUTS = (RUNTIME, DEV, "pyproject.toml", os.path.join("tools", "setup_venv.py"))
STAMP = ".setup-stamp"
WHEELHOUSE = "wheelhouse"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PROBE_TIMEOUT_S = 5


def say(message):
    print(f">> {message}", flush=True)


def warn(message):
    print(f"!! {message}", file=sys.stderr, flush=True)


# --- the Python version -----------------------------------------------------------------------


def python_problem(version_info, executable, path=None):
    """Why this Python cannot build the environment (a message), or None when it can."""
    if tuple(version_info[:2]) >= MIN_PYTHON:
        return None
    found = ".".join(str(part) for part in version_info[:3])
    wanted = ".".join(str(part) for part in MIN_PYTHON)
    newer = [name for name in ("python3.13", "python3.12", "python3.11")
             if shutil.which(name, path=path)]
    if newer:
        hint = f"run `make PYTHON={newer[0]} ...`"
    else:
        hint = (f"install Python {wanted} or newer (python.org, Homebrew `brew install "
                "python@3.12`, or your Linux distribution's python3.11 or newer with its venv "
                "module), then run `make PYTHON=python3.12 ...` (or whichever you installed)")
    return f"the course needs Python {wanted} or newer, and {executable} is Python {found}: {hint}."


def venv_python(venv):
    if os.name == "nt":
        return os.path.join(venv, "Scripts", "python.exe")
    return os.path.join(venv, "bin", "python")


def venv_version(venv):
    """(major, minor, micro) of the virtual environment's Python, or None if it does not run."""
    try:
        out = subprocess.run([venv_python(venv), "-c", "import sys; print(*sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return tuple(int(part) for part in out.split())
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


# --- the stamp --------------------------------------------------------------------------------


def inputs_digest(root=ROOT, torch_index=None):
    """SHA-256 of everything an install depends on: the input files and the torch source."""
    digest = hashlib.sha256()
    for name in INPUTS:
        digest.update(name.encode() + b"\0")
        try:
            with open(os.path.join(root, name), "rb") as f:
                digest.update(f.read())
        except FileNotFoundError:
            digest.update(b"<missing>")
        digest.update(b"\0")
    digest.update(f"TORCH_INDEX_URL={torch_index or ''}".encode())
    return digest.hexdigest()


def read_stamp(venv):
    try:
        with open(os.path.join(venv, STAMP)) as f:
            return f.read().strip() or None
    except OSError:
        return None


def why_install(venv, digest):
    """Why `make` must (re)install, or None when the environment is up to date."""
    version = venv_version(venv)
    if version is None:
        return f"{venv} has no working Python"
    if version[:2] < MIN_PYTHON:
        return f"{venv} was made with Python {version[0]}.{version[1]}"
    stamp = read_stamp(venv)
    if stamp is None:
        return f"{venv} has never been installed by make (no {STAMP})"
    if stamp != digest:
        return f"the requirements changed since {venv} was installed"
    if not os.path.isdir(os.path.join(venv, WHEELHOUSE)):
        return f"{venv} has no {WHEELHOUSE}"
    return None


# --- where torch comes from -------------------------------------------------------------------


def has_nvidia_driver():
    return bool(shutil.which("nvidia-smi")) or os.path.exists("/proc/driver/nvidia/version")


def torch_index(override, system, nvidia):
    """Where the environment's torch comes from: (index URL, or None for the default; why)."""
    if override == "default":
        return None, "TORCH_INDEX_URL=default"
    if override:
        return override, "TORCH_INDEX_URL"
    if system != "Linux":
        return None, f"on {system} the default index's torch is the CPU build"
    if nvidia:
        return None, "an NVIDIA driver is installed, so the default index's CUDA build"
    return CPU_INDEX, "Linux without an NVIDIA driver: the CPU build"


def reachable(url, timeout=PROBE_TIMEOUT_S):
    """None if ``url`` answers within ``timeout`` seconds, else why not."""
    cafile = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    try:
        context = ssl.create_default_context(cafile=cafile)
        with urllib.request.urlopen(url.rstrip("/") + "/torch/", timeout=timeout,
                                    context=context) as response:
            response.read(1)
        return None
    except Exception as error:  # whatever the failure, the default index is the way out
        return f"{type(error).__name__}: {getattr(error, 'reason', error)}"


def pinned(requirements, name):
    """The version ``name`` is pinned to in a requirements file (``name==X``)."""
    with open(requirements) as f:
        for line in f:
            spec = line.split("#", 1)[0].split(";", 1)[0].strip()
            if spec.lower().startswith(name + "=="):
                return spec.split("==", 1)[1].strip()
    raise SystemExit(f"!! {requirements} pins no {name}==<version>")


# --- installing -------------------------------------------------------------------------------


def run(cmd, cwd=None):
    result = subprocess.run(cmd, cwd=cwd)
    if result.returncode != 0:
        raise SystemExit(f"!! failed (exit {result.returncode}): {' '.join(cmd)}")


def fetch_cpu_torch(pip, wheelhouse, version, index=CPU_INDEX):
    """The CPU build of torch into the wheelhouse; False if ``index`` cannot serve it."""
    problem = reachable(index)
    if problem is None:
        say(f"torch {version}, the CPU build, from {index} (about 200 MB)")
        result = subprocess.run(pip + ["wheel", "--quiet", "--no-deps", "--wheel-dir", wheelhouse,
                                       "--index-url", index, f"torch=={version}"])
        if result.returncode == 0:
            return True
        problem = f"pip could not get torch=={version} from it"
    warn(f"{index} cannot be reached ({problem}): torch comes from the default index instead, "
         "which on Linux x86-64 is the CUDA build (several GB) unless pip is set up for CPU wheels")
    return False


def install(venv, root, digest, index, why, system):
    """Install the learner's and the developer's sets into ``venv``; its torch from ``index``."""
    pip = [venv_python(venv), "-m", "pip", "--disable-pip-version-check"]
    wheelhouse = os.path.join(venv, WHEELHOUSE)
    os.makedirs(wheelhouse, exist_ok=True)
    stamp = os.path.join(venv, STAMP)
    if os.path.exists(stamp):
        os.remove(stamp)  # an interrupted install is redone next time
    runtime, dev = os.path.join(root, RUNTIME), os.path.join(root, DEV)
    version = pinned(runtime, "torch")
    say(f"installing {RUNTIME} and {DEV} into {venv} (a few minutes the first time)")

    # On Linux the wheelhouse holds the CPU build whatever the environment gets: the
    # learner-environment test installs from it, and runs on the CPU.
    cpu = []
    if system == "Linux" and fetch_cpu_torch(pip, wheelhouse, version):
        constraint = os.path.join(venv, "torch-cpu.txt")
        with open(constraint, "w") as f:
            f.write(f"torch=={version.split('+')[0]}+cpu\n")
        cpu = ["--constraint", constraint]
    if index == CPU_INDEX:
        venv_torch = cpu
    else:
        # a GPU machine, macOS or TORCH_INDEX_URL: torch (with any CUDA libraries) first
        say(f"torch {version} from {index or 'the default index'} ({why})")
        run(pip + ["install", "--quiet", f"torch=={version}"]
            + (["--index-url", index] if index else []))
        venv_torch = []
    find = ["--find-links", wheelhouse]
    say(f"the learner's set ({RUNTIME}) as wheels into {wheelhouse}")
    run(pip + ["wheel", "--quiet", "--wheel-dir", wheelhouse, "-r", runtime] + find + cpu)
    run(pip + ["install", "--quiet", "--no-index", "-r", runtime] + find + venv_torch)
    say(f"the developer set ({DEV}) and depthlab, editable")
    # pip resolves `-e .` in requirements-dev.txt against its working directory: the repository
    run(pip + ["install", "--quiet", "-r", dev] + find + venv_torch, cwd=root)
    with open(stamp, "w") as f:
        f.write(digest + "\n")


def create(venv):
    say(f"creating {venv} with {sys.executable} (Python {platform.python_version()})")
    result = subprocess.run([sys.executable, "-m", "venv", venv])
    if result.returncode != 0 or venv_version(venv) is None:
        hint = ""
        if sys.platform.startswith("linux"):
            hint = (" On Debian or Ubuntu: sudo apt-get install python3-venv (python3.X-venv for "
                    "Python 3.X).")
        raise SystemExit(f"!! could not create {venv} with {sys.executable} -m venv.{hint}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=os.path.join(ROOT, ".venv"))
    parser.add_argument("--check", action="store_true",
                        help="only report whether make would install (exit 1) or not (exit 0)")
    args = parser.parse_args(argv)
    venv = args.venv

    problem = python_problem(sys.version_info, sys.executable)
    if problem:
        warn(problem)
        return 2
    override = os.environ.get("TORCH_INDEX_URL", "").strip()
    digest = inputs_digest(ROOT, override)
    why = why_install(venv, digest)
    if args.check:
        print("up to date" if why is None else f"would install: {why}")
        return 0 if why is None else 1
    if why is None:
        say(f"{venv} is up to date with {RUNTIME} and {DEV} (install skipped)")
        return 0
    say(why)
    version = venv_version(venv)
    if version is not None and version[:2] < MIN_PYTHON:
        warn(f"{venv} was made with Python {version[0]}.{version[1]}; remove it (rm -rf {venv}) "
             "and run make again")
        return 2
    if version is None:
        if os.path.exists(venv_python(venv)):
            warn(f"{venv} exists but its Python does not run; remove it (rm -rf {venv}) and run "
                 "make again")
            return 2
        create(venv)
    index, reason = torch_index(override, platform.system(), has_nvidia_driver())
    install(venv, ROOT, digest, index, reason, platform.system())
    say(f"{venv} is ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
