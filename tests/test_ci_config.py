"""Tests of the maintainers' tooling: GitHub Actions workflows, pre-commit hooks, metadata check.

* the workflows in .github/workflows pass two linters, offline: ``check-jsonschema`` against the
  GitHub workflow schema it vendors (typo'd keys, wrong types, unknown events) and ``zizmor``
  (GitHub Actions static analysis: template injection, credentials, permissions, unpinned
  third-party actions; configured in .github/zizmor.yml), plus consistency checks that neither
  does (``needs`` and ``steps.<id>`` references, cron syntax, ``${{ }}`` balance);
* CI runs exactly the README's test command, the one .ci/run runs, with Python 3.11, a pip cache
  keyed on requirements.txt, Debian's chromium installed first, a weekly schedule, and the
  reports and the log uploaded on failure;
* the Pages workflow builds with ``make book`` on pushes to main only and publishes _build/html
  with the official Pages actions;
* .pre-commit-config.yaml has only local (offline) hooks, and tools/check_notebook_metadata.py
  flags stray notebook metadata and passes the course's notebooks.
"""

from __future__ import annotations

import copy
import importlib.util
import json
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
PAGES = WORKFLOWS / "pages.yml"
ZIZMOR_CONFIG = ROOT / ".github" / "zizmor.yml"
PRECOMMIT = ROOT / ".pre-commit-config.yaml"
METADATA_TOOL = ROOT / "tools" / "check_notebook_metadata.py"
INSTALL_HINT = "install the pinned requirements: .venv/bin/pip install -r requirements.txt"


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


def find_step(job: dict, action: str) -> tuple[int, dict]:
    for i, step in enumerate(steps(job)):
        if uses(step) == action:
            return i, step
    pytest.fail(f"no step uses {action}")


def make_commands(run: str) -> list[str]:
    """The `make ...` commands in a shell script, without redirections or pipes."""
    found = []
    for line in run.splitlines():
        m = re.match(r"^\s*(?:exec\s+)?(make\b.*)", line)
        if m:
            command = re.split(r"\s*(?:\d*>|<|\||&&|;|#)", m[1])[0]
            found.append(" ".join(command.split()))
    return found


def readme_test_command() -> str:
    """The command the README's table of commands says runs the whole test suite."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*runs the whole test suite", readme, re.MULTILINE)
    assert len(rows) == 1, "README.md: expected one row '| `<command>` | runs the whole test suite"
    return rows[0]


def ci_run_command() -> str:
    commands = make_commands((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert len(commands) == 1, f".ci/run should run one make command, found {commands}"
    return commands[0]


def ci_test_job(wf: dict) -> tuple[dict, int, str]:
    """The CI job that runs the test command, the index of that step and the step's script."""
    readme_cmd = readme_test_command()
    for job in wf["jobs"].values():
        for i, step in enumerate(steps(job)):
            if readme_cmd in make_commands(step.get("run", "")):
                return job, i, step["run"]
    pytest.fail(f"no step of {CI.name} runs `{readme_cmd}`")


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed: {INSTALL_HINT}")
    return found


def zizmor(paths: list[Path]) -> subprocess.CompletedProcess:
    """zizmor on ``paths``, offline, failing on a file that is not a valid workflow."""
    cmd = [tool("zizmor"), "--offline", "--no-progress", "--strict-collection",
           "--config", str(ZIZMOR_CONFIG), *map(str, paths)]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, check=False, text=True, timeout=120, cwd=ROOT)


def all_workflows() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


# --- the linters -------------------------------------------------------------------------------


def test_there_are_workflows():
    assert CI.exists() and PAGES.exists(), "expected .github/workflows/ci.yml and pages.yml"


# (description, text in ci.yml, its broken replacement, linters that must reject it)
MUTATIONS = [
    ("typo'd key", "    runs-on: ubuntu-24.04", "    runs_on: ubuntu-24.04",
     {"check-jsonschema", "zizmor"}),
    ("bad runs-on", "    runs-on: ubuntu-24.04", "    runs-on: [[ubuntu]]", {"check-jsonschema"}),
    ("unknown event", "  pull_request:", "  pull_requests:", {"check-jsonschema"}),
    ("typo'd step key", "        if: failure()", "        iff: failure()", {"check-jsonschema"}),
    ("template injection", "make test 2>&1", "make test ${{ github.head_ref }} 2>&1", {"zizmor"}),
    ("unpinned third-party action", "uses: actions/cache@v4", "uses: someone/cache@v4",
     {"zizmor"}),
]  # fmt: skip


