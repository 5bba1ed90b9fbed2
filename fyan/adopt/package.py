"""An existing Lake package to adopt: its name, toolchain pin and modules (issue 16).

Read from its configuration only — ``lakefile.toml`` (TOML: ``name``, ``[[lean_lib]] name``) or
``lakefile.lean`` (``package «X»``, ``lean_lib «L»``; Lake's DSL, read by pattern, not run) — and
``lean-toolchain``. The modules of each library are its root module ``L`` (``L.lean``) and every
``L/**/*.lean`` (Lake's default ``roots``/``globs`` for a library: Lake docs, "Lean Libraries").
Nothing in the package is written.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from fyan.errors import InputError
from fyan.lean.toolchain import read_pin

_NAME = r"«([^»]+)»|([A-Za-z_][A-Za-z0-9_']*)"


@dataclass(frozen=True)
class LakePackage:
    """An adoptable Lake package: ``folder`` (absolute), ``name``, ``libs``, ``modules`` (dotted
    module names, libraries' roots first) and ``pin`` (its ``lean-toolchain``)."""

    folder: Path
    name: str
    libs: list[str]
    pin: str
    modules: list[str] = field(default_factory=list)


def _modules(folder: Path, lib: str) -> list[str]:
    out = [lib] if (folder / f"{lib}.lean").is_file() else []
    base = folder / lib
    if base.is_dir():
        for p in sorted(base.rglob("*.lean")):
            rel = p.relative_to(folder).with_suffix("")
            if all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_']*", part) for part in rel.parts):
                out.append(".".join(rel.parts))
    return out


def read_package(folder: Path | str) -> LakePackage:
    """The ``LakePackage`` in ``folder``. Raises ``InputError`` (saying what to give instead) when
    the folder is missing, has no lakefile, a lakefile that cannot be read, no ``lean_lib``, no
    ``lean-toolchain`` or no module."""
    folder = Path(folder).expanduser().resolve()
    hint = "give --lean-project the folder holding the package's lakefile.toml or lakefile.lean"
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder", hint=hint)
    toml, lean = folder / "lakefile.toml", folder / "lakefile.lean"
    if toml.is_file():
        try:
            data = tomllib.loads(toml.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"{toml}: not valid TOML: {e}", hint="fix the lakefile (`lake build` reads it too)") from None
        name = str(data.get("name", ""))
        libs = [str(lib.get("name")) for lib in data.get("lean_lib", []) if isinstance(lib, dict) and lib.get("name")]
    elif lean.is_file():
        text = lean.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"--[^\n]*", "", text)
        m = re.search(rf"(?m)^\s*package\s+(?:{_NAME})", text)
        name = (m.group(1) or m.group(2)) if m else ""
        libs = [a or b for a, b in re.findall(rf"(?m)^\s*(?:@\[[^\]]*\]\s*)?lean_lib\s+(?:{_NAME})", text)]
    else:
        raise InputError(f"{folder}: no lakefile.toml or lakefile.lean (not a Lake package)", hint=hint)
    if not name:
        raise InputError(f"{folder}: the lakefile names no package", hint="Lake needs `name = \"...\"` (TOML) or "
                         "`package «...»` (lakefile.lean)")
    if not libs:
        raise InputError(f"{folder}: the lakefile declares no lean_lib", hint="adoption reads the declarations of "
                         "the package's Lean libraries; declare one ([[lean_lib]] or lean_lib)")
    pin = read_pin(folder)
    if not pin:
        raise InputError(f"{folder}: no lean-toolchain file", hint="pin the package's toolchain (e.g. "
                         "`leanprover/lean4:v4.31.0`) as `lake new` does")
    modules = [m for lib in libs for m in _modules(folder, lib)]
    if not modules:
        raise InputError(f"{folder}: no module of {', '.join(libs)} found ({libs[0]}.lean or {libs[0]}/*.lean)",
                         hint=hint)
    return LakePackage(folder=folder, name=name, libs=libs, pin=pin, modules=modules)
