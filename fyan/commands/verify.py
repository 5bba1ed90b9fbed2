"""``fyan verify``: re-run the completion gate of every complete unit from scratch."""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.commands._shared import refuse_unknown_units
from fyan.errors import ExitCode
from fyan.gates.verify import render, verify_project
from fyan.project import Project
from fyan.state.store import Store


DESCRIPTION = """Re-run the completion gate of every complete unit (or of --unit) from scratch, from the
recorded artifacts, and list those whose completion does not reproduce. Changes no state."""


EXIT_CODES = {
    3: "a completion does not reproduce",
    4: "bad input: configuration, project folder",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--unit", action="append", help="verify only this complete unit (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan verify --json``: one entry per verified unit, and the units whose completion did
    not reproduce."""

    model_config = ConfigDict(extra="allow")
    project: str | None = None
    units: list = []
    not_reproduced: list[str] = []


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    store = Store(project.paths.db)
    known = {u.id for u in store.units()} if store.exists else set()
    if not known and not args.unit:
        store.close()
        return CommandResult(ExitCode.OK, {"project": project.name, "units": []}, f"{project.name}: not ingested yet.")
    if set(args.unit or []) - known:
        store.close()
        refuse_unknown_units(args.dir, args.unit, known)

    def progress(entry, report) -> None:
        if not args.json:
            print(f"{'ok ' if entry.reproduced else 'NOT'} {entry.unit}", flush=True)

    try:
        result = verify_project(project, store, only=set(args.unit) if args.unit else None, on_unit=progress)
    finally:
        store.close()
    payload = {**result.model_dump(mode="json"), "not_reproduced": [u.unit for u in result.not_reproduced]}
    return CommandResult(ExitCode.INCOMPLETE if result.not_reproduced else ExitCode.OK, payload, render(result))

