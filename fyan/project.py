"""A Fyan project on disk: its folder layout (DESIGN.md §4) and its configuration.

A project is a folder; everything needed to resume is in it::

    fyan.toml        configuration            source/        input documents (never modified)
    units/<unit>/    stage artifacts          lean/          the project's Lake package
    workspaces/<u>/  per-unit proving space   guidance/      human advice (watched)
    skills/          Curator output           replay/        record/replay cassette
    .fyan/state.db   state store              .fyan/logs/    structured logs
    .fyan/attempts/  one folder per stage attempt (agents write only there)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fyan.config import FyanConfig, load_config
from fyan.errors import ProjectError


@dataclass(frozen=True)
class ProjectPaths:
    """Every path of a project, derived from its root folder."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "fyan.toml"

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def units(self) -> Path:
        return self.root / "units"

    @property
    def lean(self) -> Path:
        return self.root / "lean"

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    @property
    def guidance(self) -> Path:
        return self.root / "guidance"

    @property
    def skills(self) -> Path:
        return self.root / "skills"

    @property
    def state(self) -> Path:
        return self.root / ".fyan"

    @property
    def db(self) -> Path:
        return self.state / "state.db"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def attempts(self) -> Path:
        return self.state / "attempts"

    @property
    def lock(self) -> Path:
        return self.state / "run.lock"

    def unit(self, unit_id: str) -> Path:
        return self.units / unit_id

    def workspace(self, unit_id: str) -> Path:
        return self.workspaces / unit_id

    def rel(self, path: Path) -> str:
        """``path`` relative to the project root, with forward slashes."""
        return path.resolve().relative_to(self.root.resolve()).as_posix()


class Project:
    """An opened project: paths plus validated configuration."""

    def __init__(self, root: Path, config: FyanConfig) -> None:
        self.paths = ProjectPaths(root.resolve())
        self.config = config

    @classmethod
    def open(cls, root: Path | str) -> Project:
        """Open the project in folder ``root``.

        Raises ``ProjectError`` when the folder does not exist or has no ``fyan.toml``, and
        ``ConfigError`` when the configuration is invalid.
        """
        root = Path(root)
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
