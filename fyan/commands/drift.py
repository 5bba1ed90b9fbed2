"""``fyan drift``: compare the blueprint with the adopted package's compiled environment."""

from __future__ import annotations

import argparse

from fyan.adopt.render import connectivity_text, drift_text, targets_text
from fyan.adopt.run import DriftReport, drift_report
from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.project import Project
from fyan.state.store import Store


DESCRIPTION = """Compare the blueprint's \\lean, \\leanok and \\uses with the adopted package's compiled
environment: a \\leanok on a declaration that has sorry, a \\lean name that does not exist, a
\\uses the proof does not use. Changes nothing."""


EXIT_CODES = {
    3: "the blueprint and the compiled environment disagree",
    4: "bad input: configuration, project folder, no adopted package",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--lean-project", metavar="FOLDER", help="the Lake package (default: [adopt] package of fyan.toml)")
    p.add_argument("--json", action="store_true", help="print JSON")


#: ``fyan drift --json``: the drift report
Payload = DriftReport


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    store = Store(project.paths.db)
    try:
        report = drift_report(project, store, args.lean_project)
    finally:
        store.close()
    text = "\n".join([f"Blueprint of {project.name} against {report.package}:", *targets_text(report),
                      drift_text(report.drift, report.counts),
                      *connectivity_text(report.isolated, report.components)])
    return CommandResult(ExitCode.INCOMPLETE if report.drift else ExitCode.OK, report.model_dump(mode="json"), text)

