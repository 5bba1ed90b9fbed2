"""The toolchain double's instrument folder, bound writable into Fyan's confinements.

The double (``tests/fakes/fake_lake.py``) stands in for a toolchain and also tells the test what
it was asked: its call log, its compilations, its scenario's counters. That report is the one
thing it writes outside a workspace, and the bubblewrap sandbox makes everything outside the
workspace read-only. Rather than turning the sandbox off, the test binds that one folder
read-write into every confinement Fyan builds, after all of the product's own mounts: the
product's hidden folders, read-only binds and seccomp filter stay exactly as a user gets them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: names the instrument folder for processes the test does not run itself (Ray's workers load
#: ``tests/instruments_site/sitecustomize.py``, which binds it there too)
ENV = "FYAN_TEST_INSTRUMENTS"


def bind_instruments(folder: Path | str, setattr_: Callable[[Any, str, Any], None] = setattr) -> None:
    """Wrap ``fyan.sandbox.runner.bwrap_argv`` so its command line also binds ``folder``
    read-write, before the first ``--remount-ro``, ``--seccomp`` or ``--chdir`` (after every
    mount the product asked for). ``setattr_`` is ``monkeypatch.setattr`` in a test (undone after
    it) or plain ``setattr`` in a worker process."""
    from fyan.sandbox import runner

    real = getattr(runner.bwrap_argv, "__wrapped_real__", runner.bwrap_argv)
    target = str(Path(folder).resolve())

    def bwrap_argv(bwrap, argv, cwd, confinement):
        cmd = real(bwrap, argv, cwd, confinement)
        at = next(i for i, arg in enumerate(cmd) if arg in ("--remount-ro", "--seccomp", "--chdir"))
        return [*cmd[:at], "--bind", target, target, *cmd[at:]]

    bwrap_argv.__wrapped_real__ = real  # type: ignore[attr-defined]
    setattr_(runner, "bwrap_argv", bwrap_argv)
