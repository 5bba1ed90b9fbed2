"""Find the Lean toolchain: ``lake`` (and ``lean``) from config, ``PATH`` or ``~/.elan/bin``.

A missing toolchain is never an error that stops Fyan and never a pass: every check that
needs Lean fails with ``TOOLCHAIN_MISSING`` (DESIGN.md §2: fail closed), and the unit is
blocked until a toolchain is installed. Users install Lean with elan (README).
"""

from __future__ import annotations

import os
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


@dataclass(frozen=True)
class Toolchain:
    """A usable toolchain. ``version`` is the first line ``lake --version`` printed."""

    lake: Path
    lean: Path | None
    version: str


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


def discover(config: LeanSection, env: dict[str, str] | None = None, timeout: float = 60.0) -> Discovery:
    """Look for ``lake`` as the module docstring says and ask it for its version.

    Never raises: a missing, non-executable or failing ``lake`` gives ``toolchain=None`` with
    the reason in ``problem``. ``timeout`` (seconds) bounds ``lake --version`` (elan may need
    to resolve the toolchain first).
    """
    env = dict(os.environ if env is None else env)
    looked: list[str] = []
    for origin, lake in _candidates(config, env):
        looked.append(f"{origin}: {lake}")
        if not (lake.is_file() and os.access(lake, os.X_OK)):
            continue
        try:
            proc = subprocess.run(
                [str(lake), "--version"], capture_output=True, text=True, timeout=timeout,
                env={**env, "NO_COLOR": "1"}, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return Discovery(None, f"{lake} --version failed: {e}", tuple(looked))
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return Discovery(None, f"{lake} --version exited with {proc.returncode}: {detail[0]}", tuple(looked))
        lean = lake.parent / "lean"
        version = (proc.stdout.strip().splitlines() or ["unknown"])[0]
        return Discovery(Toolchain(lake, lean if lean.exists() else None, version), None, tuple(looked))
    return Discovery(None, TOOLCHAIN_MISSING, tuple(looked))
