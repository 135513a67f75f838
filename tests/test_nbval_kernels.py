"""tests/nbval/kernels.py: a kernel that dies while starting is started again, at most three times."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import nbval.kernel
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "nbval"))
kernels = importlib.import_module("kernels")


def dying(times: int):
    """A stand-in for nbval's start_new_kernel whose kernel dies ``times`` times, then starts."""
    calls = []

    def start(*args, **kwargs):
        calls.append((args, kwargs))
        if len(calls) <= times:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    return start, calls


def test_the_plugin_replaces_nbvals_function():
    assert nbval.kernel.start_new_kernel is kernels.start_new_kernel


@pytest.mark.parametrize("deaths", [0, 1, 2])
def test_a_kernel_that_dies_while_starting_is_started_again(monkeypatch, deaths):
    start, calls = dying(deaths)
    monkeypatch.setattr(kernels, "_start_new_kernel", start)
    assert kernels.start_new_kernel(kernel_name="python3", cwd="x") == ("manager", "client")
    assert len(calls) == deaths + 1
    assert all(kw == {"kernel_name": "python3", "cwd": "x"} for _, kw in calls)


def test_three_deaths_are_an_error(monkeypatch):
    start, calls = dying(3)
    monkeypatch.setattr(kernels, "_start_new_kernel", start)
    with pytest.raises(RuntimeError, match="Kernel died"):
        kernels.start_new_kernel(kernel_name="python3")
    assert len(calls) == kernels.ATTEMPTS == 3


def test_the_makefile_loads_the_plugin_for_both_comparisons():
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text(encoding="utf-8")
    for target in ("\nnbval: setup", "\nnbval-strict: setup"):
        recipe = makefile.split(target, 1)[1].split("\n\n", 1)[0]
        assert "-p kernels" in recipe, target.strip()