@pytest.fixture(scope="module")
def linted(tmp_path_factory):
    """Broken copies of ci.yml, one per mutation, and check-jsonschema's errors per file.

    check-jsonschema (the slow one to start) runs once, on the real workflows and all the broken
    copies together."""
    text = CI.read_text(encoding="utf-8")
    broken = []
    for i, (what, old, new, _) in enumerate(MUTATIONS):
        assert old in text, f"the anchor {old!r} ({what}) is no longer in {CI.name}"
        folder = tmp_path_factory.mktemp(f"mutation{i}") / ".github" / "workflows"
        folder.mkdir(parents=True)
        broken.append(folder / "ci.yml")
        broken[-1].write_text(text.replace(old, new, 1), encoding="utf-8")
    cmd = [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
           "-o", "JSON", *map(str, all_workflows() + broken)]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, check=False, text=True, timeout=180, cwd=ROOT)
    assert run.stdout.strip().startswith("{"), f"check-jsonschema failed:\n{run.stderr}"
    errors = {}
    for error in json.loads(run.stdout).get("errors", []):
        path = (ROOT / error["filename"]).resolve()
        detail = error.get("best_deep_match") or error.get("best_match") or error
        errors.setdefault(path, []).append(f"{detail['path']}: {detail['message']}")
    return broken, errors


def test_workflows_pass_the_linters(linted):
    _, errors = linted
    for path in all_workflows():
        assert path.resolve() not in errors, (
            f"check-jsonschema (GitHub workflow schema) rejects {path.name}:\n"
            + "\n".join(errors[path.resolve()])
        )
    result = zizmor(all_workflows())
    assert result.returncode == 0, f"zizmor failed:\n{result.stdout}\n{result.stderr}"


def test_the_linters_catch_broken_workflows(linted):
    broken, errors = linted
    missed = []
    for path, (what, _, new, caught_by) in zip(broken, MUTATIONS, strict=True):
        if "check-jsonschema" in caught_by and path.resolve() not in errors:
            missed.append(f"check-jsonschema missed the {what} ({new.strip()!r})")
        if "zizmor" in caught_by and zizmor([path]).returncode == 0:
            missed.append(f"zizmor missed the {what} ({new.strip()!r})")
    assert not missed, "\n".join(missed)


CRON_FIELDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
CRON_NAMES = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)"
CRON_PART = rf"(\*|\d+(?:-\d+)?|{CRON_NAMES}(?:-{CRON_NAMES})?)(?:/(\d+))?"


def valid_cron_field(field: str, low: int, high: int) -> bool:
    for part in field.split(","):
        m = re.fullmatch(CRON_PART, part, re.IGNORECASE)
        if not m:
            return False
        numbers = [int(n) for n in re.findall(r"\d+", m[1])]
        if any(not low <= n <= high for n in numbers):
            return False
    return True


@pytest.mark.parametrize("path", all_workflows(), ids=lambda p: p.name)
def test_workflow_references_are_consistent(path):
    """What the schema cannot see: references between jobs and steps, cron, expressions."""
    wf = load_workflow(path)
    text = path.read_text(encoding="utf-8")
    assert text.count("${{") == text.count("}}"), "unbalanced ${{ ... }} expression"
    jobs = wf["jobs"]
    for name, job in jobs.items():
        needs = job.get("needs", [])
        for need in [needs] if isinstance(needs, str) else needs:
            assert need in jobs, f"job {name} needs {need!r}, which is not a job of {path.name}"
        ids = [s["id"] for s in steps(job) if "id" in s]
        assert len(ids) == len(set(ids)), f"job {name} has duplicate step ids {ids}"
        for ref in re.findall(r"steps\.([A-Za-z_][\w-]*)", json.dumps(job)):
            assert ref in ids, f"job {name} refers to steps.{ref}, which has no such id"
    for entry in triggers(wf).get("schedule") or []:
        fields = entry["cron"].split()
        assert len(fields) == 5, f"cron {entry['cron']!r} does not have 5 fields"
        for field, (low, high) in zip(fields, CRON_FIELDS, strict=True):
            assert valid_cron_field(field, low, high), f"cron {entry['cron']!r}: bad {field!r}"


