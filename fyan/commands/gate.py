"""``fyan gate``: run the completion gate on one unit now."""

from __future__ import annotations

import argparse
import os
import time

from fyan.command_result import CommandResult
from fyan.commands._shared import require_unit
from fyan.errors import ExitCode
from fyan.gates.completion import run_gate
from fyan.models.gate_report import GateReport, report_json, report_text
from fyan.project import Project
from fyan.state.store import Store


DESCRIPTION = """Run the completion gate on one unit now, in its own workspace (a daemon's gate of the same unit
is waited for, never raced), and print every check with its reason; the report is kept under
.fyan/logs/gate/. Changes no state."""


EXIT_CODES = {
    3: "the gate failed (a check did not pass)",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("unit", help="unit id (see `fyan status`)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


#: ``fyan gate --json``: the gate report (every check with its status, reason and evidence)
Payload = GateReport


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    store = Store(project.paths.db)
    unit = require_unit(args.dir, store, args.unit)
    # build/inspector logs and the report of a manual run are kept (they are not stage state);
    # the gate builds in its own workspace under the unit's gate lock (a daemon's gate of the
    # same unit is waited for, never raced)
    log_dir = project.paths.logs / "gate" / f"{unit.id}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    report = run_gate(project, store, unit, log_dir)
    store.close()
    (log_dir / "report.json").write_bytes(report_json(report))
    code = ExitCode.OK if report.passed else ExitCode.INCOMPLETE
    return CommandResult(code, report.model_dump(mode="json"), report_text(report))

