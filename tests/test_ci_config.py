"""Tests of the maintainers' tooling: the CI workflow, .ci/run, pre-commit hooks, metadata check.

* the workflows in .github/workflows pass two linters, offline: ``check-jsonschema`` against the
  GitHub workflow schema it vendors (typo'd keys, wrong types, unknown events) and ``zizmor``
  (GitHub Actions static analysis: template injection, credentials, permissions, unpinned
  third-party actions; configured in .github/zizmor.yml); both reject a broken workflow;
* .ci/run, run with a stand-in ``make``, runs the README's test command with REQUIRE_BROWSER=1
  and exits with its status; the CI workflow runs .ci/run and no test command of its own;
* the site is published only from a push to main, only after the tests passed, and it is the
  site those tests built;
* .pre-commit-config.yaml has only local (offline) hooks, and tools/check_notebook_metadata.py
  flags stray notebook metadata and passes the course's notebooks.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
CI = WORKFLOWS / "ci.yml"
CI_RUN = ROOT / ".ci" / "run"
ZIZMOR_CONFIG = ROOT / ".github" / "zizmor.yml"
PRECOMMIT = ROOT / ".pre-commit-config.yaml"
METADATA_TOOL = ROOT / "tools" / "check_notebook_metadata.py"
INSTALL_HINT = "install the pinned developer set: .venv/bin/pip install -r requirements-dev.txt"

sys.path.insert(0, str(ROOT / "tests" / "browser"))
import sitekit  # noqa: E402  (the browser tests' helpers: how they find the browser)

# --- helpers ---------------------------------------------------------------------------------


def load_workflow(path: Path) -> dict:
    wf = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 (PyYAML) reads the key `on` as the boolean True.
    if True in wf:
        wf["on"] = wf.pop(True)
    return wf


def triggers(wf: dict) -> dict:
    on = wf["on"]
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def uses(step: dict) -> str:
    return step.get("uses", "").split("@")[0]


def readme_test_command() -> str:
    """The command the README's table of commands says runs the whole test suite."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*runs the whole test suite", readme, re.MULTILINE)
    assert len(rows) == 1, "README.md: expected one row '| `<command>` | runs the whole test suite"
    return rows[0]


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed: {INSTALL_HINT}")
    return found


def all_workflows() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def check_jsonschema(paths: list[Path]) -> dict[Path, list[str]]:
    """check-jsonschema's errors per file (the GitHub workflow schema it vendors, offline)."""
    cmd = [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
           "-o", "JSON", *map(str, paths)]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, check=False, text=True, timeout=180, cwd=ROOT)
    assert run.stdout.strip().startswith("{"), f"check-jsonschema failed:\n{run.stderr}"
    errors: dict[Path, list[str]] = {}
    for error in json.loads(run.stdout).get("errors", []):
        detail = error.get("best_deep_match") or error.get("best_match") or error
        path = (ROOT / error["filename"]).resolve()
        errors.setdefault(path, []).append(f"{detail['path']}: {detail['message']}")
    return errors


def zizmor(paths: list[Path]) -> subprocess.CompletedProcess:
    """zizmor on ``paths``, offline, failing on a file that is not a valid workflow."""
    cmd = [tool("zizmor"), "--offline", "--no-progress", "--strict-collection",
           "--config", str(ZIZMOR_CONFIG), *map(str, paths)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, check=False, text=True, timeout=120, cwd=ROOT)


# --- the linters -------------------------------------------------------------------------------


def test_the_workflows_pass_the_linters():
    assert CI.exists(), "expected .github/workflows/ci.yml"
    errors = check_jsonschema(all_workflows())
    assert not errors, f"check-jsonschema (GitHub workflow schema) rejects: {errors}"
    result = zizmor(all_workflows())
    assert result.returncode == 0, f"zizmor failed:\n{result.stdout}\n{result.stderr}"


# Two workflows written for this test, each with one mistake: a misspelt key, which the schema
# catches, and an attacker-controlled branch name pasted into a shell script, which zizmor catches.
def workflow(job: dict) -> dict:
    return {"name": "broken", "on": {"pull_request": None}, "permissions": {},
            "jobs": {"job": job}}  # fmt: skip


MISSPELT = workflow({"runs_on": "ubuntu-24.04", "steps": [{"run": "true"}]})
INJECTION = workflow({"runs-on": "ubuntu-24.04", "steps": [{"run": "echo ${{ github.head_ref }}"}]})