@pytest.mark.parametrize("path", all_workflows(), ids=lambda p: p.name)
def test_actions_are_pinned(path):
    """GitHub's own actions by major version (actions/x@v4), anything else by commit hash."""
    for job in load_workflow(path)["jobs"].values():
        for step in steps(job):
            if "uses" not in step:
                continue
            ref = step["uses"]
            if ref.startswith("actions/"):
                assert re.fullmatch(r"actions/[\w.-]+@v\d+", ref), f"{ref}: pin a major version"
            else:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", ref), (
                    f"{ref}: pin a third-party action to a full commit hash"
                )


# --- CI: the README's test command -------------------------------------------------------------


def test_ci_runs_exactly_the_readme_test_command():
    readme_cmd = readme_test_command()
    assert readme_cmd == "make test", f"the README's test command is now {readme_cmd!r}"
    assert ci_run_command() == readme_cmd, ".ci/run does not run the README's test command"
    wf = load_workflow(CI)
    job, _, _ = ci_test_job(wf)
    commands = [c for s in steps(job) for c in make_commands(s.get("run", ""))]
    assert commands == [readme_cmd], (
        f"the CI job should run exactly `{readme_cmd}` (as README.md and .ci/run do), "
        f"it runs {commands}"
    )


def test_ci_sets_the_environment_that_ci_run_exports():
    """What .ci/run exports before `make test` (REQUIRE_BROWSER=1, ...), the CI job sets too."""
    exported = dict(
        re.findall(
            r"^\s*export\s+(\w+)=[\"']?([^\"'\s]*)",
            (ROOT / ".ci" / "run").read_text(),
            re.MULTILINE,
        )
    )
    wf = load_workflow(CI)
    job, make_index, _ = ci_test_job(wf)
    env = {**wf.get("env", {}), **job.get("env", {}), **steps(job)[make_index].get("env", {})}
    for name, value in exported.items():
        assert str(env.get(name)) == value, (
            f".ci/run exports {name}={value} before `make test`; the CI job sets {env.get(name)!r}"
        )


def test_ci_triggers_and_weekly_schedule():
    on = triggers(load_workflow(CI))
    for event in ("push", "pull_request", "schedule", "workflow_dispatch"):
        assert event in on, f"{CI.name} does not run on {event}"
    crons = [entry["cron"].split() for entry in on["schedule"]]
    assert any(
        len(f) == 5
        and f[2] == "*"
        and f[3] == "*"
        and re.fullmatch(r"[0-7]|[a-z]{3}", f[4], re.IGNORECASE)
        and f[0].isdigit()
        and f[1].isdigit()
        for f in crons
    ), f"no weekly schedule (one fixed time on one day of the week) among {crons}"


def test_ci_uses_python_3_11_and_caches_pip_on_requirements():
    wf = load_workflow(CI)
    job, make_index, _ = ci_test_job(wf)
    container = job.get("container")
    image = container.get("image") if isinstance(container, dict) else container
    setup = [s for s in steps(job) if uses(s) == "actions/setup-python"]
    assert (image and re.match(r"python:3\.11(?:[-.]|$)", image)) or (
        setup and str(setup[0].get("with", {}).get("python-version")) == "3.11"
    ), "the test job does not run on Python 3.11"

    def keyed_on_requirements(i, step):
        args = step.get("with", {})
        if uses(step) == "actions/cache":
            return "pip" in str(args.get("path")) and "hashFiles('requirements.txt')" in str(
                args.get("key")
            )
        if uses(step) == "actions/setup-python":
            return args.get("cache") == "pip" and "requirements.txt" in str(
                args.get("cache-dependency-path")
            )
        return False

    caches = [i for i, s in enumerate(steps(job)) if keyed_on_requirements(i, s)]
    assert caches and caches[0] < make_index, "no pip cache keyed on requirements.txt before make"


