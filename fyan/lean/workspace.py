"""Per-unit proving workspaces (``workspaces/<unit>/``): where agents work.

A workspace is a Lake package of its own: the project's ``lakefile.toml`` and
``lean-toolchain``, the complete units' modules copied from ``lean/<Lib>/``, and the unit's
candidate files. A command agent edits files there, and the Formalizer's feedback builds run
there (confined, writes limited to the workspace); its ``.lake/packages`` links to the project
package's, so dependencies such as Mathlib are fetched and built once per project. Nothing the
gateway decides on is built here: agents can leave anything in this folder, so decisions use
the gate's own workspaces (``fyan.lean.trusted``).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from fyan.lean.package import unit_module
from fyan.project import Project
from fyan.state.models import UnitRecord


@dataclass(frozen=True)
class Workspace:
    root: Path
    lib: str

    def module_file(self, module: str) -> Path:
        return self.root.joinpath(*module.split(".")).with_suffix(".lean")

    @property
    def lakefile(self) -> Path:
        return self.root / "lakefile.toml"


def prepare_workspace(project: Project, unit: UnitRecord, files: dict[str, str]) -> Workspace:
    """(Re)build ``workspaces/<unit>/`` with the candidate ``files`` (part name → Lean text,
    e.g. ``{"Basic": ...}``). Keeps ``.lake/`` (the build cache) between attempts."""
    lib = project.config.lean_lib
    root = project.paths.workspace(unit.id)
    root.mkdir(parents=True, exist_ok=True)
    for name in ("lakefile.toml", "lean-toolchain"):
        src = project.paths.lean / name
        if src.is_file():
            shutil.copyfile(src, root / name)
    packages = project.paths.lean / ".lake" / "packages"
    link = root / ".lake" / "packages"
    if packages.is_dir() and not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(packages.resolve(), link)
    lib_dir = root / lib
    if lib_dir.exists():
        shutil.rmtree(lib_dir)
    if (project.paths.lean / lib).is_dir():
        # *.tmp: a file sync_package is writing at this moment (renamed into place next)
        shutil.copytree(project.paths.lean / lib, lib_dir, ignore=shutil.ignore_patterns("*.tmp"))
    ws = Workspace(root, lib)
    for part, text in files.items():
        path = ws.module_file(unit_module(project, unit, part))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ws
