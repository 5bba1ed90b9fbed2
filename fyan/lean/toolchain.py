"""Find the Lean toolchain: ``lake`` (and ``lean``) from config, ``PATH`` or ``~/.elan/bin``.

A missing toolchain is never an error that stops Fyan and never a pass: every check that
needs Lean fails with ``TOOLCHAIN_MISSING`` (docs/design.md: fail closed), and the unit is
blocked until a toolchain is installed. Users install Lean with elan (README).

The project's Lake package pins its toolchain in ``lean-toolchain`` (one line, e.g.
``leanprover/lean4:v4.31.0``; Lake/elan documentation). ``check_pin`` reads it and compares
it with the Lean version ``lake --version`` reports: the gate's ``build`` check requires the
configured toolchain (the gate's ``build`` check); every spelling of a pin is understood and anything
it cannot compare fails closed. Kernel replay tools (``leanchecker``, shipped
with recent toolchains, or ``lean4checker``) are found by ``find_kernel_checker``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fyan.config import LeanSection

TOOLCHAIN_MISSING = (
    "Lean toolchain not found: install elan "
    "(curl https://elan.lean-lang.org/elan-init.sh -sSf | sh) and run `elan default stable`, "
    "or set [lean] lake in fyan.toml"
)

#: Names of kernel replay executables, in order of preference.
KERNEL_CHECKERS = ("leanchecker", "lean4checker")

_LEAN_VERSION = re.compile(r"Lean \(?version (?P<v>\d+\.\d+\.\d+(?:-[0-9A-Za-z.\-]+)?)")
#: A toolchain pin in any spelling elan accepts for a release or a nightly:
#: ``leanprover/lean4:v4.19.0-rc2``, ``v4.19.0-rc2``, ``4.19.0-rc2``, ``leanprover/lean4:nightly-2025-01-01``.
_PIN_VERSION = re.compile(
    r"^(?:[\w.\-]+/[\w.\-]+:)?(?:v?(?P<v>\d+\.\d+\.\d+(?:-[0-9A-Za-z.\-]+)?)|(?P<nightly>nightly-\d{4}-\d{2}-\d{2}))$"
)


def pin_version(pin: str) -> str | None:
    """The Lean version a pin names, in the form ``lake --version`` reports it (``4.19.0-rc2``),
    or ``nightly-YYYY-MM-DD`` for a nightly; None when the pin names no version (``stable``, a
    custom toolchain)."""
    m = _PIN_VERSION.match(pin.strip())
    if m is None:
        return None
    return m.group("v") or m.group("nightly")


def versions_match(pinned: str, reported: str) -> bool:
    """Whether a reported Lean version (``4.16.0-nightly-2025-01-01``, ``4.19.0-rc2``) is the
    pinned one (``pin_version``)."""
    if pinned.startswith("nightly-"):
        return reported.endswith("-" + pinned)
    return reported == pinned


@dataclass(frozen=True)
class Toolchain:
    """A usable toolchain. ``version`` is the first line ``lake --version`` printed (e.g.
    ``Lake version 5.0.0-... (Lean version 4.31.0)``)."""

    lake: Path
    lean: Path | None
    version: str
    #: Folders confined builds may read besides the toolchain's own (``[lean] sandbox_readable``)
    readable: tuple[Path, ...] = ()

    @property
    def lean_version(self) -> str | None:
        """The Lean version in ``version`` (``4.31.0``), or None when it does not say."""
        m = _LEAN_VERSION.search(self.version)
        return m.group("v") if m else None


@dataclass(frozen=True)
class Discovery:
    """Result of ``discover``: a toolchain, or why there is none (``problem``)."""

    toolchain: Toolchain | None
    problem: str | None
    looked_in: tuple[str, ...]


def _candidates(config: LeanSection, env: dict[str, str]) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    if config.lake:
        found.append(("[lean] lake", Path(config.lake).expanduser()))
        return found
    on_path = shutil.which("lake", path=env.get("PATH"))
    if on_path:
        found.append(("PATH", Path(on_path)))
    elan_home = Path(env.get("ELAN_HOME", Path(env.get("HOME", "~")).expanduser() / ".elan"))
    found.append(("elan", elan_home / "bin" / "lake"))
    return found


def discover(config: LeanSection, env: dict[str, str] | None = None, timeout: float = 60.0,
             cwd: Path | None = None) -> Discovery:
    """Look for ``lake`` as the module docstring says and ask it for its version.

    Never raises: a missing, non-executable, failing or silent ``lake`` gives
    ``toolchain=None`` with the reason in ``problem``. ``timeout`` (seconds) bounds
    ``lake --version`` (elan may need to resolve the toolchain first). ``cwd``: where to run
    it (elan picks the toolchain pinned by the ``lean-toolchain`` found from there).
    """
    env = dict(os.environ if env is None else env)
    looked: list[str] = []
    for origin, lake in _candidates(config, env):
        looked.append(f"{origin}: {lake}")
        if not (lake.is_file() and os.access(lake, os.X_OK)):
            if origin == "[lean] lake":
                return Discovery(None, f"[lean] lake = {config.lake!r} is not an executable file; "
                                       "fix the path in fyan.toml or remove it to search PATH and ~/.elan/bin",
                                 tuple(looked))
            continue
        try:
            proc = subprocess.run(
                [str(lake), "--version"], capture_output=True, text=True, timeout=timeout,
                env={**env, "NO_COLOR": "1"}, stdin=subprocess.DEVNULL,
                cwd=cwd if cwd is not None and Path(cwd).is_dir() else None,
            )
        except subprocess.TimeoutExpired:
            return Discovery(None, f"`{lake} --version` did not answer within {timeout:g} s", tuple(looked))
        except OSError as e:
            return Discovery(None, f"`{lake} --version` could not run: {e.strerror or e}", tuple(looked))
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            how = f"was killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exited with {proc.returncode}"
            return Discovery(None, f"`{lake} --version` {how}: {detail[0]}", tuple(looked))
        lines = proc.stdout.strip().splitlines()
        if not lines:
            return Discovery(None, f"`{lake} --version` printed nothing: is {lake} a Lake executable?", tuple(looked))
        lean = lake.parent / "lean"
        readable = tuple(Path(p).expanduser() for p in config.sandbox_readable)
        return Discovery(Toolchain(lake, lean if lean.exists() else None, lines[0].strip(), readable), None,
                         tuple(looked))
    return Discovery(None, TOOLCHAIN_MISSING, tuple(looked))


def read_pin(folder: Path) -> str | None:
    """The toolchain pinned by ``folder/lean-toolchain`` as elan reads it: its first line, trimmed
    (``s.lines().next()`` then ``trim()``, src/elan/config.rs ``find_override_from_dir_walk``); None
    when the file is missing, unreadable, empty, or its first line is blank (elan refuses that name
    instead of reading a later line, so no later line may stand in for it)."""
    try:
        text = (folder / "lean-toolchain").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    # Rust's `lines` splits at "\n" only (dropping a "\r" before it), unlike str.splitlines
    return text.split("\n", 1)[0].strip() or None


@dataclass(frozen=True)
class PinCheck:
    """``ok`` False: the build must not count (``reason`` says what to do)."""

    ok: bool
    pin: str | None
    lean_version: str | None
    reason: str


def check_pin(toolchain: Toolchain, folder: Path) -> PinCheck:
    """Compare ``folder/lean-toolchain`` with the version ``toolchain`` reports.

    Every spelling of a pin is accepted (``pin_version``). A missing pin fails (the project's
    Lake package is incomplete); so do a pin and a reported version that differ (the build would
    not use the configured toolchain), and a pin or a report Fyan cannot compare (``stable``, a
    custom toolchain, a ``lake`` that does not say its Lean version): the gate cannot confirm the
    configured toolchain, and fails closed.
    """
    pin = read_pin(folder)
    reported = toolchain.lean_version
    if pin is None:
        return PinCheck(False, None, reported,
                        f"{folder / 'lean-toolchain'} is missing or empty: the Lake package does not pin a "
                        "toolchain; restore it (fyan writes it from [lean] toolchain when it creates the package)")
    pinned = pin_version(pin)
    if pinned is None:
        return PinCheck(False, pin, reported,
                        f"lean-toolchain pins {pin!r}, which names no Lean version Fyan can compare with the toolchain "
                        "it runs; pin a release (for example leanprover/lean4:v4.31.0) in [lean] toolchain")
    if reported is None:
        return PinCheck(False, pin, reported,
                        f"`lake --version` printed {toolchain.version!r}, which names no Lean version: cannot confirm "
                        f"the pinned toolchain {pin}; check [lean] lake")
    if not versions_match(pinned, reported):
        return PinCheck(False, pin, reported,
                        f"toolchain mismatch: lean-toolchain pins {pin} but `lake --version` reports Lean {reported}; "
                        f"install the pinned toolchain (elan toolchain install {pin}) or change [lean] toolchain")
    return PinCheck(True, pin, reported, f"lean-toolchain {pin} (Lean {reported})")


def find_kernel_checker(toolchain: Toolchain, cwd: Path | None = None, env: dict[str, str] | None = None,
                        timeout: float = 60.0) -> tuple[Path | None, list[str]]:
    """(kernel replay executable or None, where it was looked for).

    Looks next to ``lake``, in the toolchain prefix reported by ``lean --print-prefix`` (run in
    ``cwd`` so elan resolves the pinned toolchain), then on ``PATH``.
    """
    env = dict(os.environ if env is None else env)
    dirs: list[Path] = [toolchain.lake.parent]
    if toolchain.lean is not None:
        try:
            proc = subprocess.run([str(toolchain.lean), "--print-prefix"], capture_output=True, text=True,
                                  timeout=timeout, env=env, stdin=subprocess.DEVNULL,
                                  cwd=cwd if cwd is not None and Path(cwd).is_dir() else None)
            prefix = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
            if prefix:
                dirs.append(Path(prefix[0]) / "bin")
        except (OSError, subprocess.TimeoutExpired):
            pass
    looked = []
    for d in dirs:
        for name in KERNEL_CHECKERS:
            candidate = d / name
            looked.append(str(candidate))
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate, looked
    for name in KERNEL_CHECKERS:
        looked.append(f"PATH: {name}")
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return Path(found), looked
    return None, looked
