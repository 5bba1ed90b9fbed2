"""``fyan upgrade --mathlib TAG``: move a project to another Mathlib tag and the toolchain it
names (``fyan.orchestrator.upgrade``): fetch, re-check every complete unit on the new pair, reopen those
that no longer reproduce; the previous pair is kept until the new one verifies."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel

from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.lakepackage.fetch import FetchProgress
from fyan.orchestrator.upgrade import upgrade
from fyan.project import Project

DESCRIPTION = """Move the project to another Mathlib release tag and the lean-toolchain that tag names: the
new pair is prepared and fetched beside the current one, every complete unit is re-checked by
the completion gate on it (as `fyan verify` does), and only then is the project switched; units
whose completion no longer reproduces are reopened with the reason. Nothing is lost: the
previous pair is kept until every unit verifies on the new one."""

EXIT_CODES = {
    3: "the upgrade was done, but some units were reopened (or the fetch failed: nothing changed)",
    4: "bad input: configuration, project folder, a revision that is no Mathlib release tag",
    5: "a run holds the project's lock (stop it first)",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--mathlib", metavar="TAG", required=True, help="the Mathlib release tag to move to, e.g. v4.34.1")
    p.add_argument("--json", action="store_true", help="print a JSON result")


class Payload(BaseModel):
    """``fyan upgrade --json``: the previous and the new pair, what was fetched, the units
    re-checked and those reopened, and where the previous pair is kept."""

    previous: dict[str, Any]
    mathlib: str | None
    toolchain: str
    fetched: Any
    checked: Any
    reopened: Any
    previous_kept_in: Any


def run(args: argparse.Namespace) -> CommandResult:
    report = upgrade(Project.open(args.dir), args.mathlib, progress=FetchProgress(enabled=not args.json))
    payload = {"previous": {"mathlib": report.previous[0] or None, "toolchain": report.previous[1]},
               "mathlib": report.new.mathlib, "toolchain": report.new.toolchain, "fetched": report.fetched,
               "checked": report.checked, "reopened": report.reopened, "previous_kept_in": report.kept}
    return CommandResult(ExitCode.INCOMPLETE if report.reopened else ExitCode.OK, payload, report.text())
