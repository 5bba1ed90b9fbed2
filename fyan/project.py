"""A Fyan project on disk: its folder layout and its configuration.

A project is a folder; everything needed to resume is in it::

    fyan.toml        configuration            source/        input documents (never modified)
    units/<unit>/    stage artifacts          lean/          the project's Lake package
    workspaces/<u>/  per-unit proving space   guidance/      human advice (watched)
    skills/          Curator output           replay/        record/replay cassette
    .fyan/state.db   state store              .fyan/logs/    structured logs
    .fyan/attempts/  one folder per stage attempt (agents write only there)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fyan.config import FyanConfig, load_config
from fyan.errors import ProjectError
from fyan.sandbox import safefile


#: A unit id: lowercase letters, digits and ``-`` (``fyan.specifier.units.sanitize_id``), so it is
#: a safe folder name and a safe Lean module component.
UNIT_ID = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


def check_unit_id(unit_id: str) -> str:
    """``unit_id`` when it is a valid unit id; raises ``ProjectError`` otherwise (a ``/``, ``..``
    or any other character would let a document label name a path outside the project)."""
    if not isinstance(unit_id, str) or not UNIT_ID.match(unit_id):
        raise ProjectError(f"{unit_id!r} is not a unit id (lowercase letters, digits and '-')",
                           hint="unit ids come from `fyan status`; labels are sanitized into ids at intake")
    return unit_id


@dataclass(frozen=True)
class ProjectPaths:
    """Every path of a project, derived from its root folder (each computed once: a run asks for
    them thousands of times)."""

    root: Path

    @cached_property
    def config(self) -> Path:
        return self.root / "fyan.toml"

    @cached_property
    def source(self) -> Path:
        return self.root / "source"

    @cached_property
    def units(self) -> Path:
        return self.root / "units"

    @cached_property
    def lean(self) -> Path:
        return self.root / "lean"

    @cached_property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    @cached_property
    def guidance(self) -> Path:
        return self.root / "guidance"

    @cached_property
    def skills(self) -> Path:
        return self.root / "skills"

    @cached_property
    def state(self) -> Path:
        return self.root / ".fyan"

    @cached_property
    def db(self) -> Path:
        return self.state / "state.db"

    @cached_property
    def logs(self) -> Path:
        return self.state / "logs"

    @cached_property
    def attempts(self) -> Path:
        return self.state / "attempts"

    @cached_property
    def lock(self) -> Path:
        return self.state / "run.lock"

    def unit(self, unit_id: str) -> Path:
        """``units/<unit_id>``; raises ``ProjectError`` for an id that is not a unit id."""
        return self._inside(self.units, check_unit_id(unit_id))

    def workspace(self, unit_id: str) -> Path:
        """``workspaces/<unit_id>``; raises ``ProjectError`` for an id that is not a unit id."""
        return self._inside(self.workspaces, check_unit_id(unit_id))

    def gate_workspace(self, unit_id: str, purpose: str) -> Path:
        """``.fyan/gate/<unit_id>/<purpose>``: a workspace of the gate's own (no agent writes under
        ``.fyan/``)."""
        return self._inside(self.state / "gate" / check_unit_id(unit_id), purpose)

    @staticmethod
    def _inside(base: Path, name: str) -> Path:
        path = base / name
        if path.resolve().parent != base.resolve():
            raise ProjectError(f"{name!r} would leave {base}", hint="this is a bug or a forged unit id")
        return path

    def rel(self, path: Path) -> str:
        """``path`` relative to the project root, with forward slashes."""
        return path.resolve().relative_to(self.root.resolve()).as_posix()


class Project:
    """An opened project: paths plus validated configuration."""

    def __init__(self, root: Path, config: FyanConfig) -> None:
        self.paths = ProjectPaths(root.resolve())
        self.config = config
        safefile.configure(config.lean.max_file_mb * 1024 * 1024)

    @classmethod
    def open(cls, root: Path | str) -> Project:
        """Open the project in folder ``root``.

        Raises ``ProjectError`` when the folder does not exist (or is a file) or has no ``fyan.toml``, and
        ``ConfigError`` when the configuration is invalid.
        """
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise ProjectError(f"{root}: is a file, not a project folder",
                               hint="give the project's folder (the one holding fyan.toml)")
        if not root.is_dir():
            raise ProjectError(
                f"{root}: no such folder", hint="create a project with `fyan init <dir> --source <file>`"
            )
        if not (root / "fyan.toml").is_file():
            raise ProjectError(
                f"{root}: not a Fyan project (no fyan.toml)",
                hint="create one with `fyan init <dir> --source <file>`",
            )
        return cls(root, load_config(root / "fyan.toml"))

    @cached_property
    def source_main(self) -> Path:
        return (self.paths.root / self.config.project.source).resolve()

    @property
    def name(self) -> str:
        return self.config.project.name
