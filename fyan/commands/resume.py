"""``fyan resume``: explain what resuming will do, then run."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.commands.run import add_unit_options, announce_ingest, check_model_endpoints, run_result, serve
from fyan.errors import ExitCode
from fyan.daemon import check_units
from fyan.orchestrator.resume import explain, plan
from fyan.project import Project


DESCRIPTION = """Explain what resuming will do (attempts interrupted and run again, stale units, a lock held by
another run), then run as `fyan run` does; --dry-run only explains."""


EXIT_CODES = {
    3: "incomplete: the run reached quiescence with blocked units",
    4: "bad input: configuration, project folder, cassette",
    5: "refused: another run holds the project lock",
    130: "interrupted by Ctrl-C (SIGINT); 143 stopped by SIGTERM: what was done is kept",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="project folder")
    p.add_argument("--dry-run", action="store_true", help="only explain; change nothing")
    add_unit_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")


class Payload(BaseModel):
    """``fyan resume --json``: the plan (what resuming does), then the run's summary (the keys of
    ``fyan run --json``) unless ``dry_run`` or another run holds the lock."""

    model_config = ConfigDict(extra="allow")
    plan: dict[str, Any]
    dry_run: bool | None = None


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    check_units(project, args.unit, args.dir)  # an unknown id is refused before anything is explained
    p = plan(project, args.parallelism)
    text = explain(p)
    if args.dry_run or p.get("locked_by"):
        code = ExitCode.STATE if p.get("locked_by") else ExitCode.OK
        return CommandResult(code, {"plan": p, "dry_run": args.dry_run}, text)
    check_model_endpoints(project)
    if not args.json:
        print(text, flush=True)
    daemon, summary = serve(args, until_idle=True, progress_enabled=not args.json, announce=announce_ingest(args))
    result = run_result(args, daemon, summary)
    result.payload = {"plan": p, **result.payload}
    return result

