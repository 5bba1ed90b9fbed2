"""``fyan audit``: show a unit's semantic audit."""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict

from fyan.audit.report import audit_report
from fyan.command_result import CommandResult
from fyan.commands._shared import require_unit
from fyan.errors import ExitCode
from fyan.project import Project
from fyan.state.store import Store


DESCRIPTION = """Show a unit's semantic audit: does its Lean statement say what the document states? The slots,
the evidence record, the grade, where a failure was routed, and whether the certification is
stale. Changes no state."""


EXIT_CODES = {
    3: "the unit's statement is not certified (no audit yet, below the threshold, or stale)",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("unit", help="unit id (see `fyan status`)")
    p.add_argument("--json", action="store_true", help="print the audit as JSON")


class Payload(BaseModel):
    """``fyan audit --json``: the unit's audit (``fyan.audit.report``)."""

    model_config = ConfigDict(extra="allow")
    unit: str


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    store = Store(project.paths.db)
    unit = require_unit(args.dir, store, args.unit)
    certified, payload, text = audit_report(project, store, unit)
    store.close()
    return CommandResult(ExitCode.OK if certified else ExitCode.INCOMPLETE, payload, text)

