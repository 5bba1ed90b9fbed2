"""``fyan accept-source``: accept a change of the project's source document — the stale units
(the statements that changed and what depends on them) start over, the others keep their work
(``fyan.orchestrator.accept``)."""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.errors import ExitCode

DESCRIPTION = """Accept a change of the source document: the stale units (changed statements and what
depends on them) start over from the first stage; every other unit keeps its work. With
--dry-run, only say what would re-run and change nothing."""

EXIT_CODES = {
    4: "bad input: configuration, project folder, a change that cannot be accepted",
    5: "a run holds the project's lock (stop it first)",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--dry-run", action="store_true", help="only say what would re-run; change nothing")
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan accept-source --json``: the units that start over and why, and whether it was applied."""

    model_config = ConfigDict(extra="allow")


def run(args: argparse.Namespace) -> CommandResult:
    from fyan.orchestrator.accept import run as accept

    payload, text = accept(args.dir, args.dry_run)
    return CommandResult(ExitCode.OK, payload, text)
