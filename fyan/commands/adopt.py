"""``fyan adopt``: adopt an existing Lake package into a project."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from fyan.adopt.package import read_package
from fyan.adopt.render import adoption_text
from fyan.adopt.run import AdoptionReport, adopt, project_marks
from fyan.command_result import CommandResult
from fyan import configfile
from fyan.errors import ExitCode, ProjectError
from fyan.orchestrator.lock import ProjectLock
from fyan.project import Project
from fyan.state.gateway import Gateway


DESCRIPTION = """Adopt an existing Lake package: the units whose \\lean declarations are proved (declared,
sorry-free, allowed axioms) in its compiled environment, as the trusted inspector reads it,
become complete by adoption; ones with sorry become the statements to prove. The package's files
are never changed."""


EXIT_CODES = {
    4: "bad input: configuration, project folder, a folder that is not a Lake package",
    5: "refused: another run holds the project lock, or the project adopts another package",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--lean-project", metavar="FOLDER", help="the Lake package (default: [adopt] package of fyan.toml)")
    p.add_argument("--json", action="store_true", help="print JSON")


#: ``fyan adopt --json``: the adoption report
Payload = AdoptionReport


def _adopt_config(project, folder: str | None):
    """Write ``[adopt]`` into the project's fyan.toml when it has none (``folder`` given); the
    project re-opened. Raises ``ProjectError`` when it adopts another package already."""
    if not folder:
        return project
    pkg = read_package(folder)
    current = project.config.adopt.package
    if current:
        if Path(current).resolve() != pkg.folder:
            raise ProjectError(f"{project.paths.root} already adopts {current}, not {pkg.folder}",
                               hint="one project adopts one Lake package; start a new project for another")
        return project
    path = project.paths.config
    text = path.read_text(encoding="utf-8")
    if "[adopt]" in text:
        raise ProjectError(f"{path}: has an [adopt] section without a package",
                           hint="set package = \"<folder>\" in it, or remove the section")
    tmp = path.with_suffix(".toml.tmp")
    try:
        text = configfile.set_keys(text, "adopt", {"package": str(pkg.folder), "package_name": pkg.name})
    except ValueError as e:
        raise ProjectError(f"{path}: cannot add [adopt]: {e}", hint="correct fyan.toml, then run the same command "
                           "again") from None
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return Project.open(project.paths.root)


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    with ProjectLock(project.paths.lock):
        if args.lean_project:

            read_package(args.lean_project)  # bad input fails before fyan.toml changes
        gateway = Gateway(project)
        try:

            project_marks(project, gateway.store)  # ingested? (before fyan.toml changes)
            project = _adopt_config(project, args.lean_project)
            gateway.project = project
            report = adopt(project, gateway)
        finally:
            gateway.close()
    return CommandResult(ExitCode.OK, report.model_dump(mode="json"), adoption_text(report))

