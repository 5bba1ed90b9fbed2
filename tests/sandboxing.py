"""Tests that need a working bubblewrap (``bwrap``) skip, with the reason, where it is missing.

Model-written code and command agents run confined by default (``[lean] sandbox = "require"``):
on a machine without a usable ``bwrap`` Fyan refuses to run them, so a test that runs one needs
bubblewrap (CI installs it: ``.ci/run``). ``needs_bwrap`` marks such a test; the reason is the
one ``fyan.sandbox.runner.bwrap_status`` gives (not installed, or cannot create its namespaces).

``tests/without_bwrap.py`` is a pytest plugin that hides ``bwrap`` from the test process, to
check the suite on a machine without it (``pytest -p tests.without_bwrap``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fyan.sandbox.runner import bwrap_status

BWRAP, WHY = bwrap_status()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"no usable bubblewrap here: {WHY}")


def leftover_processes(token: str) -> list[int]:
    """Processes whose command line mentions ``token`` (a test's unique folder): what a test
    that ends a process tree checks is gone, and ends by id if not."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found