def test_the_linters_reject_a_broken_workflow(tmp_path):
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    misspelt, injection = folder / "misspelt.yml", folder / "injection.yml"
    misspelt.write_text(yaml.safe_dump(MISSPELT, sort_keys=False), encoding="utf-8")
    injection.write_text(yaml.safe_dump(INJECTION, sort_keys=False), encoding="utf-8")
    errors = check_jsonschema([misspelt]).get(misspelt.resolve(), [])
    assert errors, "check-jsonschema missed the misspelt runs-on"
    result = zizmor([injection])
    assert result.returncode != 0 and "template-injection" in result.stdout, result.stdout


# --- .ci/run and the browser it finds ----------------------------------------------------------

BASH = shutil.which("bash") or "/bin/bash"


def stand_in(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def run_ci_script(tmp_path: Path, make_status: int = 0, *, browser: bool = True,
                  isolated: bool = False, system: str | None = None, root: bool | None = None,
                  env: dict | None = None) -> tuple[subprocess.CompletedProcess, str]:
    """.ci/run with a stand-in `make` (records its arguments, REQUIRE_BROWSER and CHROMIUM, and
    exits with ``make_status``) and, with ``browser``, a stand-in `chromium` on PATH (so that
    nothing is installed). ``isolated``: PATH holds only the stand-ins and the few commands
    .ci/run needs, so no browser of this machine is found; ``system`` and ``root`` stand in for
    `uname -s` and `id -u`; a stand-in `apt-get` records that it was called and "installs" a
    stand-in chromium. Returns the result and what make recorded."""
    fake = tmp_path / "bin"
    fake.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "make.log"
    stand_in(fake / "make", f'echo "make $* REQUIRE_BROWSER=$REQUIRE_BROWSER CHROMIUM=$CHROMIUM '
                            f'PWD=$PWD" > "{log}"\nexit {make_status}')
    if browser:
        stand_in(fake / "chromium", 'echo "Chromium 1.2.3"')
    stand_in(fake / "apt-get", f'echo "apt-get $*" >> "{tmp_path / "apt-get.log"}"\n'
                               f'[ "$1" = install ] && printf "#!/bin/sh\\necho Chromium 9\\n" '
                               f'> "{fake}/chromium" && chmod +x "{fake}/chromium"\nexit 0')
    if system is not None:
        stand_in(fake / "uname", f"echo {system}")
    if root is not None:
        stand_in(fake / "id", f"echo {0 if root else 501}")
    path = str(fake)
    if isolated:
        for name in ("dirname", "head", "id", "uname", "chmod", "printf", "sh"):
            real = shutil.which(name)
            if real and not (fake / name).exists():
                (fake / name).symlink_to(real)
    else:
        path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    run_env = {**os.environ, "PATH": path, **(env or {})}
    run_env.pop("REQUIRE_BROWSER", None)
    if not env or "CHROMIUM" not in env:
        run_env.pop("CHROMIUM", None)
    result = subprocess.run([BASH, str(CI_RUN)], env=run_env, capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    return result, log.read_text().strip() if log.exists() else ""


def apt_get_calls(tmp_path: Path) -> str:
    log = tmp_path / "apt-get.log"
    return log.read_text() if log.exists() else ""


def test_the_readme_test_command_is_the_one_ci_runs():
    readme_cmd = readme_test_command()
    assert readme_cmd == "make test", f"the README's test command is now {readme_cmd!r}"


def test_ci_run_runs_make_test_and_keeps_its_status(tmp_path):
    passed, called = run_ci_script(tmp_path / "pass", make_status=0)
    assert passed.returncode == 0, passed.stderr
    chromium = tmp_path / "pass" / "bin" / "chromium"
    assert called == f"make test REQUIRE_BROWSER=1 CHROMIUM={chromium} PWD={ROOT}", called
    assert f"browser for the tests: {chromium} (Chromium 1.2.3)" in passed.stdout, passed.stdout
    failed, _ = run_ci_script(tmp_path / "fail", make_status=3)
    assert failed.returncode == 3, ".ci/run does not exit with the status of `make test`"
    assert not apt_get_calls(tmp_path / "pass") and not apt_get_calls(tmp_path / "fail")


def test_ci_run_uses_the_browser_chromium_names(tmp_path):
    """CHROMIUM=/path chooses the browser (a path with a space, like macOS's Chrome), even with
    another one on PATH; a CHROMIUM that is not there is not replaced by another browser."""
    chrome = stand_in(tmp_path / "Google Chrome.app" / "Google Chrome", 'echo "Google Chrome 9"')
    result, called = run_ci_script(tmp_path / "set", env={"CHROMIUM": str(chrome)})
    assert result.returncode == 0, result.stderr
    assert f"CHROMIUM={chrome} PWD=" in called, called
    assert f"browser for the tests: {chrome} (Google Chrome 9)" in result.stdout
    missing = tmp_path / "no" / "chrome"
    result, called = run_ci_script(tmp_path / "missing", make_status=1,
                                   env={"CHROMIUM": str(missing)})  # fmt: skip
    assert result.returncode == 1 and f"CHROMIUM={missing} is not an executable" in result.stderr
    assert f"CHROMIUM={missing} PWD=" in called and "REQUIRE_BROWSER=1" in called, called
    assert not apt_get_calls(tmp_path / "missing")


@pytest.mark.parametrize("name", ["chromium-browser", "google-chrome"])
def test_ci_run_finds_a_browser_by_its_other_names(tmp_path, name):
    stand_in(tmp_path / "bin" / name, f'echo "{name} 7"')
    result, called = run_ci_script(tmp_path, browser=False, isolated=True, system="Linux",
                                   root=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"CHROMIUM={tmp_path / 'bin' / name} PWD=" in called, called
    assert not apt_get_calls(tmp_path), "a browser was there: nothing to install"


def test_ci_run_on_macos_never_apt_gets_and_still_runs_make_test(tmp_path):
    """On macOS (GitHub's runner: not root, no apt-get; here a stand-in apt-get that must not be
    called) without a browser on PATH: .ci/run takes Google Chrome from /Applications, or says
    that there is none, and runs `make test` with REQUIRE_BROWSER=1 either way, keeping its
    status (the browser tests then fail instead of being skipped)."""
    result, called = run_ci_script(tmp_path, make_status=2, browser=False, isolated=True,
                                   system="Darwin", root=True)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert not apt_get_calls(tmp_path), f"apt-get on macOS: {apt_get_calls(tmp_path)}"
    assert called.startswith("make test REQUIRE_BROWSER=1 "), called
    mac_chrome = sitekit.MACOS_CHROME
    if os.access(mac_chrome, os.X_OK):  # this is a Mac with Google Chrome
        assert f"CHROMIUM={mac_chrome} PWD=" in called
    else:
        assert "CHROMIUM= PWD=" in called and "no browser for the tests" in result.stderr


def test_ci_run_installs_debians_chromium_only_as_root_on_linux(tmp_path):
    result, called = run_ci_script(tmp_path / "root", browser=False, isolated=True,
                                   system="Linux", root=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "install -y -qq chromium fonts-liberation fonts-dejavu-core" in apt_get_calls(
        tmp_path / "root")
    chromium = tmp_path / "root" / "bin" / "chromium"
    assert f"CHROMIUM={chromium} PWD=" in called, called
    assert f"browser for the tests: {chromium} (Chromium 9)" in result.stdout
    result, called = run_ci_script(tmp_path / "user", browser=False, isolated=True,
                                   system="Linux", root=False)  # fmt: skip
    assert not apt_get_calls(tmp_path / "user"), "apt-get without root"
    assert called.startswith("make test REQUIRE_BROWSER=1 "), called


def test_ci_run_and_the_browser_tests_look_for_the_browser_in_the_same_places():
    script = CI_RUN.read_text(encoding="utf-8")
    assert f'MACOS_CHROME="{sitekit.MACOS_CHROME}"' in script
    assert f"for name in {' '.join(sitekit.BROWSER_NAMES)}; do" in script


# --- tests/browser/sitekit.py: the browser the tests use ---------------------------------------


def test_the_browser_tests_take_chromium_from_the_environment_then_path_then_macos(tmp_path):
    bin_ = tmp_path / "bin"
    mac = stand_in(tmp_path / "Applications" / "Google Chrome", "true")
    nowhere = str(tmp_path / "none")
    find = sitekit.find_browser
    assert find({"PATH": str(bin_)}, macos_chrome=nowhere)[0] is None
    assert find({"PATH": str(bin_)}, macos_chrome=str(mac)) == (str(mac), "Google Chrome (macOS)")
    chrome = stand_in(bin_ / "google-chrome", "true")
    assert find({"PATH": str(bin_)}, macos_chrome=str(mac))[0] == str(chrome)
    browser = stand_in(bin_ / "chromium-browser", "true")
    assert find({"PATH": str(bin_)}, macos_chrome=str(mac))[0] == str(browser)
    chromium = stand_in(bin_ / "chromium", "true")
    assert find({"PATH": str(bin_)}, macos_chrome=str(mac))[0] == str(chromium)
    chosen = stand_in(tmp_path / "my browser" / "chrome", "true")
    env = {"PATH": str(bin_), "CHROMIUM": str(chosen)}
    assert find(env, macos_chrome=str(mac)) == (str(chosen), "$CHROMIUM")
    assert find({**env, "CHROMIUM": "chromium-browser"}, macos_chrome=nowhere)[0] == str(browser)
    missing, why = find({**env, "CHROMIUM": str(tmp_path / "gone")}, macos_chrome=str(mac))
    assert missing is None and "CHROMIUM=" in why, "a wrong CHROMIUM must not be replaced"


def test_the_browser_tests_never_skip_where_a_browser_is_required(monkeypatch):
    monkeypatch.setattr(sitekit, "CHROMIUM", None)
    monkeypatch.setenv("REQUIRE_BROWSER", "1")
    with pytest.raises(RuntimeError, match="REQUIRE_BROWSER=1"):
        sitekit.require_chromium()
    monkeypatch.delenv("REQUIRE_BROWSER")
    with pytest.raises(pytest.skip.Exception, match="browser tests need"):
        sitekit.require_chromium()


# --- the CI workflow ---------------------------------------------------------------------------


def ci_jobs() -> dict:
    return load_workflow(CI)["jobs"]


def test_jobs() -> dict:
    """The jobs that run .ci/run, by name."""
    return {name: job for name, job in ci_jobs().items()
            if any(".ci/run" in s.get("run", "") for s in steps(job))}  # fmt: skip


test_jobs.__test__ = False  # a helper, not a test


def linux_job() -> dict:
    return next(j for j in test_jobs().values() if "container" in j)


def macos_job() -> dict:
    return next(j for j in test_jobs().values() if str(j.get("runs-on", "")).startswith("macos"))


def test_ci_runs_ci_run_and_nothing_else():
    """The workflow calls .ci/run instead of re-implementing it: in each test job, one step runs
    it, keeping its exit status through the log's pipe, and no step runs make or pytest itself."""
    scripts = [(name, s["run"]) for name, job in ci_jobs().items() for s in steps(job) if "run" in s]
    runs_ci = [(name, run) for name, run in scripts if re.search(r"(^|\s)\.ci/run\b", run)]
    names = [name for name, _ in runs_ci]
    assert len(names) == 2 and len(set(names)) == 2, (
        f"expected one step that runs .ci/run in each of two jobs (Linux, macOS): {runs_ci}")
    for name, run in runs_ci:
        shell = ci_jobs()[name].get("defaults", {}).get("run", {}).get("shell")
        assert "set -o pipefail" in run and shell == "bash", f"{name}: the exit status is lost in |"
    for _, run in scripts:
        assert not re.search(r"(^|[\s;&|])(make|pytest|python -m pytest)\b", run), (
            f"a workflow step runs the tests itself instead of .ci/run: {run!r}"
        )


def test_ci_triggers():
    on = triggers(load_workflow(CI))
    for event in ("push", "pull_request", "schedule", "workflow_dispatch"):
        assert event in on, f"{CI.name} does not run on {event}"


def test_ci_runs_on_python_3_11_with_a_pip_cache_keyed_on_the_locks():
    job = linux_job()
    container = job.get("container")
    image = container.get("image") if isinstance(container, dict) else container
    assert image and re.match(r"python:3\.11(?:[-.]|$)", image), "the test job is not on 3.11"
    cache = [s for s in steps(job) if uses(s) == "actions/cache"]
    assert cache and "pip" in str(cache[0]["with"]["path"])
    key = str(cache[0]["with"]["key"])
    for lock in ("requirements.txt", "requirements-dev.txt"):
        assert f"'{lock}'" in key, f"the pip cache is not keyed on {lock}"


def test_ci_runs_ci_run_on_apple_silicon_macos_with_python_3_11():
    """A second test job: .ci/run on GitHub's arm64 macOS runner, Python 3.11 from
    actions/setup-python (before .ci/run), pip's downloads cached on the two locks; no container
    (there are none on macOS) and nothing that installs a browser: the runner has Chrome."""
    job = macos_job()
    runner = str(job["runs-on"])
    # macos-14, macos-15, macos-26 and macos-latest are arm64; -intel, -large and 13 are x86-64
    assert re.fullmatch(r"macos-(1[4-9]|2\d|latest)(-xlarge)?", runner), runner
    assert "container" not in job
    setup = [(i, s) for i, s in enumerate(steps(job)) if uses(s) == "actions/setup-python"]
    i_run = next(i for i, s in enumerate(steps(job)) if ".ci/run" in s.get("run", ""))
    assert setup and setup[0][0] < i_run, "Python is not set up before .ci/run"
    with_ = setup[0][1]["with"]
    assert str(with_["python-version"]) == "3.11", with_
    assert with_.get("cache") == "pip"
    for lock in ("requirements.txt", "requirements-dev.txt"):
        assert lock in str(with_.get("cache-dependency-path")), f"pip cache not keyed on {lock}"
    assert not any("apt-get" in s.get("run", "") or "brew " in s.get("run", "")
                   for s in steps(job)), "the macOS job installs things .ci/run should not need"


def test_reports_are_uploaded_when_the_tests_fail():
    artifact_names = []
    for name, job in test_jobs().items():
        names = [uses(s) or s.get("run", "") for s in steps(job)]
        i_run = next(i for i, s in enumerate(steps(job)) if ".ci/run" in s.get("run", ""))
        tee = re.search(r"\|\s*tee\s+(\S+)", steps(job)[i_run]["run"])
        upload = [s for s in steps(job)[i_run:] if uses(s) == "actions/upload-artifact"]
        assert tee and upload, f"{name}: the test log is not kept and uploaded: {names}"
        assert upload[0].get("if") == "failure()"
        paths = str(upload[0]["with"]["path"])
        assert tee[1] in paths and "_build/html/reports" in paths and "_build/screenshots" in paths
        artifact_names.append(upload[0]["with"]["name"])
    assert len(set(artifact_names)) == len(artifact_names), "two jobs upload under one name"


# --- Pages: only what passed -------------------------------------------------------------------


def test_pages_publishes_only_a_tested_push_to_main():
    jobs = ci_jobs()
    on_main = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    # one test job (Linux) hands over the site it built, in a step reached only when .ci/run
    # passed
    hand_overs = [(n, i, s) for n, j in test_jobs().items() for i, s in enumerate(steps(j))
                  if uses(s) == "actions/upload-pages-artifact"]  # fmt: skip
    assert len(hand_overs) == 1, "one test job should upload the site it tested, once"
    test_name, i_upload, upload = hand_overs[0]
    assert jobs[test_name] is not macos_job(), "the published site is the Linux job's"
    test = jobs[test_name]
    i_run = next(i for i, s in enumerate(steps(test)) if ".ci/run" in s.get("run", ""))
    assert i_upload > i_run and upload["with"]["path"].rstrip("/") == "_build/html"
    assert upload.get("if") == on_main, "the site is handed over for a push to main only"
    assert not re.search(r"always\(\)|failure\(\)|cancelled\(\)", str(upload.get("if"))), (
        "the hand-over must not run when the tests failed"
    )
    # the deployment waits for every test job, and only that job deploys
    deploy = [(n, j) for n, j in jobs.items() if any(uses(s) == "actions/deploy-pages"
                                                     for s in steps(j))]  # fmt: skip
    assert len(deploy) == 1
    name, job = deploy[0]
    needs = job.get("needs", [])
    needs = [needs] if isinstance(needs, str) else needs
    for tested in test_jobs():
        assert tested in needs, f"{name} does not wait for {tested}"
    assert job.get("if") == on_main and "always()" not in str(job.get("if"))
    perms = job.get("permissions", {})
    assert perms.get("pages") == "write" and perms.get("id-token") == "write", perms
    assert job.get("environment", {}).get("name") == "github-pages"
    assert load_workflow(CI)["permissions"] == {"contents": "read"}
    for other, other_job in jobs.items():
        if other != name:
            assert "pages" not in other_job.get("permissions", {}), f"{other} need not write Pages"
    assert job["concurrency"]["cancel-in-progress"] is False, "a deployment is never cut off"
    # no other workflow deploys
    for path in all_workflows():
        if path != CI:
            text = path.read_text(encoding="utf-8")
            assert "deploy-pages" not in text, f"{path.name} deploys without the tests"
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["branch"] == "main", "_config.yml's branch is not main"


# --- pre-commit and the notebook metadata check ------------------------------------------------


def test_pre_commit_hooks_are_local_and_offline():
    config = yaml.safe_load(PRECOMMIT.read_text(encoding="utf-8"))
    hooks = {}
    for repo in config["repos"]:
        assert repo["repo"] in ("local", "meta"), (
            f"hook repo {repo['repo']} would be fetched from the network; use repo: local"
        )
        for hook in repo["hooks"]:
            hooks[hook["id"]] = hook
            if repo["repo"] == "local":
                assert hook["language"] == "system", f"{hook['id']}: use language: system"
                assert hook["entry"].startswith(".venv/bin/"), f"{hook['id']}: run from .venv"
    entries = " ".join(h.get("entry", "") for h in hooks.values())
    assert "ruff check" in entries
    assert "tests/test_structure.py" in entries
    assert "tools/check_notebook_metadata.py" in entries


def test_the_contributors_guide_explains_pages_and_pre_commit():
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "pre-commit install" in guide, "CONTRIBUTING.md does not say how to enable pre-commit"
    assert "GitHub Actions" in guide and "Pages" in guide, (
        "CONTRIBUTING.md does not say how to turn on Pages for a fork"
    )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "CONTRIBUTING.md" in readme, "the README does not point contributors to CONTRIBUTING.md"


def metadata_tool():
    spec = importlib.util.spec_from_file_location("check_notebook_metadata", METADATA_TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLEAN_NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python", "version": "3.11.7"},
    },
    "cells": [
        {
            "cell_type": "code",
            "id": "c1",
            "execution_count": 1,
            "source": "1 + 1",
            "outputs": [],
            "metadata": {"tags": ["remove-output"]},
        },
    ],
}


def write(path: Path, nb: dict) -> Path:
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_metadata_check_passes_the_course_notebooks(capsys):
    assert metadata_tool().main([]) == 0, capsys.readouterr().out


def test_metadata_check_flags_stray_metadata(tmp_path):
    tool_ = metadata_tool()
    assert tool_.main([str(write(tmp_path / "clean.ipynb", CLEAN_NOTEBOOK))]) == 0

    bad = copy.deepcopy(CLEAN_NOTEBOOK)
    bad["metadata"]["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}
    }
    bad["metadata"]["kernelspec"] = {
        "name": "course-venv",
        "display_name": "Python (course-venv)",
        "language": "python",
    }
    bad["metadata"]["language_info"]["path"] = "/home/alice/course/.venv/bin/python"
    bad["cells"][0]["metadata"]["interpreter"] = "/root/.venv/bin/python"
    problems = tool_.check(write(tmp_path / "bad.ipynb", bad))
    text = "\n".join(problems)
    assert "metadata.widgets" in text
    assert "kernelspec.name is 'course-venv'" in text
    assert "kernelspec.display_name" in text
    assert "language_info.path: a local path" in text
    assert "cell 0 (id c1): metadata.interpreter: a local path" in text

    cli = subprocess.run(
        [sys.executable, str(METADATA_TOOL), str(tmp_path / "bad.ipynb")],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 1 and "metadata.widgets" in cli.stdout


@pytest.mark.parametrize(
    "path",
    [
        "/home/bob/x",
        "/Users/bob/x",
        "C:\\Users\\bob\\x",
        ".venv/share/jupyter/kernels/p",
        "/opt/conda/envs/dl/bin/python",
        "/usr/lib/python3/site-packages",
    ],
)
def test_metadata_check_recognises_local_paths(path):
    nb = copy.deepcopy(CLEAN_NOTEBOOK)
    nb["metadata"]["kernelspec"]["argv"] = [path, "-m", "ipykernel_launcher"]
    assert any("local path" in p for p in metadata_tool().problems(nb)), path