def test_ci_installs_debian_chromium_before_the_tests():
    job, make_index, _ = ci_test_job(load_workflow(CI))
    installs = [
        i
        for i, s in enumerate(steps(job))
        if re.search(r"apt-get install\b[^\n]*\bchromium\b", s.get("run", ""))
    ]
    assert installs, "no step installs chromium with apt-get"
    assert installs[0] < make_index, "chromium is installed after the tests run"
    container = job.get("container")
    image = container.get("image") if isinstance(container, dict) else container
    assert image and re.search(r"(bookworm|trixie|debian)", image), (
        "apt-get installs Debian's chromium only in a Debian image (on the Ubuntu runner "
        "`chromium` is a transitional package for a snap)"
    )


def test_ci_keeps_the_exit_status_and_uploads_reports_on_failure():
    wf = load_workflow(CI)
    job, make_index, run = ci_test_job(wf)
    step = steps(job)[make_index]
    tee = re.search(r"\|\s*tee\s+(?:-a\s+)?(\S+)", run)
    if "|" in run:
        shell = (
            step.get("shell")
            or job.get("defaults", {}).get("run", {}).get("shell")
            or (wf.get("defaults", {}).get("run", {}).get("shell"))
        )
        assert shell == "bash" or "set -o pipefail" in run, (
            "make's exit status is lost in the pipe: use `shell: bash` (which sets pipefail)"
        )
    i, upload = find_step(job, "actions/upload-artifact")
    assert i > make_index and "failure()" in str(upload.get("if")), (
        "the artifacts should be uploaded after the tests, if: failure()"
    )
    paths = str(upload["with"]["path"])
    assert "_build/html/reports" in paths, "the build reports are not uploaded"
    assert tee, "the make test output is not saved to a log file with tee"
    assert tee[1] in paths, f"the log {tee[1]} is not uploaded"


# --- Pages -------------------------------------------------------------------------------------


def test_pages_builds_on_pushes_to_main_only():
    wf = load_workflow(PAGES)
    assert triggers(wf) == {"push": {"branches": ["main"]}}, (
        f"{PAGES.name} should run on pushes to main only, runs on {triggers(wf)}"
    )
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["branch"] == "main", "_config.yml's branch is not main"


def test_pages_publishes_build_html_with_the_official_actions():
    wf = load_workflow(PAGES)
    jobs = wf["jobs"]
    build = next(
        j
        for j in jobs.values()
        if any(uses(s) == "actions/upload-pages-artifact" for s in steps(j))
    )
    i_book = next(i for i, s in enumerate(steps(build)) if make_commands(s.get("run", "")))
    assert make_commands(steps(build)[i_book]["run"]) == ["make book"]
    find_step(build, "actions/configure-pages")
    i_upload, upload = find_step(build, "actions/upload-pages-artifact")
    assert i_upload > i_book
    assert upload.get("with", {}).get("path", "").rstrip("/") == "_build/html"

    name, deploy = next(
        (n, j) for n, j in jobs.items() if any(uses(s) == "actions/deploy-pages" for s in steps(j))
    )
    build_name = next(n for n, j in jobs.items() if j is build)
    needs = deploy.get("needs", [])
    assert build_name in ([needs] if isinstance(needs, str) else needs)
    perms = {**wf.get("permissions", {}), **deploy.get("permissions", {})}
    assert perms.get("pages") == "write" and perms.get("id-token") == "write", (
        f"the deploy job needs pages: write and id-token: write, has {perms}"
    )
    assert deploy.get("environment", {}).get("name") == "github-pages"
    for other, job in jobs.items():
        if other != name:
            assert "pages" not in job.get("permissions", {}), f"{other} need not write Pages"
    assert wf["concurrency"]["group"] and wf["concurrency"]["cancel-in-progress"] is False, (
        "one Pages deployment at a time, never cancelled half way"
    )


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


def test_readme_explains_pages_and_pre_commit():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pre-commit install" in readme, "the README does not say how to enable pre-commit"
    assert "GitHub Actions" in readme and "Pages" in readme, (
        "the README does not say how to turn on Pages for a fork"
    )


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
