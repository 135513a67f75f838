"""A pytest plugin for the Makefile's nbval runs: a kernel that dies while starting is started again.

With many notebooks at a time (``make nbval`` runs one per core), two kernels can choose the same
free TCP port between choosing it and binding it, a known race of jupyter_client; the loser dies
before it replies, and nbval then reports every cell of its notebook as an error although nothing
in the notebook ran. This plugin starts such a kernel again, up to three times. It changes nothing
else: an error inside a notebook, once its kernel runs, fails the test as before.
"""

from __future__ import annotations

import nbval.kernel

ATTEMPTS = 3
_start_new_kernel = nbval.kernel.start_new_kernel


def start_new_kernel(*args, **kwargs):
    """nbval's ``start_new_kernel``, tried again when the kernel dies before it replies."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _start_new_kernel(*args, **kwargs)
        except RuntimeError:
            # nbval has already shut the dead kernel down and logged why
            if attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")


# nbval's RunningKernel looks the function up in its module each time it starts a kernel
nbval.kernel.start_new_kernel = start_new_kernel
